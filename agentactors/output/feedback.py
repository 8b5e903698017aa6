"""The texts the model reads when its answer is refused, and when an output call is taken.

The same quality as a tool call's argument feedback (:func:`~agentactors.tools.results.invalid_arguments_text`):
every issue on its own line (where, what was expected, the JSON type sent — never the value), at most
:data:`~agentactors.tools.results.MAX_LISTED_ISSUES` of them, then how to answer correctly.  A line is at
most :data:`MAX_LINE_CHARS` long: most are short by construction, but an issue's "expected" can be an output
type's own validator message (pydantic's ``Value error, ...``), which may echo the value itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from ..errors import redact
from ..tools.results import MAX_LISTED_ISSUES, ValidationIssue
from ..tools.schema import describe_schema
from .target import Member, OutputTarget

__all__ = [
    "ACCEPTED_TEXT",
    "MAX_LINE_CHARS",
    "NOT_USED_TEXT",
    "capped_lines",
    "cut_off_text",
    "issue_block",
    "no_output_call_text",
    "not_json_text",
    "output_call_text",
    "retry_text",
    "text_answer_text",
]

#: The result of the output call that ended the run (kept so the conversation stays well formed).
ACCEPTED_TEXT = "Final result received."
#: The result of an output call made in the same turn as one that was taken.
NOT_USED_TEXT = "Not used: another final result in this turn was taken."


#: The longest issue line the model (and the ``output.invalid`` event) gets; longer ones are cut with ``…``.
MAX_LINE_CHARS: Final = 300


def capped_lines(lines: Sequence[str], total: int | None = None) -> tuple[str, ...]:
    """At most :data:`~agentactors.tools.results.MAX_LISTED_ISSUES` lines, each at most :data:`MAX_LINE_CHARS`,
    then how many more there were: what the model reads, and so what the event and the error keep.

    ``total``: how many lines there were, when ``lines`` holds only the first of them.  (A list of 100,000
    wrong items has as many issues: kept whole, the event held them all and the error redacted each on the
    event loop — most of a second — for lines nobody was shown.)
    """
    out = [line if len(line) <= MAX_LINE_CHARS else line[: MAX_LINE_CHARS - 1] + "…"
           for line in lines[:MAX_LISTED_ISSUES]]
    extra = (len(lines) if total is None else total) - MAX_LISTED_ISSUES
    if extra > 0:
        out.append(f"- ... and {extra} more issue{'s' if extra != 1 else ''}")
    return tuple(out)


def issue_block(issues: Sequence[ValidationIssue]) -> list[str]:
    """The issue lines, capped (with how many more there were)."""
    return list(capped_lines([issue.line() for issue in issues[:MAX_LISTED_ISSUES]], len(issues)))


def _fields(member: Member) -> str:
    props = member.schema.get("properties") or {}
    required = set(member.schema.get("required") or ())
    parts = [f"{p} ({describe_schema(s)}{', required' if p in required else ''})" for p, s in props.items()]
    listed = "; ".join(parts) if parts else "no fields"
    return listed if len(listed) <= 600 else listed[:599] + "…"


def output_call_text(member: Member, issues: Sequence[ValidationIssue]) -> str:
    """The result of an output tool call whose arguments did not validate."""
    lines = [f"Invalid final result for '{member.name}' — it was not accepted."]
    lines.extend(issue_block(issues))
    lines.append(f"Fix it and call '{member.name}' again. Its parameters: {_fields(member)}.")
    return "\n".join(lines)


def text_answer_text(target: OutputTarget, issues: Sequence[ValidationIssue]) -> str:
    """The user message after a JSON text answer that did not validate."""
    lines = ["Your answer does not match the required JSON Schema — it was not accepted."]
    lines.extend(issue_block(issues))
    lines.append(f"Answer again with only the corrected JSON. Its fields: {_fields(target.text_member)}.")
    return "\n".join(lines)


def not_json_text(target: OutputTarget, error: str) -> str:
    """The user message after a text answer with no readable JSON in it."""
    return (
        f"Your answer could not be read: {error}. Answer again with only one JSON value matching the required "
        f"JSON Schema. Its fields: {_fields(target.text_member)}."
    )


def cut_off_text(target: OutputTarget) -> str:
    """The user message after a text answer the output token limit cut before its JSON ended.

    Not "does not parse": asked again the same way, the model writes the same long answer into the same
    limit, every retry; told why, it can write a shorter one.
    """
    return (
        "Your answer was cut off at the output token limit (max_tokens) before its JSON ended — it was not "
        "accepted. Answer again with only the JSON value, shorter: no prose around it, no more whitespace "
        f"than JSON needs. Its fields: {_fields(target.text_member)}."
    )


def no_output_call_text(target: OutputTarget) -> str:
    """The user message after a text answer where an output tool call was required."""
    names = ", ".join(f"'{m.name}'" for m in target.members)
    return f"Do not answer in text: give your final answer by calling {names} with it."


def retry_text(message: str, member: Member | None, *, json: bool = True) -> str:
    """What the model reads when an output validator raised :class:`~agentactors.ModelRetry`.

    ``json``: the answer was asked for as JSON (``False``: a plain ``str`` answer, which only the validator
    checks — the model was never asked for JSON, so it is not told to correct any).
    """
    text = redact(message.strip()) or "the answer was refused"
    if member is not None:
        return f"Final result refused: {text}\nFix it and call '{member.name}' again."
    if not json:
        return f"Your answer was refused: {text}\nAnswer again, corrected."
    return f"Your answer was refused: {text}\nAnswer again with the corrected JSON."
