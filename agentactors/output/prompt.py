"""The prompted strategy's two halves: the instruction in the system prompt, and the JSON read back.

:func:`instruction` puts the answer's JSON Schema into a template (:data:`DEFAULT_TEMPLATE`, or
``PromptedOutput(template=...)``).  :func:`extract_json` reads the JSON out of a text answer the way
models write it: bare, in a Markdown fence (```` ```json ````) — the first fence whose body is JSON, past
a fence of code — or between sentences of prose, which may hold braces of their own (``{like this}``).
The native strategy's answers go through it too (a vendor's constrained answer is bare JSON, which it
reads first).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

import attrs

from .._json import JsonBoundError, loads_bounded

__all__ = ["DEFAULT_TEMPLATE", "Extracted", "extract_json", "instruction", "json_start"]

#: The default instruction of :class:`~agentactors.output.spec.PromptedOutput`.
DEFAULT_TEMPLATE = (
    "When you give your final answer, answer with one JSON value that matches this JSON Schema, and "
    "nothing else: no prose before or after it (a ```json fence around it is fine).\n{schema}"
)

_FENCE = re.compile(r"```[ \t]*(?:json|JSON)?[ \t]*\n?(.*?)(?:```|\Z)", re.DOTALL)
_OPENER = re.compile(r"[{\[]")
_DECODER = json.JSONDecoder()
#: A JSON string (skipped whole), a lone ``"`` (one that never ends), or a bracket.
_STRUCTURE = re.compile(r'"(?:[^"\\]|\\.)*"|"|[{}\[\]]', re.DOTALL)
#: How many ``{`` / ``[`` of the prose a value is looked for at, past the first: a value is read from each
#: (up to where it ends), and a failed read may cost the rest of the text, so a bounded few (prose before
#: the JSON has a brace or two, not thousands), or an answer of braces would cost their square.
_MORE_OPENERS = 8


def instruction(schema: Mapping[str, Any], template: str | None = None) -> str:
    """The system-prompt text asking for ``schema`` (``{schema}`` in ``template`` replaced, else appended)."""
    text = json.dumps(schema, ensure_ascii=False, separators=(",", ":"))
    template = DEFAULT_TEMPLATE if template is None else template
    if "{schema}" in template:
        return template.replace("{schema}", text)
    return f"{template}\n{text}"


@attrs.frozen(slots=True)
class Extracted:
    """What a text answer held: the JSON value (``ok``), or why none could be read (``error``)."""

    ok: bool
    value: Any = None
    error: str = ""
    #: The value is the whole answer, or the whole body of a fence: it ended where the answer (or fence) did.
    #: A value found among prose is not: cut off at ``max_tokens``, the answer may be one whose JSON never
    #: ended, the value a piece of prose before it (:meth:`~agentactors.output.run.OutputRun.check_text`).
    whole: bool = False


def json_start(text: str) -> int:
    """Where the JSON of a (possibly partial) answer starts: inside a fence, else at the first ``{`` / ``[``.

    ``-1`` when there is no sign of it yet.
    """
    fence = text.find("```")
    if fence != -1:
        newline = text.find("\n", fence)
        if newline == -1:
            return -1
        return newline + 1
    starts = [i for i in (text.find("{"), text.find("[")) if i != -1]
    return min(starts) if starts else -1


def extract_json(text: str) -> Extracted:
    """The JSON value of a text answer (see the module docstring); never raises.

    A value past the depth and size policy (:mod:`agentactors._json`: too deep, an integer too long)
    is not read: it is an error the model is told about, like any answer that is not the JSON asked for.
    """
    stripped = text.strip()
    if not stripped:
        return Extracted(False, error="the answer is empty")
    try:
        return _read(stripped, whole=True)
    except JsonBoundError as exc:
        return Extracted(False, error=str(exc))
    except json.JSONDecodeError:
        pass
    fence_error: str | None = None
    for match in _FENCE.finditer(stripped):  # each fence once (bodies apart: linear in the answer)
        body = match.group(1).strip()
        if not body:
            continue
        try:
            return _read(body, whole=True)
        except JsonBoundError as exc:
            return Extracted(False, error=str(exc))
        except json.JSONDecodeError as exc:  # a fence of code, say: the JSON may be in a later one
            if fence_error is None:
                fence_error = f"the JSON in the answer does not parse ({exc.msg} at char {exc.pos})"
    return _in_prose(stripped, fence_error)


def _in_prose(text: str, fence_error: str | None) -> Extracted:
    """The one JSON value among prose: at the first ``{`` / ``[`` that begins one (a few are tried), the
    prose after it left out — braces and all — unless another value of its kind follows it (an object after
    an object: which one was the answer cannot be told, and the model is asked for one).

    An opener whose value does not parse begins a structure all the same: the next opener tried is past
    where it closes (``{like this}`` of prose), never inside it — inside a broken answer (cut off, a comma
    missing) is an object of its own that may well validate, and is not what the model answered.  A
    structure that never closes leaves no value to find.
    """
    openers = _OPENER.finditer(text)
    first = next(openers, None)
    if first is None:
        return Extracted(False, error=fence_error or "the answer holds no JSON value")
    start = at = first.start()
    found = _value_at(text, start)
    if found is None:
        error = fence_error
        end = text.rfind("}" if text[start] == "{" else "]")
        if end > start:  # from the first opener to the last closer: its parse error is the one to tell
            try:
                _read(text[start : end + 1])
            except JsonBoundError as exc:
                return Extracted(False, error=str(exc))
            except json.JSONDecodeError as exc:
                error = error or f"the JSON in the answer does not parse ({exc.msg})"
        past = _structure_end(text, start)
        tried = 0
        for match in openers:  # a brace of the prose came first
            if past is None or tried == _MORE_OPENERS:
                return Extracted(False, error=error or "the answer holds no JSON value")
            at = match.start()
            if at < past:  # inside the structure that failed
                continue
            tried += 1
            found = _value_at(text, at)
            if found is not None:
                break
            past = _structure_end(text, at)
        else:
            return Extracted(False, error=error or "the answer holds no JSON value")
    extracted, end = found
    if not extracted.ok:
        return extracted
    # Another value of the same kind after it (an object after an object): which was the answer cannot be
    # told.  One of the other kind is prose's (a footnote's ``[1]`` after the object).
    same_kind = re.compile(re.escape(text[at]))
    for _, match in zip(range(_MORE_OPENERS), same_kind.finditer(text, end), strict=False):
        other = _value_at(text, match.start())
        if other is not None and other[0].ok:
            return Extracted(False, error="the answer holds more than one JSON value, and only one can be the answer")
    return extracted


def _value_at(text: str, start: int) -> tuple[Extracted, int] | None:
    """The JSON value that begins at ``start`` and where it ends (what follows ignored), or ``None``.

    A value past the depth or digits policy is an error (the parser stops inside it: it is read again,
    bounded, from ``start`` on, which says which limit).
    """
    try:
        end = _DECODER.raw_decode(text, start)[1]
    except json.JSONDecodeError:
        return None
    except (RecursionError, ValueError):  # too deep, or an integer too long: the bounded read names it
        end = len(text)
    try:
        return _read(text[start:end]), end
    except JsonBoundError as exc:
        return Extracted(False, error=str(exc)), end
    except json.JSONDecodeError:
        return None


def _structure_end(text: str, start: int) -> int | None:
    """Just past where the brackets opened at ``start`` close again (strings skipped), or ``None`` if never.

    Either kind of bracket counts for either (what is broken cannot be told to be mismatched).  The regular
    expression steps over whole strings, so the loop turns once per bracket or string, not per character.
    """
    depth = 0
    for token in _STRUCTURE.finditer(text, start):
        char = token.group()
        if char in "{[":
            depth += 1
        elif char in "}]":
            depth -= 1
            if depth == 0:
                return token.end()
        elif char == '"':  # a string that never ends: the structure does not either
            return None
    return None


def _read(text: str, *, whole: bool = False) -> Extracted:
    """``text`` read as JSON, a key named twice refused (as in an output call's arguments: which value the
    model meant would be a guess)."""
    return Extracted(True, loads_bounded(text, what="the JSON in the answer", unique_keys=True), whole=whole)
