"""The Anthropic Messages wire: ``POST {base_url}/v1/messages``.

One module per step, imports going one way (down this list)::

    provider.py    the codec (AnthropicWire, pure) and the provider (thin I/O around it, over http/)
    encode.py      requests: messages, tools, settings, parts, response format -> the body (pure)
    stream.py      its stream decoder (pure)
    decode.py      bodies, usage, stop reasons, tool calls, error refinement (pure)
    models.py      its models as data: the wire's name, settings and parts per model (docs/settings.md)
"""

from __future__ import annotations

from .encode import DEFAULT_MAX_TOKENS, encode_request, forced_choice_refusal, part_block, thinking_enabled
from .provider import (
    ANTHROPIC_VERSION,
    FORCED_TOOL_CHOICE_REJECTED,
    RESPONSE_FORMAT_REJECTED,
    AnthropicProvider,
    AnthropicWire,
    model_accepts_forced_tool_choice,
)
from .stream import AnthropicStreamDecoder

__all__ = [
    "ANTHROPIC_VERSION",
    "DEFAULT_MAX_TOKENS",
    "FORCED_TOOL_CHOICE_REJECTED",
    "RESPONSE_FORMAT_REJECTED",
    "AnthropicProvider",
    "AnthropicStreamDecoder",
    "AnthropicWire",
    "encode_request",
    "forced_choice_refusal",
    "model_accepts_forced_tool_choice",
    "part_block",
    "thinking_enabled",
]
