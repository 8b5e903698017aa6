"""Which batch API a provider's wire has: OpenAI's, Anthropic's, Gemini's, or none."""

from __future__ import annotations

from ...providers.anthropic.provider import AnthropicWire
from ...providers.gemini.provider import GeminiWire
from ...providers.http.provider import HTTPProvider
from ...providers.openai.provider import OpenAIWire
from ._anthropic import AnthropicBatches
from ._api import BatchAPI
from ._gemini import GeminiBatches
from ._http import VendorHTTP
from ._openai import OpenAIBatches

__all__ = ["api_for"]


def api_for(provider: HTTPProvider, http: VendorHTTP) -> BatchAPI | None:
    """The batch API of ``provider``'s wire, or ``None`` when it has none here.

    Told by the codec's exact class: Azure's and Vertex AI's wires subclass these with other endpoints,
    whose batch APIs (Azure's global batch deployments, Vertex's BigQuery / Cloud Storage jobs) differ.
    """
    codec = type(provider.codec)
    if codec is OpenAIWire:
        return OpenAIBatches(provider, http)
    if codec is AnthropicWire:
        return AnthropicBatches(provider, http)
    if codec is GeminiWire:
        return GeminiBatches(provider, http)
    return None
