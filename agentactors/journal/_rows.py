"""A journal's rows as text and back: what SQLite and PostgreSQL journals write and read alike.

Encoding happens before a transaction (an unstorable value never takes a lock) and decoding after it; both
apply the JSON depth and size policy (:mod:`agentactors._json`): a commit holding a value a later process could
not read back is refused (:class:`~agentactors.journal.JournalFormatError`; the run raises, nothing of that
commit is written), and a stored row past the policy or that does not decode is the same error, naming the run.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

import attrs

from .._json import MAX_DOCUMENT_DEPTH, MAX_TEXT_CHARS, JsonBoundError, loads_bounded
from ..loop.call_ids import is_fresh_id_of
from ..loop.tape import Commit, Ending
from ..messages import Message, ToolCall
from ..sessions.codec import messages_from_json, messages_to_json, result_from_json, result_to_json, value_to_json
from ..tools.results import ToolResult
from .codec import origin_from_json, response_from_json, response_to_json, session_from_origin
from .records import RecordedRun, RecordedStep
from .store import JournalFormatError

__all__ = ["Encoded", "decode_run", "encode"]

T = TypeVar("T")

#: A lone surrogate: a Python ``str`` may hold one (a model's JSON escape ``"\\ud800"`` decodes to it), no UTF-8
#: database column can (the driver refuses to encode it).
_SURROGATE = re.compile("[\ud800-\udfff]")


@attrs.frozen(slots=True)
class Encoded:
    """One :class:`~agentactors.loop.tape.Commit` as the text its statements write."""

    begin: str | None
    parent: str | None
    origin: str | None
    responses: tuple[tuple[int, str], ...]
    results: tuple[int, str] | None
    end: str | None
    content: str | None


def _text(run_id: str, value: Any, what: str = "a commit") -> str:
    """``value`` as the JSON text a column keeps.

    Unicode as it is (half the size of ``\\u`` escapes for most scripts), unless a string holds a lone surrogate:
    then every non-ASCII character is escaped, which any database stores and ``json.loads`` reads back as the
    same ``str`` — a run whose model wrote one goes on as it would unjournaled, instead of failing at its commit.
    """
    text = json.dumps(value, ensure_ascii=False)
    if not text.isascii() and _SURROGATE.search(text) is not None:
        text = json.dumps(value)
    if len(text) > MAX_TEXT_CHARS:
        raise JournalFormatError(
            f"run {run_id!r} cannot be journaled: {what} is {len(text):,} characters of JSON, over "
            f"{MAX_TEXT_CHARS:,} characters (it could not be read back)"
        )
    return text


def encode(run_id: str, inputs: tuple[Message, ...], c: Commit, origin: Any = None) -> Encoded:
    """The text of commit ``c`` of run ``run_id``.

    :raises JournalFormatError: a value JSON cannot keep (a provider's opaque ``provider_data`` holding a
        datetime, say), or one past the JSON depth and size policy (it could not be read back).
    """
    begin = _part(run_id, "its input", messages_to_json, inputs) if c.begin else None
    lineage = _part(run_id, "where it came from", lambda o: o, origin) if c.begin and origin else None
    # The journal counts a run's model calls from 1 (a resumed run's events number its steps on from its pause).
    # The steers taken before a call go in its response's document (``"steers"``): one row, one transaction.
    steers = dict(c.steers) if c.steers else None
    # (rare) a run cut short: how, in its last response's document — as the steers of an end commit taken before a
    # model call that never answered (Commit.steers): no response of their own to go with
    if c.responses and (c.ending is not None or (steers is not None and not steers.keys() <= dict(c.responses).keys())):
        return _ended(run_id, inputs, c, origin)
    responses = tuple(
        (
            n,
            _part(
                run_id, f"the response of its model call {n}", response_to_json, r
            ) if steers is None or n not in steers else _part(
                run_id, f"the response of its model call {n} and the steers before it", _steered_json, (r, steers[n])
            ),
        )
        for n, r in c.responses
    )
    results = None
    if c.results is not None:
        n, done = c.results
        results = (n, _part(run_id, f"the tool results of its model call {n}", _results_json, done))
    parent = origin.get("parent_run_id") if c.begin and origin else None
    content = _storable(c.result.content) if c.result is not None else None
    return Encoded(begin, parent, lineage, responses, results, c.end, content)


def _ended(run_id: str, inputs: tuple[Message, ...], c: Commit, origin: Any) -> Encoded:
    """The text of a run's end commit that says more than its steps (rare): as any commit's, its last response's
    document carrying how the run ended when it was cut short from outside (``"ended"``: :func:`_ending_json`) and
    the steers it took before a model call that never answered (``"steers_after"``: the run went on past that
    response for them).  An older reader ignores both keys."""
    numbers = dict(c.responses).keys()
    answered = tuple((n, m) for n, m in c.steers if n in numbers)
    after = tuple(m for n, steered in c.steers if n not in numbers for m in steered)
    plain = encode(run_id, inputs, attrs.evolve(c, ending=None, steers=answered), origin)
    last, response = max(c.responses, key=lambda r: r[0])
    steers = dict(c.steers).get(last, ())
    doc = _part(run_id, f"the response of its model call {last} and how the run ended", _ending_doc,
                (response, steers, c.ending, after))
    responses = tuple((n, doc if n == last else text) for n, text in plain.responses)
    return attrs.evolve(plain, responses=responses)


def _ending_doc(value: tuple[Any, tuple[Message, ...], Ending | None, tuple[Message, ...]]) -> dict[str, Any]:
    response, steers, ending, after = value
    doc = _steered_json((response, steers)) if steers else response_to_json(response)
    if ending is not None:
        doc["ended"] = _ending_json(ending)
    if after:
        doc["steers_after"] = messages_to_json(after)
    return doc


def _ending_json(ending: Ending) -> dict[str, Any]:
    """How a run was cut short, as its last response's document keeps it (``"ended"``)."""
    doc: dict[str, Any] = {"how": ending.how}
    if ending.reason is not None:
        doc["reason"] = ending.reason
    if ending.between:
        doc["between"] = True
    return doc


