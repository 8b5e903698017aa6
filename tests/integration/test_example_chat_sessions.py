"""examples/chat_sessions.py runs, on both backends, and does what it says (and as a script)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests.support.paths import EXAMPLES

pytestmark = pytest.mark.anyio

EXAMPLE = EXAMPLES / "chat_sessions.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("examples_chat_sessions", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


async def test_chat_sessions(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = await _load().main(tmp_path / "chat.db")
    said = dict(enumerate(out["said"]))
    assert said[5] == ("support", "You are Alice.")  # the history was the session's
    assert said[7] == ("support", "(needs approval: issue_refund{'order': '42', 'amount': 30.0})")
    assert said[9] == ("support", "(waiting for a supervisor on ['refund-42'])")
    assert said[11] == ("support", "Done: refund of 30.00 EUR for order 42 issued.")  # in the new runtime
    assert said[13][1].startswith("(refused: session 'user:alice' has no pause to resolve")
    assert said[15] == ("support", "You are Bob.")
    assert out["refunds"] == [("42", 30.0)]  # approved twice, ran once
    assert [role for role, _ in out["alice_history"]] == ["user", "assistant"] * 3 + ["tool", "assistant"]
    assert out["alice_version"] == 5  # two turns, the paused one, its claim, the resumed one
    assert out["events"][:2] == ["session.activated user:alice", "session.committed user:alice"]
    assert out["events"][-2:] == ["session.deactivated user:alice", "session.deactivated user:bob"]
    assert (tmp_path / "chat.db").exists()
    assert "refunds issued: [('42', 30.0)]" in capsys.readouterr().out


def test_chat_sessions_runs_as_a_script() -> None:
    done = subprocess.run(
        [sys.executable, "-W", "error::ResourceWarning", str(EXAMPLE)],
        capture_output=True, text=True, timeout=60, check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Done: refund of 30.00 EUR for order 42 issued." in done.stdout
