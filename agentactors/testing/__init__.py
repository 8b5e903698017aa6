"""Testing support: virtual time on asyncio, and (with the ``testing`` extra) the FakeVendor server."""

from __future__ import annotations

from .virtual_time import VirtualTimeLoop, virtual_backends

__all__ = ["VirtualTimeLoop", "virtual_backends"]
