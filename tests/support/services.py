"""Serving an example app on 127.0.0.1 inside a test, on the test's own backend, and a browser to point at it."""

from __future__ import annotations

import errno
import gc
import importlib.util
import os
import shutil
import sys
import traceback
import warnings
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from types import ModuleType
from typing import Any

import anyio
import httpx

from tests.support.paths import EXAMPLES
from tests.support.required import missing

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_INSTALL = "apt-get update && apt-get install -y chromium"
CHROMIUM_ARGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-quic",
    "--disable-sync",
)


def load_example(name: str) -> ModuleType:
    path = EXAMPLES / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"examples_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@asynccontextmanager
async def serving(app: Any, module: ModuleType, *, probe: str = "/") -> AsyncIterator[str]:
    """Serve ``app`` with the example's own ``serve`` until the block ends; yields its base URL.

    Ready once ``probe`` answers (any status).  The example picks a free port and binds it a moment later; another
    process (a parallel worker's server) may take it in between — then the server fails to start with "address
    already in use", before anything was yielded, and it is started again on another port (three tries).
    """
    for attempt in range(3):
        port = module.free_port()
        stop = anyio.Event()
        base = f"http://127.0.0.1:{port}"
        yielded = False
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(partial(module.serve, app, port, stop=stop))
                async with httpx.AsyncClient() as client:
                    with anyio.fail_after(10):
                        while True:
                            try:
                                await client.get(base + probe, timeout=1)
                                break
                            except httpx.TransportError:
                                await anyio.sleep(0.02)
                try:
                    yielded = True
                    yield base
                finally:
                    stop.set()
            return
        except BaseExceptionGroup as group:
            if yielded or attempt == 2 or not _address_in_use(group):
                raise
            _collect_quietly(group)


def _address_in_use(group: BaseExceptionGroup[BaseException]) -> bool:
    """Whether the only failures in ``group`` are the server's bind finding its port taken (EADDRINUSE)."""
    found, rest = group.split(lambda exc: isinstance(exc, OSError) and exc.errno == errno.EADDRINUSE)
    return found is not None and rest is None


def _collect_quietly(group: BaseExceptionGroup[BaseException]) -> None:
    """Free the socket the failed bind left open (hypercorn does not close it; the failure's frames hold it) now,
    without its ResourceWarning — else it surfaces when those frames go, in whatever runs then."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        for exc in _leaves(group):
            traceback.clear_frames(exc.__traceback__)
        traceback.clear_frames(group.__traceback__)
        gc.collect()


def _leaves(group: BaseExceptionGroup[BaseException]) -> list[BaseException]:
    out: list[BaseException] = []
    for exc in group.exceptions:
        out.extend(_leaves(exc) if isinstance(exc, BaseExceptionGroup) else [exc])
    return out


def chromium_or_skip() -> str:
    """The browser's path; a missing one skips with the install command — and fails under ``CI=true``."""
    path = CHROMIUM if os.path.exists(CHROMIUM) else shutil.which("chromium")
    if path is None:
        missing(f"the browser test needs Debian's chromium at {CHROMIUM}: {CHROMIUM_INSTALL}")
    return path
