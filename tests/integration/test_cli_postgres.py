"""``python -m agentactors replay | fork`` from a PostgreSQL journal, and a DSN's password never on the terminal.

FILE was taken as a path whatever it held: ``replay "postgresql://app:PASSWORD@host/db" run-x`` printed
``cannot replay run 'run-x' from postgresql://app:PASSWORD@...: [Errno 2] No such file or directory:
'postgresql:/app:PASSWORD@…'`` (``Path`` folds the ``//``, so the redaction of a URL's user info did not see it), and
``replay(dsn, ...)`` raised the same.  Now a ``postgresql://`` / ``postgres://`` URL opens a ``PostgresJournal``
(the CLI) or is a ``TypeError`` saying to pass one (the API), and every line a command says is redacted, the DSN
shown with ``password=***``.  Against the suite's real server; real processes: the real clock.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentactors import Agent, PostgresJournal, Runtime, ToolCall, fork, replay, tool
from agentactors.providers.scripted import ScriptedProvider
from tests.support.mcp_helpers import free_port
from tests.support.no_extras import run_without
from tests.support.postgres import PASSWORD, PostgresServer, postgres_dsn, postgres_server  # noqa: F401

#: A password no test server has: what must never show.  Long enough to be registered for redaction (8+), and a
#: short one that is not (only the DSN's own scrub and the URL shape can mask it).
WRONG = "pg-s3cret-PW"
SHORT = "Zq7xK"


@tool
async def look(what: str) -> str:
    """Look at something."""
    return f"seen {what}"


async def _recorded(dsn: str) -> str:
    agent = Agent(ScriptedProvider([[ToolCall("l1", "look", {"what": "order"})], "Looked."]), tools=[look], name="eye")
    async with PostgresJournal(dsn) as journal, Runtime(journal=journal):
        result = await agent.run("look")
    return result.run_id or ""


def _cli(*argv: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """The command in a fresh interpreter: no password registered for redaction beforehand, as on a terminal."""
    return subprocess.run(
        [sys.executable, "-m", "agentactors", *argv], capture_output=True, text=True, check=False, timeout=120,
        cwd=cwd,
    )


def test_replay_and_fork_read_a_run_from_a_postgres_journal(
    postgres_dsn: str, tmp_path: Path,  # noqa: F811
) -> None:
    run_id = anyio.run(_recorded, postgres_dsn)
    assert PASSWORD in postgres_dsn
    out = _cli("replay", postgres_dsn, run_id)
    assert out.returncode == 0, out.stderr
    assert f"run {run_id} replayed" in out.stdout and "2 step(s)" in out.stdout and "Looked." in out.stdout
    assert PASSWORD not in out.stdout + out.stderr
    postgres = _cli("replay", postgres_dsn.replace("postgresql://", "postgres://", 1), run_id)  # libpq's other scheme
    assert postgres.returncode == 0 and "Looked." in postgres.stdout, postgres.stderr
    (tmp_path / "lookagain.py").write_text(
        "from agentactors import Agent\n"
        "from agentactors.providers.scripted import ScriptedProvider\n"
        "agent = Agent(ScriptedProvider(lambda request: 'Looked twice.'), name='eye')\n"
    )
    forked = _cli("fork", postgres_dsn, run_id, "--at", "2", "--agent", "lookagain:agent", cwd=tmp_path)
    assert forked.returncode == 0, forked.stderr
    assert f"run {run_id} forked at step 2" in forked.stdout and "Looked twice." in forked.stdout
    assert "original: Looked." in forked.stdout  # the fork beside its original, read from the journal
    assert PASSWORD not in forked.stdout + forked.stderr


def _failing(server: PostgresServer, database: str) -> dict[str, str]:
    """DSNs that fail, each holding a password that must not show."""
    good = server.dsn(database)
    closed = free_port()
    return {
        "a password refused": good.replace(PASSWORD, WRONG),
        "a port nobody listens on": f"postgresql://app:{WRONG}@127.0.0.1:{closed}/s4",
        "a short password, nobody listening": f"postgres://app:{SHORT}@127.0.0.1:{closed}/s4",
        "a password in the query": f"postgresql://127.0.0.1:{closed}/s4?user=app&password={WRONG}",
        "a DSN libpq cannot parse": f"postgresql://app:{WRONG}%zz@127.0.0.1:{closed}/s4",
        "the right password, no such run": good,
    }


@pytest.mark.parametrize("command", ["replay", "fork", "explain"])
def test_a_failing_command_never_shows_the_password(
    postgres_server: PostgresServer, postgres_dsn: str, command: str, tmp_path: Path,  # noqa: F811
) -> None:
    database = postgres_dsn.rpartition("/")[2]
    (tmp_path / "lookagain.py").write_text(
        "from agentactors import Agent\n"
        "from agentactors.providers.scripted import ScriptedProvider\n"
        "agent = Agent(ScriptedProvider(lambda request: 'Looked twice.'), name='eye')\n"
    )
    for case, dsn in _failing(postgres_server, database).items():
        argv = [command, dsn, "run-x"] + (["--at", "2", "--agent", "lookagain:agent"] if command == "fork" else [])
        out = _cli(*argv, cwd=tmp_path)  # (bounded: its timeout)
        said = out.stdout + out.stderr
        assert out.returncode == 1, (case, said)
        assert out.stderr.startswith(f"cannot {command} run 'run-x' from "), (case, said)
        assert out.stderr.count("\n") == 1, (case, said)
        for secret in (WRONG, SHORT, PASSWORD):
            assert secret not in said, (case, said)
        if command != "explain" and case != "a DSN libpq cannot parse":
            assert "password=***" in said or "password" not in dsn, (case, said)  # the DSN shown, masked


def test_without_the_postgres_extra_the_command_names_it() -> None:
    code = f"""
        import contextlib, io
        from agentactors.__main__ import main
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            status = main(["replay", "postgresql://app:{WRONG}@127.0.0.1:1/s4", "run-x"])
        print(status, repr(err.getvalue()))
    """
    result = run_without(("psycopg", "psycopg_binary", "psycopg_c"), code)
    assert result["ok"], result
    status, _, err = result["stdout"].partition(" ")
    assert status == "1" and "[postgres]" in err and WRONG not in err and err.count("\\n") == 1, err



@pytest.mark.anyio
@pytest.mark.parametrize("call", ["replay", "fork"])
async def test_the_api_given_a_url_says_to_pass_a_journal(call: str) -> None:
    """``replay(dsn, ...)`` read the URL as a path: a missing file whose name quoted the password.  A journal is the
    caller's to open, configure and close: the error says to pass ``PostgresJournal(dsn)``, never the DSN."""
    for dsn in (f"postgresql://app:{WRONG}@127.0.0.1:1/s4", f"postgres://app:{SHORT}@db/s4"):
        run: Any = replay(dsn, "run-x") if call == "replay" else fork(dsn, "run-x", 2, agent=None)
        with pytest.raises(TypeError, match=r"PostgresJournal\(dsn\)") as raised:
            await run
        assert WRONG not in str(raised.value) and SHORT not in str(raised.value)
