"""Command line: ``python -m agentactors demo | exchange | fakevendor | explain | replay | fork | serve``.

``demo`` is what ``make demo`` runs: offline, no API key, against the built-in
fake vendor on 127.0.0.1.  ``exchange`` is the smallest possible look at the
library: one completed and one streamed request to a ScriptedProvider, and the
events they recorded.  ``fakevendor`` serves the vendor wires on loopback: OpenAI Chat Completions,
OpenAI Responses, Anthropic Messages, Gemini, Bedrock Converse, and the Azure OpenAI and Vertex AI routes.
``explain FILE RUN_ID`` prints the explanation of one run of a JSONL event record
(:meth:`agentactors.explain.Explanation.from_jsonl`).  ``replay FILE RUN_ID`` runs a recorded run again
from a JSONL record, a SQLite journal or a PostgreSQL journal (FILE a ``postgresql://`` URL) with no vendor and
no tool call; ``fork FILE RUN_ID --at STEP --agent module:attr`` reuses its steps before STEP and runs the rest
live with that agent, then shows the fork beside its original (:mod:`agentactors.journal`,
:mod:`agentactors.journal.compare`).  ``serve MODULE:ATTR`` serves one agent (or what a function of no arguments
returns) as the OpenAI API, an MCP server and an AG-UI endpoint on one port, its URLs the first stdout lines
(:mod:`agentactors.serve`, docs/serve.md, "Serving from the command line").

What a command says on stderr passes through :func:`~agentactors.redaction.redact`, and a DSN's passwords are
masked wherever it is shown (:func:`agentactors._postgres.safe_dsn`) or quoted (:func:`agentactors._postgres.scrub`).
"""

from __future__ import annotations

import argparse
import io
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

import anyio

from .events import EventSink, InMemoryRecorder, emit, use_sink
from .messages import LLMRequest, Message, TextDelta, ToolCall, ToolSpec
from .providers.scripted import ScriptedProvider

__all__ = ["main"]


