"""A refusal that comes from the provider's own declaration says so, with the keyword that changes it.

An ``OpenAIProvider`` pointed at another server (``base_url``) does not assume that server honours a forced tool
choice or a JSON-schema response format (``carries_forced_tool_choice`` / ``carries_response_format`` default to
``False`` there).  Its refusal used to blame the model ("model 'gpt-4.1' ... cannot carry ..."), and a user tried
other models for nothing; it now names the declaration and how to make it.  A refusal of the model itself (a model
the table says takes neither) keeps the model's wording.
"""

from __future__ import annotations

import pytest

from agentactors import LLMRequest, Message, OpenAIProvider, ToolChoice
from agentactors.errors import ErrorKind, ProviderError, UnsupportedToolChoiceError
from agentactors.messages import ResponseFormat, ToolSpec
from agentactors.providers.port import check_forced_tool_choice, check_response_format

SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
TOOL = ToolSpec("lookup", "Look it up.", {"type": "object", "properties": {}})


def _other_server(*, forced: bool | None = None, formats: bool | None = None) -> OpenAIProvider:
    return OpenAIProvider("gpt-4.1", api_key="sk-test-0000", base_url="http://127.0.0.1:9/v1",
                          carries_forced_tool_choice=forced, carries_response_format=formats)


def test_a_response_format_refused_by_declaration_names_the_keyword() -> None:
    request = LLMRequest([Message.user("hi")], response_format=ResponseFormat("Person", SCHEMA))
    with pytest.raises(ProviderError) as caught:
        check_response_format(_other_server(), request, "gpt-4.1")
    assert caught.value.kind is ErrorKind.request and not caught.value.retryable
    assert "carries_response_format=True" in str(caught.value)
    assert "a model that supports it" not in str(caught.value)
    check_response_format(_other_server(formats=True), request, "gpt-4.1")  # declared: sent


def test_a_forced_choice_refused_by_declaration_names_the_keyword() -> None:
    request = LLMRequest([Message.user("hi")], tools=[TOOL], tool_choice=ToolChoice.required())
    with pytest.raises(UnsupportedToolChoiceError) as caught:
        check_forced_tool_choice(_other_server(), request, "gpt-4.1")
    assert "carries_forced_tool_choice=True" in str(caught.value)
    check_forced_tool_choice(_other_server(forced=True), request, "gpt-4.1")


def test_a_model_that_takes_neither_keeps_the_models_wording() -> None:
    official = OpenAIProvider("o1-mini", api_key="sk-test-0000")
    request = LLMRequest([Message.user("hi")], tools=[TOOL], tool_choice=ToolChoice.required())
    with pytest.raises(UnsupportedToolChoiceError) as caught:
        check_forced_tool_choice(official, request, "o1-mini")
    assert "model 'o1-mini'" in str(caught.value) and "carries_" not in str(caught.value)
