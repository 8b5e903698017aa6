"""Providers: the port (:mod:`.base`), the vendor wires and the scripted test double."""
