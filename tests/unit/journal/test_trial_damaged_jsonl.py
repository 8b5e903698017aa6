"""A JSONL record whose lines are JSON events but whose values are of the wrong kind (a hand-edited file, another
tool's output, a record damaged on disk) is a typed error naming the run, never a ``TypeError`` from deep in a
constructor.

``replay`` / ``fork`` / ``read_run`` raise :class:`~agentactors.journal.JournalFormatError` (a ``ValueError``)
naming the run and the file, as ``load_run`` does for a journal's damaged row; ``python -m agentactors replay |
fork | explain`` say it in one line with exit status 1, never a traceback.  Each case here was a ``TypeError``
(or ``AttributeError``) escaping with a traceback.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentactors import fork, replay
from agentactors.__main__ import main
from agentactors.journal import JournalFormatError
from agentactors.journal.jsonl import read_run

from .conftest import Ledger, record

pytestmark = pytest.mark.anyio

Edit = Callable[[dict[str, Any]], None]


def _set(*path: str | int, to: Any) -> Edit:
    def edit(event: dict[str, Any]) -> None:
        target: Any = event
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = to
    return edit


#: (the event it damages: its type and which of that type, from 0; the damage)
DAMAGED: dict[str, tuple[str, int, Edit]] = {
    "input message's role": ("llm.request", 0, _set("request", "messages", 0, "role", to=None)),
    "input message's content": ("llm.request", 0, _set("request", "messages", 1, "content", to=5)),
    "input message not an object": ("llm.request", 0, _set("request", "messages", 1, to=None)),
    "request's messages not a list": ("llm.request", 0, _set("request", "messages", to=5)),
    "response's content": ("llm.response", 0, _set("response", "content", to=5)),
    "response's tool calls": ("llm.response", 0, _set("response", "tool_calls", to="x")),
    "tool call's id": ("llm.response", 0, _set("response", "tool_calls", 0, "id", to=None)),
    "tool call's arguments": ("llm.response", 0, _set("response", "tool_calls", 0, "arguments", to=5)),
    "tool result's status": ("tools.finished", 0, _set("status", to="exploded")),
    "run's agent name": ("run.started", 0, _set("agent", to=5)),
    "run's answer": ("run.finished", 0, _set("content", to=5)),
}


def _damaged(path: Path, kind: str, which: int, edit: Edit) -> None:
    lines = path.read_text().splitlines()
    seen = 0
    for i, line in enumerate(lines):
        event = json.loads(line)
        if event.get("type") != kind:
            continue
        if seen == which:
            edit(event)
            lines[i] = json.dumps(event)
            break
        seen += 1
    else:
        raise AssertionError(f"no {kind} #{which} in {path}")
    path.write_text("\n".join(lines) + "\n")


@pytest.fixture
def recorded(tmp_path: Path) -> tuple[Path, str]:
    rec = anyio.run(record, tmp_path / "events.jsonl", Ledger())
    return rec.path, rec.result.run_id or ""


@pytest.mark.parametrize("case", sorted(DAMAGED))
async def test_a_damaged_record_is_a_journal_format_error_naming_the_run(
    recorded: tuple[Path, str], case: str
) -> None:
    path, run_id = recorded
    _damaged(path, *DAMAGED[case])
    with pytest.raises(JournalFormatError) as raised:
        read_run(path, run_id)
    assert repr(run_id) in str(raised.value) and str(path) in str(raised.value), raised.value
    with pytest.raises(JournalFormatError):
        await replay(str(path), run_id)
    with pytest.raises(JournalFormatError):
        await fork(str(path), run_id, 2, agent=None)


def _forkagent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A script that never runs out: the module is imported once per process, its agent shared by every fork here
    # (a list of one answer was used up by the first, and each later fork failed unseen while the CLI exited 0).
    (tmp_path / "trialforkagent.py").write_text(
        "from agentactors import Agent\n"
        "from agentactors.providers.scripted import ScriptedProvider\n"
        "agent = Agent(ScriptedProvider(lambda request: 'A different ending.'), name='shop')\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))


@pytest.mark.parametrize(("case", "damage"), [
    *((case, DAMAGED[case]) for case in sorted(DAMAGED)),
    # read_jsonl's own checks: a header field of a kind that cannot be looked up (a list)
    ("an event's time is a list", ("run.started", 0, _set("time", to=[]))),
    ("an event's run id is a list", ("run.finished", 0, _set("run_id", to=[]))),
    # what explain_fork reads of the original's requests
    ("a later request's tools", ("llm.request", 2, _set("request", "tools", to=5))),
])
@pytest.mark.parametrize("command", ["replay", "fork", "explain"])
def test_the_commands_say_a_damaged_record_in_one_line_with_exit_1(
    recorded: tuple[Path, str], case: str, damage: tuple[str, int, Edit], command: str, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    path, run_id = recorded
    _forkagent(tmp_path, monkeypatch)
    _damaged(path, *damage)
    argv = [command, str(path), run_id]
    if command == "fork":
        argv += ["--at", "2", "--agent", "trialforkagent:agent"]
    code = main(argv)  # a traceback here is the bug
    out, err = capsys.readouterr()
    if code == 0:  # damage the command does not read (explain shows a record as it is): nothing to refuse
        return
    assert code == 1 and err.count("\n") == 1 and err.startswith(f"cannot {command} run {run_id!r}"), (out, err)
