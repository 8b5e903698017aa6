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
        "agent = Agent(ScriptedProvider(lambda request: 'A different ending.'), name='shop')\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    assert main(["fork", str(path), run_id, "--at", "3", "--agent", "forkagent:agent", "--temperature", "0.2"]) == 0
    out = capsys.readouterr().out
    assert f"run {run_id} forked at step 3" in out and "A different ending." in out
    # then the fork beside its original: what changed, step by step, which answer differs
    assert f"of run {run_id} (live from step 3)" in out and "temperature: (default) → 0.2" in out
    assert "step 2 (reused): charge" in out and "original: Charged 250 for sunny Lisbon." in out


def _forkagent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``forkagent:agent`` importable: an Agent answering "A different ending." (and ``brokenagent``, a module
    whose own import fails)."""
    (tmp_path / "forkagent.py").write_text(
        "from agentactors import Agent\n"
        "from agentactors.providers.scripted import ScriptedProvider\n"
        "agent = Agent(ScriptedProvider(lambda request: 'A different ending.'), name='shop')\n"
    )
    (tmp_path / "brokenagent.py").write_text("import no_such_dependency_of_brokenagent\nagent = None\n")
    monkeypatch.syspath_prepend(str(tmp_path))


def test_a_run_that_cannot_be_read_is_one_line_and_exit_1(
    recorded: tuple[Path, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Not a usage mistake: the arguments are well formed, the data does not hold what they name (as ``explain``)."""
    path, run_id = recorded
    _forkagent(tmp_path, monkeypatch)
    assert main(["replay", str(path), "no-such-run"]) == 1
    assert "cannot replay run 'no-such-run'" in capsys.readouterr().err
    assert main(["replay", str(tmp_path / "missing.jsonl"), run_id]) == 1
    assert main(["fork", str(path), "no-such-run", "--at", "2", "--agent", "forkagent:agent"]) == 1
    # the named module is there; what it imports is not: its failure, not the command line's
    assert main(["fork", str(path), run_id, "--at", "2", "--agent", "brokenagent:agent"]) == 1
    err = capsys.readouterr().err
    assert err.count("cannot ") == 3 and "usage:" not in err, err
    assert "no_such_dependency_of_brokenagent" in err


@pytest.mark.parametrize(("argv", "said"), [
    (["--at", "7", "--agent", "forkagent:agent"], "argument --at: "),
    (["--at", "0", "--agent", "forkagent:agent"], "argument --at: "),
    (["--at", "2", "--agent", "nocolon"], "--agent takes module:attribute, not 'nocolon'"),
    (["--at", "2", "--agent", ":agent"], "--agent takes module:attribute"),
    (["--at", "2", "--agent", "no_such_module_of_forks:agent"], "no module named 'no_such_module_of_forks'"),
    (["--at", "2", "--agent", "forkagent:nobody"], "forkagent has no attribute 'nobody'"),
    (["--at", "2", "--agent", "forkagent:agent", "--temperature", "5"], "argument --temperature: "),
])
def test_usage_mistakes_are_argparse_usage_errors_exit_2(
    recorded: tuple[Path, str], argv: list[str], said: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """They exited 1, like a run that failed; the rest of the command line says a usage mistake with 2."""
    path, run_id = recorded
    _forkagent(tmp_path, monkeypatch)
    with pytest.raises(SystemExit) as ended:
        main(["fork", str(path), run_id, *argv])
    assert ended.value.code == 2
    err = capsys.readouterr().err
    assert "usage: python -m agentactors fork" in err and "python -m agentactors fork: error: " in err, err
    assert said in err, err


def test_a_usage_mistake_is_exit_status_2_for_the_process(recorded: tuple[Path, str]) -> None:
    path, run_id = recorded
    out = subprocess.run(
        [sys.executable, "-m", "agentactors", "fork", str(path), run_id, "--at", "2", "--agent", "json:dumps"],
        capture_output=True, text=True, check=False,
    )
    assert out.returncode == 2, out.stderr
    assert "error: --agent json:dumps is a function, not an Agent" in out.stderr
    assert "Traceback" not in out.stderr


def test_an_agent_that_is_not_an_agent_is_named_as_such(
    recorded: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    # It said "'function' object has no attribute 'provider'": true, and no help to a user who mistyped.
    path, run_id = recorded
    with pytest.raises(SystemExit) as ended:
        main(["fork", str(path), run_id, "--at", "2", "--agent", "json:dumps"])
    assert ended.value.code == 2
    err = capsys.readouterr().err
    assert "--agent json:dumps is a function, not an Agent" in err, err


def test_the_installed_script_finds_an_agent_module_in_the_working_directory(
    recorded: tuple[Path, str], tmp_path: Path
) -> None:
    """``python -m`` puts the working directory on the path; the ``agentactors`` console script does not, and
    ``agentactors fork ... --agent myagent:agent`` beside myagent.py said "no module named 'myagent'"."""
    path, run_id = recorded
    script = Path(sys.executable).with_name("agentactors")
    assert script.exists(), f"the console script is installed with the package: {script}"
    work = tmp_path / "work"
    work.mkdir()
    (work / "myforkagent.py").write_text(
        "from agentactors import Agent, ScriptedProvider\n"
        "agent = Agent(ScriptedProvider(lambda request: 'A different ending.'), name='shop')\n"
    )
    out = subprocess.run(
        [str(script), "fork", str(path), run_id, "--at", "3", "--agent", "myforkagent:agent"],
        cwd=work, capture_output=True, text=True, check=False, timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert "A different ending." in out.stdout
    bad = subprocess.run(
        [str(script), "fork", str(path), run_id, "--at", "3", "--agent", "nocolon"],
        cwd=work, capture_output=True, text=True, check=False, timeout=120,
    )
    assert bad.returncode == 2 and "usage: agentactors fork" in bad.stderr, bad.stderr


def test_a_fork_whose_live_steps_fail_names_the_error_and_exits_1(
    recorded: tuple[Path, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """It printed an empty answer and exited 0: the run's failure is in RunResult.error, not raised."""
    path, run_id = recorded
    (tmp_path / "downagent.py").write_text(
        "from agentactors import Agent, ScriptedProvider\n"
        "from agentactors.errors import ErrorKind, ProviderError\n"
        "def down(request):\n"
        "    raise ProviderError('the vendor is down', kind=ErrorKind.transient, provider='scripted')\n"
        "agent = Agent(ScriptedProvider(down), name='shop')\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    assert main(["fork", str(path), run_id, "--at", "3", "--agent", "downagent:agent"]) == 1
    err = capsys.readouterr().err
    assert "the forked run failed: ProviderError" in err and "the vendor is down" in err, err
