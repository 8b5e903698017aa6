"""The Anthropic Messages wire: ``POST {base_url}/v1/messages``.

One module per step, imports going one way (down this list)::

    provider.py    the codec (AnthropicWire) and the provider (thin I/O around it)
    models.py      its models as data: settings and parts per model (docs/settings.md)
    stream.py      its stream decoder
    decode.py      bodies, usage, stop reasons, tool calls, error refinement
"""

from __future__ import annotations

from .provider import (
    ANTHROPIC_VERSION,
    DEFAULT_MAX_TOKENS,
    FORCED_TOOL_CHOICE_REJECTED,
    RESPONSE_FORMAT_REJECTED,
    AnthropicProvider,
    AnthropicStreamDecoder,
    AnthropicWire,
    encode_request,
    forced_choice_refusal,
    model_accepts_forced_tool_choice,
    part_block,
    thinking_enabled,
)

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
