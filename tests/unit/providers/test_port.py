"""The provider port's capabilities: one reader each, one default each, and every holder reads through them."""

from __future__ import annotations

import inspect
from typing import Any

import pytest

from agentactors import Agent
from agentactors.messages import LLMRequest, LLMResponse, Message, StreamEnd, TextDelta
from agentactors.providers.anthropic.provider import AnthropicProvider
from agentactors.providers.codec import StreamDecoder, WireCodec
from agentactors.providers.gemini.provider import GeminiProvider
from agentactors.providers.openai.provider import OpenAIProvider
from agentactors.providers.port import (
    LLMProvider,
    default_model_of,
    forced_tool_choice_carried_by,
    forced_tool_choice_for,
    name_of,
    native_tools_for,
    streaming_for,
)
from agentactors.providers.scripted import ScriptedProvider
from agentactors.resilience import with_circuit_breaker, with_fallback, with_retry, with_timeout
from agentactors.tools.registry import tool

REQ = LLMRequest([Message.user("hi")])


class Bare:
    """A duck-typed provider that declares no capability at all."""

    name = "bare"
    default_model = "bare-1"

    def __init__(self) -> None:
        self.requests: list[LLMRequest] = []

    async def complete(self, request: LLMRequest) -> LLMResponse:
        self.requests.append(request)
        return LLMResponse("bare answer")

    def stream(self, request: LLMRequest) -> Any:
        raise AssertionError("not expected to be called")

    async def aclose(self) -> None:
        pass


class Says:
    """A provider whose every capability is the given value."""

    def __init__(self, value: Any) -> None:
        self.name = value
        self.default_model = value
        self.carries_tools = value
        self.carries_forced_tool_choice = value
        self.supports_streaming = value

    def supports_forced_tool_choice(self, model: str | None) -> Any:
        return self.carries_forced_tool_choice

    async def complete(self, request: LLMRequest) -> LLMResponse:  # pragma: no cover - never called
        raise AssertionError

    def stream(self, request: LLMRequest) -> Any:  # pragma: no cover - never called
        raise AssertionError


class Raises:
    """A provider whose every capability raises when read."""

    def __getattr__(self, name: str) -> Any:
        if name in ("complete", "stream", "aclose"):
            return lambda *args: None
        raise RuntimeError(f"broken {name}")


class RaisesPerModel:
    carries_forced_tool_choice = True

    def supports_forced_tool_choice(self, model: str | None) -> bool:
        raise RuntimeError("broken")


# --- each reader: its default for a provider that lacks it, says something odd, or breaks ----------


def test_native_tools_default_yes_and_only_an_explicit_false_is_no() -> None:
    assert native_tools_for(object()) is True
    assert native_tools_for(Says(None)) is True
    assert native_tools_for(Says(0)) is True  # a non-bool is not an answer
    assert native_tools_for(Says("no")) is True
    assert native_tools_for(Raises()) is True
    assert native_tools_for(Says(True)) is True
    assert native_tools_for(Says(False)) is False


def test_forced_tool_choice_carried_default_no_and_only_an_explicit_true_is_yes() -> None:
    assert forced_tool_choice_carried_by(object()) is False
    assert forced_tool_choice_carried_by(Says(None)) is False
    assert forced_tool_choice_carried_by(Says(1)) is False
    assert forced_tool_choice_carried_by(Says("yes")) is False
    assert forced_tool_choice_carried_by(Raises()) is False
    assert forced_tool_choice_carried_by(Says(False)) is False
    assert forced_tool_choice_carried_by(Says(True)) is True


def test_forced_tool_choice_for_default_no() -> None:
    assert forced_tool_choice_for(object(), "m") is False
    assert forced_tool_choice_for(Says(1), "m") is False
    assert forced_tool_choice_for(Raises(), "m") is False  # reading the capability raised
    assert forced_tool_choice_for(RaisesPerModel(), "m") is False  # asking the model raised
    assert forced_tool_choice_for(Says(True), "m") is True

    class CarriesButPerModelIsNotCallable:
        carries_forced_tool_choice = True
        supports_forced_tool_choice = True

    class CarriesWithoutPerModel:
        carries_forced_tool_choice = True

    assert forced_tool_choice_for(CarriesButPerModelIsNotCallable(), "m") is False
    assert forced_tool_choice_for(CarriesWithoutPerModel(), "m") is True


def test_streaming_default_yes_unless_said_no_or_there_is_no_stream() -> None:
    assert streaming_for(Bare()) is True
    assert streaming_for(Says(None)) is True
    assert streaming_for(Says(0)) is True
    assert streaming_for(Raises()) is True
    assert streaming_for(Says(False)) is False
    assert streaming_for(object()) is False  # nothing to call

    class NotCallable:
        stream = "soon"

    assert streaming_for(NotCallable()) is False


def test_identity_readers_default_to_the_type_name_and_no_model() -> None:
    assert name_of(object()) == "object"
    assert name_of(Says("")) == "Says" and name_of(Says(3)) == "Says" and name_of(Raises()) == "Raises"
    assert name_of(Says("acme")) == "acme"
    assert default_model_of(object()) is None
    assert default_model_of(Says("")) is None and default_model_of(Raises()) is None
    assert default_model_of(Says("m-1")) == "m-1"


