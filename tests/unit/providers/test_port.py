"""The provider port: one capability value, one reader with one default per capability, every holder reads it."""

from __future__ import annotations

import inspect
from typing import Any

import attrs
import pytest

from agentactors import Agent
from agentactors.messages import LLMRequest, LLMResponse, Message, StreamEnd, TextDelta
from agentactors.providers.anthropic.provider import AnthropicProvider
from agentactors.providers.codec import StreamDecoder, WireCodec
from agentactors.providers.gemini.provider import GeminiProvider
from agentactors.providers.openai.provider import OpenAIProvider
from agentactors.providers.port import (
    MEDIA_KINDS,
    Capabilities,
    CapabilityMembers,
    LLMProvider,
    capabilities_of,
    default_model_of,
    forced_tool_choice_carried_by,
    forced_tool_choice_for,
    name_of,
    native_tools_for,
    response_format_for,
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
        if name == "complete":
            return _never_answers
        if name in ("stream", "aclose"):
            return lambda *args: None
        raise RuntimeError(f"broken {name}")


async def _never_answers(*args: Any) -> Any:  # (a coroutine function: the decorators check complete is one)
    raise AssertionError("not called")


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
        async with decorate(inner).stream(REQ) as events:
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

PORT_MEMBERS = ("name", "default_model", "capabilities", "complete", "stream", "aclose")
# The first protocol's capability members: a compatibility surface every built-in provider still offers.
COMPAT_MEMBERS = (
    "carries_tools",
    "carries_forced_tool_choice",
    "supports_forced_tool_choice",
    "supports_response_format",
    "supports_streaming",
)
READERS = {
    "name": "name_of",
    "default_model": "default_model_of",
    "capabilities": "capabilities_of",
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
    compat = _members(CapabilityMembers)
    assert set(compat) == set(COMPAT_MEMBERS)
    assert set(COMPAT_MEMBERS) <= set(dir(LLMProvider))  # still declared there: the first protocol's names
    for name, member in (*members.items(), *compat.items()):
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
        chain = with_fallback(with_circuit_breaker(with_retry(with_timeout(provider))))
        assert isinstance(chain, LLMProvider)
        assert streaming_for(provider) is True and native_tools_for(provider) is True
        for holder in (provider, chain):  # the first protocol's members are still there
            assert all(hasattr(holder, member) for member in COMPAT_MEMBERS), type(holder).__name__
            assert capabilities_of(holder, "m") == holder.capabilities("m")


# --- one value: Capabilities ------------------------------------------------------------------------


def test_the_defaults_are_what_a_provider_that_says_nothing_gets() -> None:
    assert capabilities_of(object(), None) == Capabilities() == capabilities_of(Bare(), "m")
    assert capabilities_of(Raises(), "m") == Capabilities()  # every member raises: every default
    value = Capabilities()
    assert value.native_tools and value.streaming
    assert not (value.forced_tool_choice or value.response_format or value.thinking or value.parallel_tool_calls)
    assert value.media == frozenset()
    assert {"image", "document", "audio"} == MEDIA_KINDS


def test_the_value_is_frozen_checked_and_keyword_only() -> None:
    value = Capabilities(media=["image", "image"])
    assert value.media == frozenset({"image"})
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        value.thinking = True  # type: ignore[misc]
    with pytest.raises(TypeError):
        Capabilities(media="image")  # a string is not a set of kinds
    with pytest.raises(ValueError, match="video"):
        Capabilities(media={"video"})
    with pytest.raises(TypeError):
        Capabilities(thinking=1)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        Capabilities(True)  # type: ignore[call-arg]


def test_common_is_what_every_value_can_do() -> None:
    a = Capabilities(forced_tool_choice=True, response_format=True, thinking=True, media={"image", "audio"})
    b = Capabilities(forced_tool_choice=True, native_tools=False, media={"image", "document"})
    assert Capabilities.common([a, b]) == Capabilities(forced_tool_choice=True, native_tools=False, media={"image"})
    assert Capabilities.common([a]) == a
    with pytest.raises(ValueError):
        Capabilities.common([])


class OldStyle:
    """A user's provider written against the first protocol: capability members, no capabilities()."""

    name = "old"
    default_model = "old-1"
    carries_tools = False
    carries_forced_tool_choice = True
    supports_streaming = False

    def supports_forced_tool_choice(self, model: str | None) -> bool:
        return model != "no-force"

    def supports_response_format(self, model: str | None) -> bool:
        return model == "json"

    async def complete(self, request: LLMRequest) -> LLMResponse:  # pragma: no cover - never called
        raise AssertionError

    def stream(self, request: LLMRequest) -> Any:  # pragma: no cover - never called
        raise AssertionError

    async def aclose(self) -> None:  # pragma: no cover - never called
        pass


def test_a_provider_of_the_first_protocol_is_read_from_its_members() -> None:
    old = OldStyle()
    assert not isinstance(old, LLMProvider)  # and nothing rejects it for that
    assert capabilities_of(old, "json") == Capabilities(
        native_tools=False, forced_tool_choice=True, streaming=False, response_format=True
    )
    assert capabilities_of(old, "no-force").forced_tool_choice is False
    assert native_tools_for(old) is False and streaming_for(old) is False
    assert forced_tool_choice_for(old, "m") is True and forced_tool_choice_for(old, "no-force") is False
    assert response_format_for(old, "json") is True and response_format_for(old, "m") is False
    # Decorated, it is read the same way (but a decorator streams: it adapts the member).
    assert with_retry(old).capabilities("json") == attrs.evolve(capabilities_of(old, "json"), streaming=True)
    assert with_retry(old).supports_forced_tool_choice("no-force") is False


class NewStyle:
    """A provider of the slim port: capabilities(model) and nothing of the first protocol."""

    name = "new"
    default_model = "new-1"

    def __init__(self, answer: Any) -> None:
        self.answer = answer
        self.asked: list[str | None] = []

    def capabilities(self, model: str | None) -> Any:
        self.asked.append(model)
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer

    async def complete(self, request: LLMRequest) -> LLMResponse:  # pragma: no cover - never called
        raise AssertionError

    def stream(self, request: LLMRequest) -> Any:  # pragma: no cover - never called
        raise AssertionError

    async def aclose(self) -> None:  # pragma: no cover - never called
        pass


def test_the_readers_are_thin_functions_over_the_value() -> None:
    value = Capabilities(native_tools=False, forced_tool_choice=True, streaming=False, response_format=True)
    new = NewStyle(value)  # not an LLMProvider by isinstance (no first-protocol members): used all the same
    assert capabilities_of(new, "x") is value and new.asked == ["x"]
    assert native_tools_for(new) is False
    assert forced_tool_choice_for(new, "x") is True and forced_tool_choice_carried_by(new) is True
    assert streaming_for(new) is False
    assert response_format_for(new, "x") is True


def test_capabilities_win_over_the_old_members_and_a_broken_one_falls_back_to_them() -> None:
    class Both(OldStyle):
        def __init__(self, answer: Any) -> None:
            self.answer = answer

        def capabilities(self, model: str | None) -> Any:
            if isinstance(self.answer, Exception):
                raise self.answer
            return self.answer

    assert capabilities_of(Both(Capabilities(thinking=True)), "m") == Capabilities(thinking=True)
    from_members = capabilities_of(OldStyle(), "m")
    assert capabilities_of(Both(RuntimeError("broken")), "m") == from_members
    assert capabilities_of(Both({"native_tools": True}), "m") == from_members  # not a Capabilities
    assert capabilities_of(NewStyle(None), "m") == Capabilities()


# --- per provider and model -------------------------------------------------------------------------


def test_scripted_answers_for_a_fully_capable_model_narrowed_by_its_keywords() -> None:
    scripted = ScriptedProvider(["x"], rejects_forced_tool_choice=["old"], rejects_response_format=["plain"])
    assert scripted.capabilities("m") == Capabilities(
        forced_tool_choice=True, response_format=True, thinking=True, media=MEDIA_KINDS, parallel_tool_calls=True
    )
    assert forced_tool_choice_for(scripted, "old") is False and response_format_for(scripted, "plain") is False
    narrowed = ScriptedProvider(["x"], capabilities=Capabilities(forced_tool_choice=True, media={"image"}))
    assert narrowed.capabilities(None) == Capabilities(forced_tool_choice=True, media={"image"})
    assert narrowed.supports_response_format("m") is False  # the old members say the same
    assert ScriptedProvider(["x"], carries_tools=False).capabilities(None).native_tools is False
    with pytest.raises(TypeError):
        ScriptedProvider(["x"], capabilities={"thinking": True})  # type: ignore[arg-type]


def test_anthropic_answers_per_model_from_its_tables() -> None:
    p = AnthropicProvider("claude-sonnet-4-5", api_key="k")
    sonnet = p.capabilities(None)  # the default model
    assert sonnet == Capabilities(
        forced_tool_choice=True,
        response_format=True,
        thinking=True,
        media={"image", "document"},
        parallel_tool_calls=True,
    )
    # A thinking model variant rejects a forced tool choice: refused before sending, and read as no.
    assert p.capabilities("claude-3-7-sonnet-thinking").forced_tool_choice is False
    assert forced_tool_choice_for(with_retry(p), "claude-3-7-sonnet-thinking") is False
    haiku = p.capabilities("claude-3-5-haiku-latest")
    assert haiku.thinking is False and haiku.response_format is False and haiku.forced_tool_choice is True
    assert p.capabilities("claude-2.1").media == frozenset()
    assert "audio" not in p.capabilities("claude-opus-9").media  # unknown: what the wire carries


def test_gemini_answers_per_model_from_its_tables() -> None:
    p = GeminiProvider("gemini-2.5-flash", api_key="k")
    flash = p.capabilities(None)
    assert flash.response_format and flash.forced_tool_choice and flash.thinking
    assert flash.media == MEDIA_KINDS
    assert flash.parallel_tool_calls is False  # generateContent drops the setting
    assert response_format_for(p, "gemini-1.5-pro") is False
    old = p.capabilities("gemini-1.0-pro")
    assert not (old.response_format or old.forced_tool_choice or old.thinking) and old.media == frozenset()
    assert p.capabilities("gemini-2.0-flash").thinking is False


def test_openai_answers_per_model_from_its_tables_and_per_server() -> None:
    p = OpenAIProvider("gpt-4o", api_key="k")
    assert p.capabilities(None) == Capabilities(
        forced_tool_choice=True, response_format=True, media={"image", "document"}, parallel_tool_calls=True
    )
    o1_mini = p.capabilities("o1-mini")
    assert o1_mini.thinking and not o1_mini.forced_tool_choice and not o1_mini.response_format
    assert o1_mini.media == frozenset()
    assert "audio" in p.capabilities("gpt-4o-audio-preview").media
    compatible = OpenAIProvider("llama-3", api_key="k", base_url="http://localhost:8000/v1")
    assert not compatible.capabilities(None).forced_tool_choice and not compatible.capabilities(None).response_format


def test_a_subclass_overriding_an_old_member_answers_the_same_through_the_value() -> None:
    class NoForcing(OpenAIProvider):
        def supports_forced_tool_choice(self, model: str | None) -> bool:
            return False

    assert forced_tool_choice_for(NoForcing("gpt-4o", api_key="k"), "gpt-4o") is False


@pytest.mark.anyio
async def test_an_agent_runs_over_a_provider_of_the_slim_port_alone() -> None:
    @tool
    def echo(text: str) -> str:
        """Echo."""
        return text

    class Slim(NewStyle):
        def __init__(self, answer: Any) -> None:
            super().__init__(answer)
            self.requests: list[LLMRequest] = []

        async def complete(self, request: LLMRequest) -> LLMResponse:
            self.requests.append(request)
            return LLMResponse("slim answer")

    json_only = Slim(Capabilities(native_tools=False))
    result = await Agent(with_retry(json_only), tools=[echo]).run("q")
    assert result.content == "slim answer"
    assert json_only.requests[0].tools == ()  # it said no native tools: the JSON-fallback transport
