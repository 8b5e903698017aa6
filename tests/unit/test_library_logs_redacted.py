"""Every logger of the library masks credentials in what it logs — the traceback of a ``log.exception`` included.

A found leak: a user's ``on_token`` callback (or a ``run_many`` progress callback) raising with the provider's key
in its message was logged by ``agentactors.loop`` / ``agentactors.agent`` with a traceback that carried the key,
printed to stderr by any handler: only ``agentactors.tools`` had the redacting filter.  Filters run on the logger
where a record is made, not on its parents', so each library logger has the filter, and a source scan keeps a new
logger from escaping it.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

import anyio
import pytest

import agentactors
from agentactors import Agent, Runtime, ScriptedProvider
from agentactors.redaction import LIBRARY_LOGGERS, RedactingFilter, register_secret

pytestmark = pytest.mark.anyio

CANARY = "sk-canary-logs-0123456789abcdef"
_NAMED = re.compile(r"""logging\.getLogger\(\s*(?:"([^"]+)"|(__name__))\s*\)""")


def _library_logger_names() -> set[str]:
    root = Path(agentactors.__file__).parent
    names: set[str] = set()
    for path in root.rglob("*.py"):
        for match in _NAMED.finditer(path.read_text(encoding="utf-8")):
            if match.group(2):  # __name__: the module's dotted name
                rel = path.relative_to(root.parent).with_suffix("")
                names.add(".".join(rel.parts).removesuffix(".__init__"))
            elif re.fullmatch(r"agentactors(\.\w+)*", match.group(1)):  # (not a docstring's "agentactors...")
                names.add(match.group(1))
    return names


def test_every_logger_the_library_makes_is_redacted() -> None:
    names = _library_logger_names()
    assert names, "the scan found no logger"
    missing = sorted(names - set(LIBRARY_LOGGERS))
    assert not missing, f"loggers without the redacting filter: {missing} (add them to redaction.LIBRARY_LOGGERS)"
    for name in LIBRARY_LOGGERS:
        assert any(isinstance(f, RedactingFilter) for f in logging.getLogger(name).filters), name


class _Kept(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


async def test_a_callback_raising_with_a_key_is_logged_without_it() -> None:
    register_secret(CANARY)
    kept = _Kept()
    logger = logging.getLogger("agentactors")
    logger.addHandler(kept)
    try:
        async with Runtime() as rt:
            agent = Agent(ScriptedProvider(["hello there", "again"]))

            def on_token(text: str) -> None:
                raise RuntimeError(f"the UI is gone ({CANARY})")

            await agent.run("hi", on_token=on_token)

            def progress(done: int, failed: int, total: int) -> None:
                raise RuntimeError(f"the progress bar broke ({CANARY})")

            await rt.run_many(agent, ["a"], progress=progress)
            await anyio.lowlevel.checkpoint()
    finally:
        logger.removeHandler(kept)
    logged = [r for r in kept.records if r.levelno >= logging.WARNING]
    assert {r.name for r in logged} >= {"agentactors.loop", "agentactors.agent"}, [r.name for r in logged]
    for record in logged:
        text = logging.Formatter().format(record)
        assert CANARY not in text, f"{record.name}: {text}"
        assert "[REDACTED]" in text, text


class _OneLine(logging.Formatter):
    def formatException(self, ei: object) -> str:
        return "EXC (one line)"


def test_a_handlers_own_exception_format_is_kept_when_nothing_is_masked() -> None:
    """The filter formats a record's exception to look for a credential; it keeps that text for the record only
    when it masked something — else a handler's own ``formatException`` (one line for a log shipper) formats it."""
    lines: list[str] = []

    class _Lines(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(self.format(record))

    handler = _Lines()
    handler.setFormatter(_OneLine("%(message)s"))
    logger = logging.getLogger("agentactors.loop")
    logger.addHandler(handler)
    try:
        for text in ("plain trouble", f"trouble with {CANARY}"):
            register_secret(CANARY)
            try:
                raise ValueError(text)
            except ValueError:
                logger.exception("a callback raised")
    finally:
        logger.removeHandler(handler)
    assert lines[0] == "a callback raised\nEXC (one line)"
    assert CANARY not in lines[1] and "[REDACTED]" in lines[1]


def test_a_tools_record_with_a_lone_surrogate_in_its_traceback_encodes() -> None:
    """``agentactors.tools`` also mends lone surrogates (a tool's error text from undecodable bytes) in what it logs,
    the traceback included: a handler writing UTF-8 — a file, pytest-xdist's report to its controller — cannot
    encode one (a test run died on it when the traceback was left to the handler)."""
    lines: list[str] = []

    class _Lines(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(self.format(record))

    handler = _Lines()
    logger = logging.getLogger("agentactors.tools")
    logger.addHandler(handler)
    try:
        try:
            raise RuntimeError(b"bad \xff byte".decode("utf-8", "surrogateescape"))
        except RuntimeError:
            logger.exception("tool %r raised", "t")
    finally:
        logger.removeHandler(handler)
    (text,) = lines
    text.encode("utf-8")  # no lone surrogate left
    assert "bad \ufffd byte" in text