# --- the holders: decorators and chains forward through the readers --------------------------------


DECORATORS = [
    pytest.param(with_retry, id="retry"),
    pytest.param(with_circuit_breaker, id="breaker"),
    pytest.param(with_timeout, id="timeout"),
    pytest.param(lambda p: with_fallback(p), id="fallback"),
]


@pytest.mark.parametrize("decorate", DECORATORS)
def test_a_decorated_provider_has_the_capabilities_of_the_undecorated_one(decorate: Any) -> None:
    # A provider that does not say gets the same answers bare and decorated (decorators used to
    # answer "no native tools" for it while the agent answered "yes").
    for provider in (Bare(), Says(None), Raises(), Says(True), Says(False)):
        decorated = decorate(provider)
        assert decorated.carries_tools is native_tools_for(provider)
        assert decorated.carries_forced_tool_choice is forced_tool_choice_carried_by(provider)
        assert decorated.supports_forced_tool_choice("m") is forced_tool_choice_for(provider, "m")
        assert native_tools_for(decorated) is native_tools_for(provider)
        # A decorator always streams: its stream() adapts a provider that cannot.
        assert decorated.supports_streaming is True


def test_a_chain_is_the_and_of_its_members_readers() -> None:
    native = ScriptedProvider(["x"], name="native")
    json_only = ScriptedProvider(["x"], name="json", carries_tools=False)
    assert with_fallback(Bare(), native).carries_tools is True
    assert with_fallback(Bare(), json_only).carries_tools is False
    assert with_fallback(Bare(), native).carries_forced_tool_choice is False  # Bare does not say: no
    assert with_fallback(native, ScriptedProvider(["x"])).carries_forced_tool_choice is True


@pytest.mark.anyio
async def test_a_provider_that_says_it_cannot_stream_is_adapted_by_every_decorator() -> None:
    class CompleteOnly(Bare):
        supports_streaming = False

    for decorate in (with_retry, with_circuit_breaker, with_timeout, with_fallback):
        inner = CompleteOnly()
        async with decorate(inner).stream(REQ) as events:  # type: ignore[operator]
            got = [e async for e in events]
        assert got[0] == TextDelta("bare answer")
        assert isinstance(got[-1], StreamEnd) and got[-1].response.content == "bare answer"
        assert len(inner.requests) == 1


@pytest.mark.anyio
async def test_an_agent_over_a_decorated_provider_that_does_not_say_calls_tools_natively() -> None:
    @tool
    def echo(text: str) -> str:
        """Echo."""
        return text

    inner = Bare()
    result = await Agent(with_retry(inner), tools=[echo]).run("q")
    assert result.content == "bare answer"
    assert [spec.name for spec in inner.requests[0].tools] == ["echo"]  # native tools, not the JSON fallback


# --- the port itself -------------------------------------------------------------------------------

PORT_MEMBERS = (
    "name",
    "default_model",
    "carries_tools",
    "carries_forced_tool_choice",
    "supports_forced_tool_choice",
    "supports_response_format",
    "supports_streaming",
    "complete",
    "stream",
    "aclose",
)
READERS = {
    "name": "name_of",
    "default_model": "default_model_of",
    "carries_tools": "native_tools_for",
    "carries_forced_tool_choice": "forced_tool_choice_carried_by",
    "supports_forced_tool_choice": "forced_tool_choice_for",
    "supports_streaming": "streaming_for",
    "supports_response_format": "response_format_for",
}


def _members(protocol: type) -> dict[str, Any]:
    public = {k: v for k, v in vars(protocol).items() if not k.startswith("_")}
    return {k: v for k, v in public.items() if callable(v) or isinstance(v, property)}


def test_the_port_lists_every_capability_each_with_a_docstring_naming_its_reader() -> None:
    members = _members(LLMProvider)
    assert set(members) == set(PORT_MEMBERS)
    for name, member in members.items():
        doc = inspect.getdoc(member)
        assert doc, f"LLMProvider.{name} has no docstring"
        if name in READERS:
            assert READERS[name] in doc, f"LLMProvider.{name}'s docstring does not name its reader"
            assert "default" in doc, f"LLMProvider.{name}'s docstring does not say its default"
    for name in ("complete", "stream"):
        assert "Cancellation:" in (inspect.getdoc(members[name]) or "")


@pytest.mark.parametrize("protocol", [WireCodec, StreamDecoder])
def test_every_codec_member_has_a_docstring(protocol: type) -> None:
    members = _members(protocol)
    assert members
    for name, member in members.items():
        assert inspect.getdoc(member), f"{protocol.__name__}.{name} has no docstring"


def test_the_package_providers_implement_the_whole_port() -> None:
    providers = [
        ScriptedProvider(["x"]),
        OpenAIProvider("m", api_key="k"),
        AnthropicProvider("m", api_key="k"),
        GeminiProvider("m", api_key="k"),
    ]
    for provider in providers:
        assert isinstance(provider, LLMProvider), type(provider).__name__
        assert isinstance(with_fallback(with_circuit_breaker(with_retry(with_timeout(provider)))), LLMProvider)
        assert streaming_for(provider) is True and native_tools_for(provider) is True