async def scripted_exchange(file: TextIO | None = None) -> InMemoryRecorder:
    """One completed and one streamed request to a :class:`ScriptedProvider`, with their events printed."""
    out = file or sys.stdout

    def write(text: str, end: str = "\n") -> None:
        print(text, end=end, file=out, flush=True)
    weather = ToolSpec(
        "get_weather",
        "Current weather for a city.",
        {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    )
    provider = ScriptedProvider(
        [
            [ToolCall("call_1", "get_weather", {"city": "Lisbon"})],
            "It is 21 °C and sunny in Lisbon — a fine afternoon for a walk along the river.",
        ],
        name="scripted",
        model="demo-model",
    )
    recorder = InMemoryRecorder()
    with use_sink(EventSink([recorder], run_id="exchange-1")):
        request = LLMRequest([Message.user("What's the weather in Lisbon?")], tools=[weather])
        emit("llm.request", request=request)
        response = await provider.complete(request)
        emit("llm.response", response=response)
        call = response.tool_calls[0]
        write(f"complete(): {response.stop_reason.value}, tool call {call.name}({call.arguments})")
        followup = LLMRequest(
            [*request.messages, response.to_message(), Message.tool(call.id, "21 °C, sunny", name=call.name)],
            tools=[weather],
        )
        emit("llm.request", request=followup)
        write("stream():   ", end="")
        async with provider.stream(followup) as events:
            async for event in events:
                if isinstance(event, TextDelta):
                    write(event.text, end="")
                    emit("llm.text_delta", text=event.text)
        write("")
    write(f"\n{len(recorder.events)} events recorded:")
    for e in recorder.events:
        keys = ", ".join(sorted(e.data))
        write(f"  #{e.seq:<3} {e.type:<16} run={e.run_id} [{keys}]")
    return recorder


#: What ``--help`` shows: the module docstring is written for Sphinx, its markup unreadable in a terminal.
_DESCRIPTION = (
    "demo: what `make demo` runs, offline against the built-in fake vendor on 127.0.0.1 (no API key). "
    "exchange: one completed and one streamed request to a scripted provider, and the events they recorded. "
    "fakevendor: serve every vendor wire and endpoint on loopback. "
    "explain FILE RUN_ID: explain one run of a JSONL event record. "
    "replay FILE RUN_ID: run a recorded run again, with no vendor and no tool call. "
    "fork FILE RUN_ID --at STEP --agent module:attr: reuse a recorded run's steps before STEP, run the rest "
    "live with that agent, and show the fork beside its original. "
    "serve MODULE:ATTR: serve one agent as the OpenAI API, an MCP server and an AG-UI endpoint on one port. "
    "For replay and fork, FILE is a JSONL record, a SQLite journal, or a PostgreSQL journal's URL "
    "(postgresql://user:password@host/db or postgres://...; needs the [postgres] extra; its password is never shown)."
)

#: What FILE may be besides a path: a PostgreSQL journal's URL.  Only the URL forms: a libpq ``key=value`` string
#: cannot be told from a file's name (``host=db`` is one), so it is read as a path (write it as a URL).
_DSN_SCHEMES = ("postgresql://", "postgres://")

#: FILE's help, for replay and fork.
_FILE_HELP = (
    "a JsonlRecorder's file, a SqliteJournal's database, or a PostgresJournal's URL "
    "(postgresql://user:password@host:5432/db; the [postgres] extra)"
)


def _is_dsn(file: str) -> bool:
    """Whether FILE names a PostgreSQL journal (:data:`_DSN_SCHEMES`) rather than a file."""
    return file.startswith(_DSN_SCHEMES)


def _shown(file: str) -> str:
    """FILE as a line may show it: a DSN with its passwords masked (``password=***``; ``<dsn>`` when psycopg is not
    there to parse it), a path as it is (redacted with the rest of the line)."""
    if not _is_dsn(file):
        return file
    from ._postgres import safe_dsn

    return safe_dsn(file)


def _say(text: str, file: str) -> None:
    """One line on stderr, ``text`` redacted: credential shapes (a URL's ``user:password@``), registered secrets, and
    FILE's own passwords when it is a DSN (what a driver's or the OS's message may quote, however short).  A message
    of several lines (libpq's: ``Connection refused``, then ``Is the server running...`` on a line of its own)
    is joined into one."""
    import re

    from .redaction import redact

    if _is_dsn(file):
        from ._postgres import scrub

        text = scrub(text, file)
    print(re.sub(r"\s*\n\s*", " ", redact(text).strip()), file=sys.stderr)



def _agents(text: str) -> int:
    """``demo --agents``: a whole number from 1 to :data:`agentactors._demo.MAX_AGENTS`, else argparse's usage
    error (exit status 2) before anything is built."""
    from ._demo import MAX_AGENTS

    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid int value: {text!r}") from None
    if not 1 <= value <= MAX_AGENTS:
        raise argparse.ArgumentTypeError(f"must be between 1 and {MAX_AGENTS:,}, not {text}")
    return value


def _fault_rate(text: str) -> float:
    """``demo --fault-rate``: a share within [0, 1] (NaN is not one), else argparse's usage error (exit status 2)
    before anything is built — as ``--agents`` is checked."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid float value: {text!r}") from None
    if not 0.0 <= value <= 1.0:  # (False for NaN too)
        raise argparse.ArgumentTypeError(f"must be within [0, 1], not {text}")
    return value


def _prog() -> str:
    """The command's name in usage lines: the installed script's, else how the module is run."""
    return "agentactors" if sys.argv and Path(sys.argv[0]).stem == "agentactors" else "python -m agentactors"


def _parsers() -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    """The command line's parser and its subparsers by command (whose usage a command's usage errors show)."""
    from ._demo import MAX_AGENTS  # the package's __init__ alone: the demo itself is imported when it runs

    parser = argparse.ArgumentParser(prog=_prog(), description=_DESCRIPTION)
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser(
        "demo", help="1,000 agents through a resilient chain over six endpoints, with injected faults, offline",
        description="1,000 agents through one ProviderActor and a resilient chain over six endpoints (five "
                    "without the [bedrock] extra), against a fake vendor on 127.0.0.1 with injected faults and "
                    "outages; a summary, one run explained, and every event written as JSONL.",
    )
    demo.add_argument("--agents", type=_agents, default=None,
                      help=f"default 1000 (3 with --live, 200 with --batch); from 1 to {MAX_AGENTS:,}")
    demo.add_argument("--fault-rate", type=_fault_rate, default=None,
                      help="share of the primary's requests failed, within [0, 1]; default 0.15 (0 with --live)")
    demo.add_argument("--seed", type=int, default=7, help="the tasks and the faults; default 7")
    demo.add_argument("--record", default=None,
                      help="where to write the JSONL event record (replaced if it exists); default "
                           "demo-events.jsonl, in the current directory")
    demo.add_argument("--live", action="store_true", help="talk to the real vendors (needs API keys)")
    demo.add_argument("--batch", action="store_true",
                      help="the same job live and through BatchProvider (a vendor batch API), and what each cost")
    demo.add_argument("--backend", choices=("asyncio", "trio"), default="asyncio",
                      help="the event loop; default asyncio")
    demo.add_argument("--no-progress", action="store_true",
                      help="no live progress: plain lines, then the summary (the default when not on a terminal "
                           "shows a progress line a second)")
    sub.add_parser("exchange", help="one completed and one streamed ScriptedProvider request, with events",
                   description="One completed and one streamed request to a ScriptedProvider (no vendor, no "
                               "network), and the events they recorded: the smallest look at the library.")
    fv = sub.add_parser("fakevendor", help="serve every vendor wire and endpoint on loopback")
    try:
        from .testing.fakevendor import add_arguments
    except ImportError:  # without the [testing] extra: running the command says what to install
        pass
    else:
        add_arguments(fv)
    ex = sub.add_parser("explain", help="explain one run of a JSONL event record (e.g. demo-events.jsonl)")
    ex.add_argument("file", help="a JsonlRecorder's file (a journal holds no events)")
    ex.add_argument("run_id", help="the run to explain (RunResult.run_id; every event carries it)")
    rp = sub.add_parser("replay", help="run a recorded run again: no vendor call, no tool call")
    rp.add_argument("file", help=_FILE_HELP)
    rp.add_argument("run_id", help="the recorded run")
    fk = sub.add_parser("fork", help="run a recorded run again up to a step, then live with an agent")
    fk.add_argument("file", help=_FILE_HELP)
    fk.add_argument("run_id", help="the recorded run")
    fk.add_argument("--at", type=int, required=True, dest="at_step", help="the first step run live (from 1)")
    fk.add_argument("--agent", required=True, help="the live agent, as module:attribute (an Agent)")
    fk.add_argument("--temperature", type=float, default=None, help="the live steps' temperature")
    sv = sub.add_parser("serve", help="serve an agent over HTTP: OpenAI API, MCP and AG-UI on one port")
    from .serve.cli import add_arguments as serve_arguments  # (the apps and servers load when it runs)

    serve_arguments(sv)
    return parser, {"fakevendor": fv, "replay": rp, "fork": fk, "serve": sv}


def _source(path: str) -> object:
    """A PostgreSQL journal when ``path`` is a ``postgresql://`` URL, a SQLite journal when it is a SQLite database,
    else the path itself (a JSONL record).

    :raises ValueError: ``path`` is a SQLite database without the journal's runs table (another program's).
        Opened as a journal, it would get the journal's tables written into it by a command that only reads.
    :raises ImportError: a DSN, and psycopg is not installed (naming the ``[postgres]`` extra).
    """
    if _is_dsn(path):
        from ._postgres import import_psycopg
        from .journal.postgres import PostgresJournal

        # Now, not at the first query: without the extra, one line naming it, before anything else is done.
        import_psycopg("python -m agentactors replay/fork with a postgresql:// URL")
        return PostgresJournal(path)
    from .journal import SqliteJournal

    try:
        with open(path, "rb") as file:
            head = file.read(16)
    except OSError:
        return path
    if head != b"SQLite format 3\x00":
        return path
    if not _holds_runs(path):
        raise ValueError(f"{path} is a SQLite database but no journal (it has no agentactors_runs table)")
    return SqliteJournal(path)


def _holds_runs(path: str) -> bool:
    """Whether the SQLite database at ``path`` has a journal's runs table, looked at read-only.  A database that
    cannot be looked at (locked, damaged) counts as one: the journal says what is wrong with it."""
    import sqlite3
    from pathlib import Path

    try:
        db = sqlite3.connect(f"{Path(path).resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error:
        return True
    try:
        found = db.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'agentactors_runs'"  # SqliteJournal's table
        ).fetchone()
    except sqlite3.Error:
        return True
    finally:
        db.close()
    return found is not None


def _load_agent(spec: str, *, option: str = "--agent", factory: bool = False) -> object:
    """``module:attribute`` imported (``package.module:name.attr`` works too).

    ``option`` names the argument in messages; with ``factory``, a callable that is not an Agent is returned
    as it is (``serve`` calls it in its event loop: a function that makes the agent).

    :raises ValueError: a usage mistake — ``spec`` malformed, no module or attribute of that name, not an
        Agent (nor callable, with ``factory``).  What the named module raises as it imports (a dependency of its
        own missing) propagates.
    """
    import importlib

    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute or module_name.startswith("."):
        raise ValueError(f"{option} takes module:attribute, not {spec!r}")
    # The working directory's modules, as `python -m agentactors` finds them (it puts the directory first on the
    # path): the installed `agentactors` script does not, and `--agent myagent:agent` next to myagent.py failed.
    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        value: object = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        # The named module (or a package on its way) is not there: the command line's mistake.  Another
        # name: the module is there, and it is what it imports that is missing.
        if exc.name is None or not (module_name == exc.name or module_name.startswith(exc.name + ".")):
            raise
        raise ValueError(f"{option} {spec}: no module named {exc.name!r}") from None
    owner = module_name
    for part in attribute.split("."):
        try:
            value = getattr(value, part)
        except AttributeError:
            raise ValueError(f"{option} {spec}: {owner} has no attribute {part!r}") from None
        owner = f"{owner}.{part}"
    from .agent import Agent

    if factory and callable(value) and not isinstance(value, Agent):
        return value
    if not isinstance(value, Agent):
        also = " or a function returning one" if factory else ""
        raise ValueError(f"{option} {spec} is a {type(value).__name__}, not an Agent{also}")
    return value


def _rerun(args: argparse.Namespace, usage: argparse.ArgumentParser) -> int:
    """``replay`` / ``fork``: the run again, then what it came to.

    A usage mistake (an ``--agent`` that names no Agent, ``--at`` outside the run's steps, a ``--temperature``
    out of range) is argparse's error through ``usage``, the command's subparser: its usage line, exit status
    2.  A run that cannot be read or run again (no such file or run, a damaged record, a replay that diverges)
    is one line on stderr, exit status 1.
    """
    from .errors import AgentActorsError
    from .journal import StepOutOfRangeError, fork, replay
    from .journal.compare import explain_fork
    from .settings import ModelSettings

    agent: object = None
    settings: ModelSettings | None = None
    where = _shown(args.file)
    if args.command == "fork":
        # Before the source is opened: a mistyped --agent or --temperature is said at once, whatever FILE holds.
        try:
            settings = ModelSettings(temperature=args.temperature) if args.temperature is not None else None
        except ValueError as exc:
            usage.error(f"argument --temperature: {exc}")
        try:
            agent = _load_agent(args.agent)
        except ValueError as exc:
            usage.error(str(exc))
        except ImportError as exc:  # the named module's own import failed
            _say(f"cannot fork run {args.run_id!r} from {where}: {exc}", args.file)
            return 1
    try:
        source: object = _source(args.file)
    except (ValueError, ImportError) as exc:
        _say(f"cannot {args.command} run {args.run_id!r} from {where}: {exc}", args.file)
        return 1
    compared: list[object] = []

    async def go() -> object:
        try:
            if args.command == "replay":
                return await replay(source, args.run_id)  # type: ignore[arg-type]
            events = InMemoryRecorder()
            result = await fork(
                source, args.run_id, args.at_step, agent=agent, settings=settings, recorders=[events],  # type: ignore[arg-type]
            )
            compared.append(await explain_fork(result, source, events=events.events))
            return result
        finally:
            close = getattr(source, "aclose", None)
            if close is not None:
                await close()

    try:
        result = anyio.run(go)
    except StepOutOfRangeError as exc:
        usage.error(f"argument --at: {exc}")
    except (OSError, ValueError, LookupError, ImportError, AttributeError, AgentActorsError) as exc:
        _say(f"cannot {args.command} run {args.run_id!r} from {where}: {exc}", args.file)
        return 1
    done = "replayed" if args.command == "replay" else f"forked at step {args.at_step}"
    steps = getattr(result, "steps", 0)
    print(f"run {args.run_id} {done}: run {getattr(result, 'run_id', None)}, {steps} step(s)")
    print(getattr(result, "content", ""))
    for comparison in compared:
        print(comparison)
    return _ended(args.command, result)


def _ended(command: str, result: object) -> int:
    """The exit status of a replay or fork that ran to its result, saying on stderr how a run that failed ended.

    A fork whose live steps failed (its vendor down, a key refused) or were cut short ended as that run ended,
    with its error in ``RunResult.error`` (a run's failure is returned, not raised): said in one line, exit 1 —
    it printed an empty answer and exited 0.  A replay ends as the recorded run ended: a recording of a failed
    run replays to the same failure, which is said too, but the replay did what it was asked (exit 0).
    """
    from .redaction import redact

    error = getattr(result, "error", None)
    if getattr(result, "cancelled", False):
        how = "was cancelled"
    elif error is not None:
        how = f"failed: {type(error).__name__}: {redact(str(error))}"
    else:
        return 0
    if command == "replay":
        print(f"the replayed run {how} (as the recorded run did)", file=sys.stderr)
        return 0
    print(f"the forked run {how}", file=sys.stderr)
    return 1


def _explain(path: str, run_id: str) -> int:
    from .explain import Explanation

    if _is_dsn(path):  # (a SQLite journal is told by Explanation.from_jsonl, which reads its header)
        _say(f"cannot explain run {run_id!r} from {_shown(path)}: a PostgreSQL journal holds no events; explain "
             "reads a JSONL record (JsonlRecorder's file) — replay reads a journal", path)
        return 1
    try:
        explanation = Explanation.from_jsonl(path, run_id)
    except (OSError, LookupError, ValueError) as exc:
        _say(f"cannot explain run {run_id!r} from {path}: {exc}", path)
        return 1
    print(explanation)
    return 0


def _holds(exc: BaseException, kind: type[BaseException]) -> bool:
    """Whether ``exc`` is a ``kind`` or an exception group holding one (trio raises Ctrl-C in a task's group;
    a closed stdout's ``BrokenPipeError`` comes out of the demo's task group)."""
    if isinstance(exc, BaseExceptionGroup):
        return exc.subgroup(kind) is not None
    return isinstance(exc, kind)


def _quiet_stdout() -> None:
    """Point stdout at the null device: the interpreter's flush at exit would meet the closed pipe again."""
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)
    except (OSError, ValueError, io.UnsupportedOperation):  # not a real file (a test's capture): nothing to do
        pass


