"""What a failed tool call leaves for its developer: a log record, and its error's type on ``tools.finished``.

A tool that raises is a result, not an exception (``docs/reliability.md``, "Tool outcomes"): the model reads
``Error: KeyError: 'Oslo'`` and the run ends with ``error=None``.  That is right for the model and the run,
and leaves the person who wrote the tool nothing to debug with.  So each ``error`` result the executor makes
is also

- a WARNING on the ``agentactors.tools`` logger naming the tool, the call and the run, with the traceback
  (``exc_info``) of what the tool raised (not of an error that happened in another process and says so,
  ``remote = True``: an MCP server's) — a :class:`~agentactors.errors.ModelRetry` is a message the tool
  meant for the model, not a failure: DEBUG, no traceback; a value that cannot be sent as JSON: WARNING
  with the reason (the encoder's traceback would show the encoder, not the tool);
- the error's type name, which each function here returns: the executor carries it to ``execute_one`` for the
  ``tools.finished`` event (``error_type``).

Texts are redacted (:func:`~agentactors.redaction.redact`), and the logger has a redacting filter
(:class:`~agentactors.redaction.RedactingFilter`), which masks the formatted traceback too, before any handler
sees the record — and then makes message and traceback encodable: a tool's message may hold a lone surrogate
(``bytes.decode(errors="surrogateescape")``), which the model never reads (:mod:`~agentactors.tools._finish`
replaces it) and which a handler writing UTF-8 (a file, a pipe to a worker process) could not write.  Only
the failure path comes here: an ``ok`` call pays for none of it.
"""

from __future__ import annotations

import logging
from typing import Any

from ..errors import ModelRetry
from ..redaction import RedactingFilter, redact
from .results import encodable_text

__all__ = ["log_raised", "log_unsendable"]



class _Writable(RedactingFilter):
    """:class:`RedactingFilter`, then every lone surrogate of the message and the traceback replaced (U+FFFD):
    a handler writing UTF-8 (a file, a process boundary) cannot encode one."""

    def clean(self, text: str) -> str:
        return encodable_text(redact(text))[0]


log = logging.getLogger("agentactors.tools")
# A tool's exception message may hold a credential (an upstream's error echoing a key): its traceback, formatted
# by the filter, is masked like every other text the library writes.
log.addFilter(_Writable())


def _where(call_id: str, run_id: str | None) -> str:
    return f"call {call_id}, run {run_id}" if run_id is not None else f"call {call_id}"


def log_raised(name: str, call_id: str, run_id: str | None, text: str, exc: BaseException) -> str:
    """Log that tool ``name`` raised ``exc`` (``text``: what the model reads of it); its type name."""
    error_type = type(exc).__name__
    if isinstance(exc, ModelRetry):
        if log.isEnabledFor(logging.DEBUG):
            log.debug("tool %r (%s) asked the model to retry: %s", name, _where(call_id, run_id), text)
        return error_type
    # ``text`` is format_error's, redacted already: "Error: <Type>: <message>".  An error that says it happened in
    # another process (``remote = True``: an MCP server's tool) is logged without the traceback, which would show
    # only the library's own frames.
    log.warning(
        "tool %r (%s) raised %s; the model reads it as the call's error",
        name,
        _where(call_id, run_id),
        text.removeprefix("Error: "),
        exc_info=None if getattr(type(exc), "remote", False) is True else exc,
    )
    return error_type


def _reason(exc: BaseException) -> str:
    """``str(exc)``, or its type's name when its ``__str__`` fails (a foreign ``TypeError`` a conversion raised)."""
    try:
        return str(exc)
    except Exception:
        return type(exc).__name__


def log_unsendable(name: str, call_id: str, run_id: str | None, value: Any, exc: BaseException) -> str:
    """Log that tool ``name`` returned ``value``, which cannot be sent as JSON (``exc`` says why); the error's
    type name (``TypeError``, as the text the model reads says)."""
    log.warning(
        "tool %r (%s) returned a %s that cannot be sent as JSON (%s); the model reads it as the call's error",
        name,
        _where(call_id, run_id),
        type(value).__name__,
        redact(_reason(exc)),
    )
    return "TypeError"
