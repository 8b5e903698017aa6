"""Every async test runs on asyncio and trio.

Mark a test (or module) with ``@pytest.mark.virtual_time`` to run it on virtual,
autojumping clocks instead: trio's ``MockClock(autojump_threshold=0)`` and
:class:`agentactors.testing.VirtualTimeLoop` on asyncio.  Only where no real I/O
happens (no sockets, no worker threads).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio.testing

from agentactors.testing import VirtualTimeLoop
from tests.support.paths import CORPUS


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "virtual_time: run on virtual autojumping clocks on both backends")


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> Any:
    if request.node.get_closest_marker("virtual_time") is not None:
        if request.param == "trio":
            return ("trio", {"clock": trio.testing.MockClock(autojump_threshold=0)})
        return ("asyncio", {"loop_factory": VirtualTimeLoop})
    return request.param


@pytest.fixture
def corpus_dir() -> Path:
    if not CORPUS.is_dir():
        pytest.fail(f"the vendor corpus is missing at {CORPUS}")
    return CORPUS
