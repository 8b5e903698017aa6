"""docs/testing.md's control API calls ("Steering it over HTTP"), run as printed with httpx as the HTTP client.

The doc's shell blocks are not run by tests/integration/test_doc_examples.py (it runs ```python blocks): this
test reads the section's ``curl`` lines, makes each request with httpx against a FakeVendor (``$FV`` its base
URL) and checks the output the doc prints under it — whole, or, where it ends in ``...``, its start.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentactors.testing import FakeVendor

pytestmark = pytest.mark.anyio

DOC = Path(__file__).resolve().parents[3] / "docs" / "testing.md"


def _section() -> str:
    text = DOC.read_text()
    start = text.index("### Steering it over HTTP")
    end = text.index("\n## ", start)
    return text[start:end]


def _steps() -> list[tuple[list[str], str | None]]:
    """Each ``curl`` command (its words) and the output printed under it (``None``: none printed)."""
    blocks = re.findall(r"```sh\n(.*?)```", _section(), re.S)
    assert blocks, "the section's shell block is gone"
    steps: list[tuple[list[str], str | None]] = []
    for block in blocks:
        lines = block.splitlines()
        for i, line in enumerate(lines):
            if line.startswith("curl "):
                after = lines[i + 1] if i + 1 < len(lines) else ""
                shown = after.startswith("# ") and (after[2:3] in ("{", "[") or after[2:].isdigit())
                printed = after[2:] if shown else None
                steps.append((shlex.split(line), printed))
    return steps


def _request(words: list[str], base: str) -> tuple[str, str, dict[str, str], bytes | None, bool]:
    """curl's words as ``(method, url, headers, body, status only)``; a flag this reader does not know fails."""
    method, url, headers, body, status_only = None, None, {}, None, False
    rest = iter(words[1:])
    for word in rest:
        if word == "-s":
            continue
        if word == "-X":
            method = next(rest)
        elif word == "-d":
            body = next(rest).encode()
        elif word == "-H":
            name, _, value = next(rest).partition(":")
            headers[name.strip()] = value.strip()
        elif word == "-o":
            assert next(rest) == "/dev/null"
        elif word == "-w":
            assert next(rest) == "%{http_code}\\n"
            status_only = True
        elif word.startswith("$FV"):
            url = base + word.removeprefix("$FV")
        else:
            raise AssertionError(f"a curl flag this test does not read: {word!r}")
    assert url is not None
    return method or ("POST" if body is not None else "GET"), url, headers, body, status_only


def _contains(actual: Any, shown: Any) -> bool:
    """Whether ``actual`` holds what the doc shows (``...`` removed: a dict's other keys, a list's other items)."""
    if isinstance(shown, dict):
        return isinstance(actual, dict) and all(k in actual and _contains(actual[k], v) for k, v in shown.items())
    if isinstance(shown, list):
        return isinstance(actual, list) and len(actual) >= len(shown) and all(
            _contains(a, s) for a, s in zip(actual, shown, strict=False))
    return bool(actual == shown)


async def test_the_documented_control_calls_answer_what_the_doc_prints() -> None:
    steps = _steps()
    assert len(steps) >= 8
    async with FakeVendor() as fv, httpx.AsyncClient(timeout=60) as client:
        for words, printed in steps:
            method, url, headers, body, status_only = _request(words, fv.base_url)
            response = await client.request(method, url, headers=headers, content=body)
            if printed is None:
                continue
            if status_only:
                assert str(response.status_code) == printed, (words, response.text)
                continue
            partial = "..." in printed
            shown = json.loads(printed.replace(", ...", "")) if partial else json.loads(printed)
            actual = response.json()
            assert _contains(actual, shown) if partial else actual == shown, (words, actual)
        # What the calls left: the 429 answered, the cut stream queued, then all forgotten by the reset.
        assert fv.requests == () and fv.pending_script == 0


def test_every_curl_line_prints_its_answer() -> None:
    """A documented call with no output under it would go unchecked."""
    assert all(printed is not None for _, printed in _steps())
