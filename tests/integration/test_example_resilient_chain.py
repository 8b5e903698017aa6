"""examples/resilient_chain.py runs and shows the recommended stack doing its job."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from types import ModuleType

import pytest

from tests.support.paths import EXAMPLES

EXAMPLE = EXAMPLES / "resilient_chain.py"


def load_example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("resilient_chain_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.anyio
@pytest.mark.virtual_time
async def test_the_example_fails_over_then_skips_the_open_primary(capsys: pytest.CaptureFixture[str]) -> None:
    lines = await load_example().main()
    first, second, third, stream, events = lines
    assert first.startswith("first question: served by secondary-vendor (other-model); primary called 3x")
    assert first.endswith("its breaker is closed")
    assert "primary called 3x, its breaker is open" in second
    assert "primary called 0x, its breaker is open" in third
    assert stream == "stream: the secondary answers 'a streamed question'"
    assert "retry.exhausted x2" in events and "fallback.moved x4" in events
    assert capsys.readouterr().out.splitlines() == lines


def test_the_example_runs_as_a_script() -> None:
    done = subprocess.run([sys.executable, str(EXAMPLE)], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert "third question: served by secondary-vendor" in done.stdout
