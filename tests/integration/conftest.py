"""The ``fake_vendor`` fixture for these tests (until the plugin is registered project-wide)."""

from agentactors.testing.pytest_plugin import fake_vendor  # noqa: F401
