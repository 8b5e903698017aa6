"""Typed outputs behind an OpenAI-compatible ``base_url`` (vLLM, a proxy): auto falls to the prompted strategy,
and its ``output.strategy`` reason says why — the server is unknown, and which flags declare what it carries —
rather than blaming the model."""

from __future__ import annotations

from agentactors.messages import ResponseFormat
from agentactors.output.choice import CallShape, auto_strategy
from agentactors.providers.openai.provider import OpenAIProvider

FMT = ResponseFormat("answer", {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]})


def _reason(provider: OpenAIProvider) -> tuple[str, str]:
    return auto_strategy(CallShape(provider, "llama-3", native_tools=True, has_tools=False, fmt=FMT))


def test_an_unknown_compatible_server_is_named_as_the_reason() -> None:
    strategy, reason = _reason(OpenAIProvider("llama-3", base_url="http://127.0.0.1:8000/v1", api_key="k"))
    assert strategy == "prompted"
    assert "the server at http://127.0.0.1:8000/v1 is an unknown OpenAI-compatible server" in reason
    assert "carries_forced_tool_choice=True" in reason and "carries_response_format=True" in reason


def test_a_compatible_server_that_declares_its_flags_is_not_blamed() -> None:
    declared = OpenAIProvider(
        "llama-3", base_url="http://127.0.0.1:8000/v1", api_key="k", carries_forced_tool_choice=True,
        carries_response_format=True,
    )
    strategy, reason = _reason(declared)
    assert strategy == "tool" and "unknown" not in reason


def test_openais_own_endpoint_is_not_called_unknown() -> None:
    _, reason = _reason(OpenAIProvider("gpt-4o", api_key="k"))
    assert "unknown" not in reason