def _ending_from_json(doc: Any) -> Ending | None:
    """A stored ``"ended"`` (``None``: none, or one this version does not know: the run replays as without it)."""
    if not isinstance(doc, dict) or doc.get("how") not in ("cancelled", "interrupted"):
        return None
    reason = doc.get("reason")
    return Ending(str(doc["how"]), reason if isinstance(reason, str) else None, doc.get("between") is True)


def _steered_json(value: tuple[Any, tuple[Message, ...]]) -> dict[str, Any]:
    """A response's document with the steers the run took before its call (``"steers"``: messages, as inputs are)."""
    response, steers = value
    doc = response_to_json(response)
    doc["steers"] = messages_to_json(steers)
    return doc


def _step_json(doc: Any) -> tuple[Any, tuple[Message, ...], Ending | None, tuple[Message, ...]]:
    """A stored response, the steers before its call (none in a record written before steers were kept), how
    the run ended after it, when it was cut short (``"ended"``), and the steers it took after it, before a model
    call that never answered (``"steers_after"``) — both in its last response's document only."""
    steers = doc.get("steers") if isinstance(doc, dict) else None
    ended = _ending_from_json(doc.get("ended")) if isinstance(doc, dict) and "ended" in doc else None
    after = doc.get("steers_after") if isinstance(doc, dict) else None
    return response_from_json(doc), messages_from_json(steers) if steers is not None else (), ended, (
        messages_from_json(after) if after is not None else ()  # (a list: a {} is refused, not read as none)
    )


def _results_json(results: tuple[Any, ...]) -> list[dict[str, Any]]:
    return [result_to_json(r) for r in results]


def _part(run_id: str, what: str, to_json: Callable[[Any], Any], value: Any) -> str:
    """The JSON text of one part of a commit; what cannot be kept is a :class:`JournalFormatError` naming it.

    The codec's ``TypeError`` names the value's type (a vendor's ``provider_data`` holding a date, say) but not
    the run nor which part held it; the error says all three, so a caller knows what the journal refused.
    """
    try:
        return _text(run_id, to_json(value), what)
    except (JsonBoundError, TypeError, ValueError) as exc:
        if isinstance(exc, JournalFormatError):
            raise
        where = " (in the vendor's provider_data)" if _in_provider_data(value) else ""
        raise JournalFormatError(f"run {run_id!r} cannot be journaled: {what}{where}: {exc}") from None


def _in_provider_data(value: Any) -> bool:
    """Whether ``value`` (a response) holds vendor extras the codec refuses while the rest of it encodes."""
    data = getattr(value, "provider_data", None)
    if data is None:
        return False
    try:
        value_to_json(data)
    except (JsonBoundError, TypeError, ValueError):
        return True
    return False


def _storable(text: str) -> str:
    """``text`` as a plain text column keeps it: a lone surrogate (which no UTF-8 database takes) as U+FFFD.

    For the runs row's ``content``, a readable copy of the answer: the answer itself is in its step's response,
    JSON written losslessly (:func:`_text`).  Refusing it instead would fail a run that did nothing wrong.
    """
    if text.isascii() or _SURROGATE.search(text) is None:
        return text
    return _SURROGATE.sub("\ufffd", text)


def _decoded(run_id: str, what: str, text: Any, decode: Callable[[Any], T]) -> T:
    """``decode(json)`` of a stored ``text``; anything wrong is a :class:`JournalFormatError` naming the run."""
    try:
        if not isinstance(text, str):
            raise TypeError(f"not text but {type(text).__name__}")
        return decode(loads_bounded(text, what=f"run {run_id!r}'s stored {what}", max_depth=MAX_DOCUMENT_DEPTH))
    except JsonBoundError as exc:
        # The codec's own bound ("a stored value nests deeper than ...") names neither the run nor the column.
        said = str(exc)
        where = "" if f"run {run_id!r}" in said else f"run {run_id!r}'s stored {what}: "
        raise JournalFormatError(f"{where}{said}: it was left as it is") from None
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        message = f"run {run_id!r}'s stored {what} does not decode ({exc}): it was left as it is"
        raise JournalFormatError(message) from None


