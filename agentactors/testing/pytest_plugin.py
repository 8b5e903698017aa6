"""pytest plugin: the ``fake_vendor`` fixture, a started :class:`~agentactors.testing.FakeVendor` per test.

Registered as a ``pytest11`` entry point, so any project that installs
agentactors (the core install: the FakeVendor needs no extra) and runs pytest gets
the fixture.  It is a plain (synchronous) fixture:
the server runs in its own thread, so the same fixture serves sync tests and
async tests on asyncio or trio alike.  Each test gets a fresh server (a fresh
record and script); it is stopped when the test ends, pending answers included.

Tests that need other settings build their own: ``async with FakeVendor(latency=0.05) as fv``.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .fakevendor import FakeVendor

__all__ = ["fake_vendor"]


@pytest.fixture
def fake_vendor() -> Iterator[FakeVendor]:
    """A started FakeVendor on 127.0.0.1 (ephemeral port), stopped after the test."""
    vendor = FakeVendor()
    vendor.start()
    try:
        yield vendor
    finally:
        vendor.stop()
