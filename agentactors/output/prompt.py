"""The prompted strategy's two halves: the instruction in the system prompt, and the JSON read back.

:func:`instruction` puts the answer's JSON Schema into a template (:data:`DEFAULT_TEMPLATE`, or
``PromptedOutput(template=...)``).  :func:`extract_json` reads the JSON out of a text answer the way
models write it: bare, in a Markdown fence (```` ```json ````), or after a sentence of prose.  The
native strategy's answers go through it too (a vendor's constrained answer is bare JSON, which it
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
        return _read(stripped)
    except JsonBoundError as exc:
        return Extracted(False, error=str(exc))
    except json.JSONDecodeError:
        pass
    match = _FENCE.search(stripped)
    if match:
        body = match.group(1).strip()
        try:
            return _read(body)
        except JsonBoundError as exc:
            return Extracted(False, error=str(exc))
        except json.JSONDecodeError as exc:
            return Extracted(False, error=f"the JSON in the answer does not parse ({exc.msg} at char {exc.pos})")
    start = json_start(stripped)
    if start != -1:
        opener = stripped[start]
        end = stripped.rfind("}" if opener == "{" else "]")
        if end > start:
            try:
                return _read(stripped[start : end + 1])
            except JsonBoundError as exc:
                return Extracted(False, error=str(exc))
            except json.JSONDecodeError as exc:
                return Extracted(False, error=f"the JSON in the answer does not parse ({exc.msg})")
    return Extracted(False, error="the answer holds no JSON value")


def _read(text: str) -> Extracted:
    return Extracted(True, loads_bounded(text, what="the JSON in the answer"))
