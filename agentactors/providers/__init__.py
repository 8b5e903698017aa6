"""Providers: the port, the HTTP adapter, the three vendor wires and the scripted test double.

One module per idea, imports going one way (down this list)::

    base.py                 the port: LLMProvider, one reader per capability, stream helpers
    scripted.py             ScriptedProvider, the deterministic test double
    openai.py               OpenAIWire (the codec) + OpenAIProvider
      _openai_models.py       its models as data: settings and parts per model (docs/settings.md)
      _openai_stream.py       its stream decoder
        _openai_decode.py       bodies, usage, finish reasons, tool calls, error refinement
    anthropic.py            the same for the Messages API
      _anthropic_models.py
      _anthropic_stream.py
        _anthropic_decode.py
    gemini.py               the same for generateContent (+ _gemini_schema.py, the schema sanitiser)
      _gemini_models.py
      _gemini_stream.py
        _gemini_decode.py
    http.py                 HTTPProvider: the thin httpx adapter every wire shares
    codec.py                the WireCodec / StreamDecoder protocols a wire implements
    _classify.py            HTTP failure -> ProviderError, shared by every wire
    _settings.py            a setting a model cannot carry: dropped (an event) or refused, shared
    _media.py               a part a model cannot carry, and the vendors' size limits, shared

Nothing here is imported by ``agentactors.errors``: the error tree is the layer below.
"""

from __future__ import annotations

from .errors import classify_exception, classify_http_error

__all__ = ["classify_exception", "classify_http_error"]
