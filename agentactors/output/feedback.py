"""The texts the model reads when its answer is refused, and when an output call is taken.

The same quality as a tool call's argument feedback (:func:`~agentactors.tools.results.invalid_arguments_text`):
every issue on its own line (where, what was expected, the JSON type sent — never the value), at most
:data:`~agentactors.tools.results.MAX_LISTED_ISSUES` of them, then how to answer correctly.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import redact
from ..tools.results import MAX_LISTED_ISSUES, ValidationIssue
from ..tools.schema import describe_schema
from .target import Member, OutputTarget

__all__ = [
    "ACCEPTED_TEXT",
    "NOT_USED_TEXT",
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


def issue_block(issues: Sequence[ValidationIssue]) -> list[str]:
    """The issue lines, capped (with how many more there were)."""
    lines = [issue.line() for issue in issues[:MAX_LISTED_ISSUES]]
    extra = len(issues) - MAX_LISTED_ISSUES
    if extra > 0:
        lines.append(f"- ... and {extra} more issue{'s' if extra != 1 else ''}")
    return lines


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


def no_output_call_text(target: OutputTarget) -> str:
    """The user message after a text answer where an output tool call was required."""
    names = ", ".join(f"'{m.name}'" for m in target.members)
    return f"Do not answer in text: give your final answer by calling {names} with it."


def retry_text(message: str, member: Member | None) -> str:
    """What the model reads when an output validator raised :class:`~agentactors.ModelRetry`."""
    text = redact(message.strip()) or "the answer was refused"
    if member is not None:
        return f"Final result refused: {text}\nFix it and call '{member.name}' again."
    return f"Your answer was refused: {text}\nAnswer again with the corrected JSON."
