"""``python -m agentactors replay FILE RUN_ID`` and ``fork FILE RUN_ID --at STEP --agent module:attr``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from agentactors.__main__ import main

from .conftest import Ledger, record


@pytest.fixture
def recorded(tmp_path: Path) -> tuple[Path, str]:
    rec = anyio.run(record, tmp_path / "events.jsonl", Ledger())
    return rec.path, rec.result.run_id or ""


def test_replay_prints_the_replayed_answer(recorded: tuple[Path, str]) -> None:
    path, run_id = recorded
    out = subprocess.run(
        [sys.executable, "-m", "agentactors", "replay", str(path), run_id], capture_output=True, text=True, check=False
    )
    assert out.returncode == 0, out.stderr
    assert f"run {run_id} replayed" in out.stdout and "3 step(s)" in out.stdout
    assert "Charged 250 for sunny Lisbon." in out.stdout


def test_fork_runs_the_rest_with_the_named_agent(
    recorded: tuple[Path, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path, run_id = recorded
    (tmp_path / "forkagent.py").write_text(
        "from agentactors import Agent\n"
        "from agentactors.providers.scripted import ScriptedProvider\n"
        "agent = Agent(ScriptedProvider(['A different ending.']), name='shop')\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    assert main(["fork", str(path), run_id, "--at", "3", "--agent", "forkagent:agent", "--temperature", "0.2"]) == 0
    out = capsys.readouterr().out
    assert f"run {run_id} forked at step 3" in out and "A different ending." in out
    # then the fork beside its original: what changed, step by step, which answer differs
    assert f"of run {run_id} (live from step 3)" in out and "temperature: (default) → 0.2" in out
    assert "step 2 (reused): charge" in out and "original: Charged 250 for sunny Lisbon." in out


def test_errors_are_one_line_and_exit_1(recorded: tuple[Path, str], capsys: pytest.CaptureFixture[str]) -> None:
    path, run_id = recorded
    assert main(["replay", str(path), "no-such-run"]) == 1
    assert "cannot replay run 'no-such-run'" in capsys.readouterr().err
    assert main(["fork", str(path), run_id, "--at", "7", "--agent", "forkagent:agent"]) == 1
    assert main(["fork", str(path), run_id, "--at", "2", "--agent", "nocolon"]) == 1
    assert "cannot fork" in capsys.readouterr().err


def test_an_agent_that_is_not_an_agent_is_named_as_such(
    recorded: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    # It said "'function' object has no attribute 'provider'": true, and no help to a user who mistyped.
    path, run_id = recorded
    assert main(["fork", str(path), run_id, "--at", "2", "--agent", "json:dumps"]) == 1
    err = capsys.readouterr().err
    assert "--agent json:dumps is a function, not an Agent" in err, err
