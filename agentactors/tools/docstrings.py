"""Parameter descriptions from docstrings: Google (``Args:``), NumPy (``Parameters`` + dashes) and Sphinx (``:param``).

Only what a tool schema needs: the first paragraph as the tool's description,
and one text per parameter.  Anything unrecognised is ignored, never an error.
"""

from __future__ import annotations

import inspect
import re

__all__ = ["parse_docstring"]

_GOOGLE_SECTION = re.compile(
    r"^(Args|Arguments|Parameters|Params|Keyword Args|Keyword Arguments|Other Parameters)\s*:\s*$", re.I
)
_ANY_GOOGLE_SECTION = re.compile(
    r"^(Args|Arguments|Parameters|Params|Keyword Args|Keyword Arguments|Other Parameters|Returns?|Yields?|"
    r"Raises|Examples?|Notes?|Attributes|See Also|Warnings?|Todo|References)\s*:\s*$",
    re.I,
)
_NUMPY_UNDERLINE = re.compile(r"^\s*-{3,}\s*$")
# ``name (type): text``: the type may hold one level of parentheses (``pair (tuple(int, int)): ...``).
_GOOGLE_ENTRY = re.compile(r"^\*{0,2}(\w+)\s*(?:\((?:[^()]|\([^()]*\))*\))?\s*:\s*(.*)$")
# ``name : type``, or several names sharing one description (``x, y : float``).
_NUMPY_ENTRY = re.compile(r"^(\*{0,2}\w+(?:\s*,\s*\*{0,2}\w+)*)\s*(?::.*)?$")
_SPHINX_PARAM = re.compile(r"^:param\s+(?:[^:]*\s)?\*{0,2}(\w+)\s*:\s*(.*)$")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """``(description, {parameter: description})`` from a Google, NumPy or Sphinx-style docstring.

    The description is the first paragraph, its lines joined by spaces.
    """
    if not doc:
        return "", {}
    lines = inspect.cleandoc(doc).splitlines()
    description_lines: list[str] = []
    for n, line in enumerate(lines):
        stripped = line.strip()
        if not stripped or _ANY_GOOGLE_SECTION.match(stripped) or stripped.startswith(":"):
            break
        if n + 1 < len(lines) and _NUMPY_UNDERLINE.match(lines[n + 1]):  # a NumPy section title
            break
        description_lines.append(stripped)
    params: dict[str, str] = {}
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        if _GOOGLE_SECTION.match(stripped):
            i = _parse_google(lines, i + 1, _indent(line), params)
            continue
        if (
            stripped.lower() in ("parameters", "other parameters", "keyword arguments")
            and i + 1 < len(lines)
            and _NUMPY_UNDERLINE.match(lines[i + 1])
        ):
            i = _parse_numpy(lines, i + 2, _indent(line), params)
            continue
        m = _SPHINX_PARAM.match(stripped)
        if m:
            text = [m.group(2).strip()]
            i += 1
            while i < len(lines) and lines[i].strip() and _indent(lines[i]) > _indent(line):
                text.append(lines[i].strip())
                i += 1
            params[m.group(1)] = " ".join(t for t in text if t)
            continue
        i += 1
    return " ".join(description_lines), params


def _parse_google(lines: list[str], i: int, header_indent: int, params: dict[str, str]) -> int:
    entry_indent: int | None = None
    current: str | None = None
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            i += 1
            continue
        indent = _indent(line)
        if indent <= header_indent:
            break
        if entry_indent is None:
            entry_indent = indent
        m = _GOOGLE_ENTRY.match(line.strip()) if indent == entry_indent else None
        if m:
            current = m.group(1)
            params[current] = m.group(2).strip()
        elif current is not None:
            params[current] = (params[current] + " " + line.strip()).strip()
        i += 1
    return i


def _parse_numpy(lines: list[str], i: int, header_indent: int, params: dict[str, str]) -> int:
    current: list[str] = []  # the names the entry being read describes
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            i += 1
            continue
        indent = _indent(line)
        if indent <= header_indent:
            # A new section (title + underline) ends this one; an entry line continues it.
            if i + 1 < len(lines) and _NUMPY_UNDERLINE.match(lines[i + 1]):
                break
            m = _NUMPY_ENTRY.match(line.strip())
            if not m:
                break
            current = [name.strip().lstrip("*") for name in m.group(1).split(",")]
            for name in current:
                params[name] = ""
        else:
            for name in current:
                params[name] = (params[name] + " " + line.strip()).strip()
        i += 1
    return i