def main(argv: Sequence[str] | None = None) -> int:
    """The command line; returns the exit code (2: a usage error, 1: a failure, 130: interrupted)."""
    parser, commands = _parsers()
    args = parser.parse_args(argv)
    # The output has "—", "≤", "✓": on a stdout that cannot encode them (PYTHONIOENCODING=ascii, a legacy
    # console) each becomes "?" rather than a UnicodeEncodeError ending the command.
    if isinstance(sys.stdout, io.TextIOWrapper):
        sys.stdout.reconfigure(errors="replace")
    try:
        return _run(args, commands)
    except BaseException as exc:
        if _holds(exc, KeyboardInterrupt):
            # Ctrl-C outside a command's own handling (while a module imports, while a summary prints):
            # the same end as within it, without a traceback.
            print(f"{args.command}: interrupted", file=sys.stderr, flush=True)
            return 130
        if not _holds(exc, BrokenPipeError):
            raise
        # The reader left (``python -m agentactors demo | head``): the runs and the vendor were stopped on
        # the way here; nothing more to say, and nowhere to say it.
        _quiet_stdout()
        return 1


def _run(args: argparse.Namespace, commands: dict[str, argparse.ArgumentParser]) -> int:
    if args.command == "exchange":
        anyio.run(scripted_exchange)
        return 0
    if args.command == "demo":
        from ._demo.main import run_demo

        return run_demo(args)
    if args.command == "explain":
        return _explain(args.file, args.run_id)
    if args.command in ("replay", "fork"):
        return _rerun(args, commands[args.command])
    if args.command == "fakevendor":
        from .testing.fakevendor import run

        return run(args, commands["fakevendor"])
    if args.command == "serve":
        from .serve.cli import run as serve

        return serve(args, commands["serve"], lambda spec: _load_agent(spec, option="serve", factory=True))
    return 2  # pragma: no cover - argparse rejects unknown commands


if __name__ == "__main__":
    sys.exit(main())
