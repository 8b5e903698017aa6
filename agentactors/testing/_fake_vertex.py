"""The fake vendor's Vertex AI endpoints: Gemini and Claude behind Google Cloud's paths and bearer tokens.

``/v1/projects/{project}/locations/{location}/publishers/google/models/{model}:generateContent`` (and
``:streamGenerateContent?alt=sse``) is the Gemini wire; ``…/publishers/anthropic/models/{model}:rawPredict``
(``:streamRawPredict``) is the Anthropic Messages wire with the model in the path, ``anthropic_version:
"vertex-2023-10-16"`` in the body and no ``model`` field.  Both want ``Authorization: Bearer <token>``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from ._fake_script import FakeError

__all__ = ["VERTEX_ANTHROPIC_VERSION", "bearer_problem", "is_vertex", "vertex_anthropic_body", "vertex_route"]

VERTEX_ANTHROPIC_VERSION = "vertex-2023-10-16"
_PATH = re.compile(
    r"^/v1(?:beta1)?/projects/(?P<project>[^/]+)/locations/(?P<location>[^/]+)/publishers/(?P<publisher>google|anthropic)"
    r"/models/(?P<model>[^/:]+):(?P<method>[A-Za-z]+)$"
)
_METHODS = {
    "google": {"generateContent": False, "streamGenerateContent": True},
    "anthropic": {"rawPredict": False, "streamRawPredict": True},
}


def is_vertex(path: str) -> bool:
    """Whether ``path`` is a Vertex AI publisher-model path."""
    return _PATH.match(path) is not None


def vertex_route(method: str, path: str) -> tuple[str, str, bool] | None:
    """``(wire, model, stream)`` for a Vertex path: ``gemini`` for Google's models, ``anthropic`` for Claude."""
    m = _PATH.match(path) if method == "POST" else None
    if m is None:
        return None
    stream = _METHODS[m.group("publisher")].get(m.group("method"))
    if stream is None:
        return None
    return ("gemini" if m.group("publisher") == "google" else "anthropic"), m.group("model"), stream


def bearer_problem(headers: Mapping[str, str]) -> FakeError | None:
    """The 401 Vertex answers without an OAuth bearer token (``None``: one is there)."""
    scheme, _, token = headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return FakeError(401, message="Request had invalid authentication credentials. Expected OAuth 2 access "
                         "token, login cookie or other valid authentication credential.", code="UNAUTHENTICATED")
    return None


def vertex_anthropic_body(
    body: Mapping[str, Any], headers: Mapping[str, str], model: str, fail: Callable[[int, str], None]
) -> tuple[dict[str, Any], dict[str, str]]:
    """A rawPredict body as the Messages API reads it: the path's model in, the Vertex version checked."""
    if body.get("anthropic_version") != VERTEX_ANTHROPIC_VERSION:
        fail(400, f"anthropic_version: Input should be '{VERTEX_ANTHROPIC_VERSION}'")
    if "model" in body:
        fail(400, "model: Extra inputs are not permitted")
    rest = {k: v for k, v in body.items() if k != "anthropic_version"}
    return {**rest, "model": model}, {**headers, "anthropic-version": "2023-06-01"}
