"""How long the event loop was held at once while something ran beside :meth:`LoopLag.watch` (real clock)."""

from __future__ import annotations

import time

import anyio

__all__ = ["LoopLag"]


class LoopLag:
    """Start :meth:`watch` in a task group beside the work; :attr:`worst` is the longest the loop was held."""

    def __init__(self, every: float = 0.01) -> None:
        self.every = every
        self.worst = 0.0  # seconds past ``every`` that one tick of watch() took, at the most

    async def watch(self) -> None:
        """Tick every ``every`` seconds until cancelled, keeping the worst lateness in :attr:`worst`."""
        while True:
            before = time.monotonic()
            await anyio.sleep(self.every)
            self.worst = max(self.worst, time.monotonic() - before - self.every)
