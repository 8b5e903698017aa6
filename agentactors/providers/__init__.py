"""Providers: the port, the HTTP adapter, one folder per vendor wire, and the scripted test double.

One idea per module, imports going one way (a module imports only what is listed below it)::

    scripted.py             ScriptedProvider, the deterministic test double
    azure.py                AzureOpenAIProvider: Azure deployments over the openai/ and responses/ wires
    responses/              the OpenAI Responses wire, OpenAIResponsesProvider (its model data read
                            from openai/models.py)
    bedrock/                the Bedrock Converse wire, BedrockProvider (+ sigv4.py, eventstream.py:
                            botocore, lazily)
    openai/                 the Chat Completions wire (also OpenAI-compatible servers)
      provider.py             OpenAIWire (the codec) + OpenAIProvider (thin I/O, over http/)
      encode.py               LLMRequest -> the request body: messages, tools, settings, parts (pure)
      stream.py               its stream decoder (pure)
      decode.py               bodies, usage, finish reasons, tool calls, error refinement (pure)
      models.py               its models as data: the wire's name, settings and parts per model
    anthropic/              the same for the Messages API
    gemini/                 the same for generateContent (+ schema.py, the tool-schema sanitiser)
    vertex.py               Vertex AI hosts and model paths (GeminiProvider.vertex, AnthropicProvider.vertex)
    http/                   HTTPProvider, the thin httpx adapter every wire shares; transports, bounded
                            bodies, SSE, keys, rate-limit headers
    codec.py                the WireCodec / StreamDecoder protocols a wire implements
    errors.py               HTTP failure -> ProviderError, shared by every wire (public)
    port.py                 the port: LLMProvider, Capabilities, one reader per capability, stream helpers
    _settings.py            a setting a model cannot carry: dropped (an event) or refused, shared
    _media.py               a part a model cannot carry, and the vendors' size limits, shared
    _constrained_schema.py  JSON Schema -> what a vendor's constrained decoding accepts (response formats)

Within a wire folder: provider -> encode / stream -> decode -> models, and only provider.py imports
http/ (``tests/unit/providers/test_import_graph.py``).  Nothing here is imported by
``agentactors.errors``: the error tree is the layer below.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._served import on_first_use
from .errors import classify_exception, classify_http_error

if TYPE_CHECKING:
    from .azure import AzureOpenAIProvider
    from .bedrock.provider import BedrockProvider
    from .responses.provider import OpenAIResponsesProvider

__all__ = [
    "AzureOpenAIProvider",
    "BedrockProvider",
    "OpenAIResponsesProvider",
    "classify_exception",
    "classify_http_error",
]

# The providers are served on first use (PEP 562): every module that needs the port imports this package, and
# a program pays for the wires it uses, not for all of them.  Read once, a name is bound here.
_ON_FIRST_USE = {
    "AzureOpenAIProvider": "agentactors.providers.azure",
    "BedrockProvider": "agentactors.providers.bedrock.provider",
    "OpenAIResponsesProvider": "agentactors.providers.responses.provider",
}

__getattr__, __dir__ = on_first_use(globals(), _ON_FIRST_USE)
