"""Vertex AI endpoints: the host of a location and the path of a publisher's model.

``https://{location}-aiplatform.googleapis.com/v1/projects/{project}/locations/{location}/publishers/{publisher}/
models/{model}:{method}``; the ``global`` location is served at ``aiplatform.googleapis.com`` (no region prefix).
Shared by the Vertex constructors of the Gemini wire (:meth:`GeminiProvider.vertex
<agentactors.providers.gemini.provider.GeminiProvider.vertex>`, publisher ``google``) and of the Anthropic wire
(:meth:`AnthropicProvider.vertex <agentactors.providers.anthropic.provider.AnthropicProvider.vertex>`, publisher
``anthropic``), which are those wires with another URL, bearer auth and (for Claude) a body tweak.
"""

from __future__ import annotations

from urllib.parse import quote

__all__ = ["vertex_base_url", "vertex_model_url"]


def vertex_base_url(location: str) -> str:
    """``https://{location}-aiplatform.googleapis.com``, or ``https://aiplatform.googleapis.com`` for ``global``."""
    if not location or "/" in location:
        raise ValueError(f"not a Vertex AI location: {location!r}")
    return "https://aiplatform.googleapis.com" if location == "global" else f"https://{location}-aiplatform.googleapis.com"


def vertex_model_url(base_url: str, *, project: str, location: str, publisher: str, model: str, method: str) -> str:
    """``{base_url}/v1/projects/{project}/locations/{location}/publishers/{publisher}/models/{model}:{method}``."""
    name = model.rsplit("/", 1)[-1] if model.startswith(("models/", "publishers/")) else model
    return (
        f"{base_url.rstrip('/')}/v1/projects/{quote(project, safe='')}/locations/{quote(location, safe='')}"
        f"/publishers/{publisher}/models/{quote(name, safe='-._~@')}:{method}"
    )