def _origin(doc: Any) -> tuple[Any, ...]:
    """Where the run came from (:func:`origin_from_json`) and which session turn it was, from one parse."""
    return (*origin_from_json(doc), session_from_origin(doc))


def _results(docs: Any) -> tuple[Any, ...]:
    return tuple(result_from_json(d) for d in docs)


def _check_pairing(run_id: str, step: int, calls: Sequence[ToolCall], results: tuple[ToolResult, ...]) -> None:
    """Refuse a step's stored results that are not results of its response's calls.

    Results are served by call id: a result for no call of the step, or a step's calls left without the results
    the row claims, would have recovery run a committed side effect again (and overwrite the row) and a replay
    blame the agent.  What the loop writes is one result per call of one executor message — every call of the
    step, or some of them (a handoff's others, a typed step's non-output calls, calls decided in place) — under
    the call's id, or the fresh ``<id>_<n>`` the call-id rule gave a reused or unsendable one
    (:mod:`agentactors.loop.call_ids`).  So: at least one result, no call id twice, and — when the response
    carries the calls (not the JSON transport, whose calls are parsed from its text) — no more results than
    calls, each for one of them.
    """
    def damaged(what: str) -> JournalFormatError:
        return JournalFormatError(f"run {run_id!r}'s stored step {step} {what}: it was left as it is")

    ids = [r.call_id for r in results]
    if not ids:
        raise damaged("has an empty list of tool results")
    if len(set(ids)) != len(ids):
        raise damaged("holds two tool results for one call")
    if not calls:
        return
    if len(ids) > len(calls):
        raise damaged(f"holds {len(ids)} tool results for {len(calls)} tool calls")
    own = {c.id for c in calls}
    for call_id in ids:
        if call_id not in own and not is_fresh_id_of(call_id, own):
            raise damaged(f"holds a tool result for call {str(call_id)[:40]!r}, which its response did not ask for")


def decode_run(
    run_id: str,
    row: tuple[Any, Any, Any, Any, Any],
    steps: Iterable[tuple[Any, Any, Any]],
    children: tuple[RecordedRun, ...] = (),
) -> RecordedRun:
    """The run of a runs row ``(agent, inputs, status, content, origin)`` and its steps rows ``(step, response,
    results)`` in step order.  :raises JournalFormatError: a stored value that does not decode."""
    agent, inputs_text, status, content, origin = row
    for name, value, required in (("agent", agent, False), ("status", status, True), ("content", content, False)):
        if not isinstance(value, str) and (required or value is not None):
            raise JournalFormatError(
                f"run {run_id!r}'s stored {name} is not text but {type(value).__name__}: it was left as it is"
            )
    parent, call, resume, session = _decoded(run_id, "origin", origin, _origin) if origin else (None, None, None, None)
    # Stored from 1, a resumed run's steps are handed back by the numbers its events and explain() gave them: they go
    # on from the paused run's step (what fork's at_step and explain_fork count in).
    offset = resume[0].step if resume is not None else 0
    recorded: list[RecordedStep] = []
    resumed = None
    ended: Ending | None = None
    after: tuple[Message, ...] = ()
    for number, response, results in steps:
        if number == 0 and results is not None:  # a resumed run's paused step, finished before any model call
            resumed = _decoded(run_id, "results", results, _results)
            continue
        # Steps are served by position: a step missing before this one would hand each later response to the wrong
        # model call (and the live run would overwrite the rows), a step whose response is gone would have its
        # calls asked for again under new ids — both silent divergences, so both are the run's format error.
        expected = len(recorded) + 1
        if number != expected:
            raise JournalFormatError(f"run {run_id!r}'s stored step {expected} is missing: it was left as it is")
        if response is None:
            raise JournalFormatError(
                f"run {run_id!r}'s stored step {expected} has results but no response: it was left as it is"
            )
        answer, steers, ended, after = _decoded(run_id, "response", response, _step_json)  # (the last step's count)
        done = None if results is None else _decoded(run_id, "results", results, _results)
        if done is not None:
            _check_pairing(run_id, expected, answer.tool_calls, done)
        recorded.append(RecordedStep(offset + int(number), answer, done, steers))
    inputs = _decoded(run_id, "inputs", inputs_text, messages_from_json)
    if not inputs and resume is None:  # every run the loop journals started from a message, or from its pause
        raise JournalFormatError(f"run {run_id!r}'s stored inputs hold no input message: it was left as it is")
    # How the run was cut short: cancelled (its row says so; the mark, if any, says where), or interrupted (a run
    # that finished, its last response's mark says so).  A mark the row disagrees with is not how the run ended.
    if status == "cancelled":
        ended = ended if ended is not None and ended.how == "cancelled" else Ending("cancelled")
    elif status != "finished" or (ended is not None and ended.how != "interrupted"):
        ended = None
    return RecordedRun(
        run_id, agent, inputs, tuple(recorded), status, content=content, parent_run_id=parent,
        parent_call_id=call, resume=resume, resumed_results=resumed, children=children, session=session,
        ending=ended, steers_after=after,
    )
