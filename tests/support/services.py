"""Serving an example app on 127.0.0.1 inside a test, on the test's own backend, and a browser to point at it."""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from types import ModuleType
from typing import Any

import anyio
import httpx
import pytest

from tests.support.paths import EXAMPLES

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

    Ready once ``probe`` answers (any status).
    """
    port = module.free_port()
    stop = anyio.Event()
    base = f"http://127.0.0.1:{port}"
    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: module.serve(app, port, stop=stop))
        async with httpx.AsyncClient() as client:
            with anyio.fail_after(10):
                while True:
                    try:
                        await client.get(base + probe, timeout=1)
                        break
                    except httpx.TransportError:
                        await anyio.sleep(0.02)
        try:
            yield base
        finally:
            stop.set()


def chromium_or_skip() -> str:
    """The browser's path; a missing one skips with the install command — and fails under ``CI=true``."""
    path = CHROMIUM if os.path.exists(CHROMIUM) else shutil.which("chromium")
    if path is None:
        message = f"the browser test needs Debian's chromium at {CHROMIUM}: {CHROMIUM_INSTALL}"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return path
