"""Helpers shared by the test modules (imported as ``tests.support.<module>``, never off ``sys.path``)."""
