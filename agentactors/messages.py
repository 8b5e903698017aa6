"""The data model: messages, tool calls and specs, requests, responses, stream events.

Every class here is a frozen, slotted ``attrs`` class validated at construction, so
a malformed value fails where it is built rather than deep inside a codec.  The
internal conversation is OpenAI-chat shaped (system / user / assistant with tool
calls / tool results); each vendor codec maps it onto its own wire.

Opaque provider data (Anthropic thinking blocks with signatures, Gemini thought
signatures) travels on :attr:`Message.provider_data` and :attr:`ToolCall.provider_data`
keyed by wire name (``"anthropic"``, ``"gemini"``, ``"openai"``).  Codecs store it as
received and replay it untouched on the next request.

A user message or a tool result may carry content parts (:mod:`agentactors.parts`: text,
images, documents, audio): ``Message.user([Text("What is this?"), Image(data=png)])``.
``Message.content`` is always the text (the text parts joined by newlines) and
``Message.parts`` every part in order; a text-only message stores no parts at all, so the
common case costs nothing.  The generation settings of a request (``temperature`` …
``timeout``) are :class:`~agentactors.settings.ModelSettings`' fields, one field each.
"""

from __future__ import annotations

import enum
import json
import numbers
import operator
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Final, Literal, TypeAlias, cast

import attrs

from ._json import loads_bounded
from ._slots import draft
from .parts import Audio, Document, Image, MediaPart, Part, Text, is_part
from .settings import (
    NO_STOP,
    CachePolicy,
    ModelSettings,
    check_max_tokens,
    check_reasoning_effort,
    check_seed,
    check_stop,
    check_temperature,
    check_thinking_budget,
    check_timeout,
    check_top_p,
    to_cache,
    to_stop,
)

__all__ = [
    "Audio",
    "Document",
    "Image",
    "MediaPart",
    "Part",
    "Text",
    "LLMRequest",
    "LLMResponse",
    "Message",
    "ReasoningDelta",
    "ResponseFormat",
    "Role",
    "StopReason",
    "StreamEnd",
    "StreamEvent",
    "TextDelta",
    "ToolCall",
    "ToolCallDelta",
    "ToolCallEnd",
    "ToolCallStart",
    "ToolChoice",
    "ToolSpec",
    "Usage",
    "all_tool_calls",
    "parse_arguments",
    "response_of",
    "text_message",
]

Role: TypeAlias = Literal["system", "user", "assistant", "tool"]
_ROLES = frozenset(("system", "user", "assistant", "tool"))
# Every vendor accepts this; Gemini and Anthropic reject wider names with a 400.
# fullmatch, not match: "$" also matches before a final newline, and "search\n" is no name a vendor takes.
_TOOL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]{0,63}")


# The converters that only copy into a tuple or a dict are the builtins themselves at run time: an
# attrs converter is called on every instance built (every message, call and response of every run),
# and a function of ours around ``tuple`` is one more Python frame each time.  The type checker sees
# the typed signatures (attrs' mypy plugin reads a converter's parameter type; it cannot read the
# builtins' overloads).
if TYPE_CHECKING:

    def _to_calls(value: Iterable[ToolCall]) -> tuple[ToolCall, ...]: ...

    def _to_dict(value: Mapping[str, Any]) -> dict[str, Any]: ...

    def _to_specs(value: Iterable[ToolSpec]) -> tuple[ToolSpec, ...]: ...

    # What ``Message(parts=...)`` accepts: one part or any iterable of parts.  At run time the field has no
    # converter at all (None): a text message, the common case, runs nothing for it, and given parts become
    # a tuple in Message._settle_parts — so this signature is for the type checker alone, which reads the
    # field's stored type (a tuple, or None) from its annotation.
    def _given_parts(value: Part | Iterable[Part] | None) -> tuple[Part, ...] | None: ...

else:
    _to_calls = _to_specs = tuple
    _to_dict = dict
    _given_parts = None


def _frozen_mapping(value: Mapping[str, Any] | None) -> dict[str, Any] | None:
    return None if value is None else dict(value)


def _to_parts(value: Part | Iterable[Part] | None) -> tuple[Part, ...] | None:
    if value is None:
        return None
    if is_part(value):
        return (value,)  # type: ignore[return-value]
    given = cast(object, value)
    # A string, bytes and a mapping are iterable, but not parts (a dict would give its keys); say what was given
    # rather than fail on its first item or with "object is not iterable".
    if isinstance(given, str | bytes | bytearray | Mapping) or not isinstance(given, Iterable):
        shown = "a string" if isinstance(given, str) else type(given).__name__
        raise TypeError(
            f"parts must be content parts (Text, Image, Document, Audio) or an iterable of them, not {shown}"
        )
    return tuple(value)  # type: ignore[arg-type]


def _text_and_parts(value: str | Part | Iterable[Part]) -> tuple[str, tuple[Part, ...] | None]:
    """A factory argument as (content, parts): a str is text only; ``None`` is neither (not an empty message)."""
    if isinstance(value, str):
        return value, None
    if cast(object, value) is None:
        raise TypeError("a message's content is a str or content parts, not None")
    return "", _to_parts(value)


def parse_arguments(raw: str | None, *, required: bool = False) -> tuple[dict[str, Any], str | None]:
    """Parse a tool call's raw JSON arguments.

    Returns ``(arguments, error)``.  ``error`` is ``None`` on success,
    ``"empty"`` when the text is empty but the schema requires properties, and
    ``"unparseable"`` when the text is not a JSON object (truncated at
    ``max_tokens``, for instance).  Unparseable text is never silently ``{}``:
    the caller keeps the raw text and the marker so the tool executor can tell
    the model what went wrong instead of running the tool.

    An object naming one key twice is ``"unparseable"`` too (``agentactors._json.bound_problem``
    says which key): Python's parser would keep the last value silently, and which one the model
    meant is a guess.  NaN, Infinity and lone surrogates parse: the tool's validator refuses them,
    with the place they are at, whichever way the arguments arrived (text or an object).
    """
    if raw is None or not raw.strip():
        return {}, ("empty" if required else None)
    try:
        value = loads_bounded(raw, what="the arguments", unique_keys=True)
    except ValueError:  # not JSON, or past the depth and size policy (agentactors._json)
        return {}, "unparseable"
    if not isinstance(value, dict):
        return {}, "unparseable"
    return value, None


def _check_provider_data(owner: str, data: Mapping[str, Any]) -> None:
    """Provider data is keyed by wire name: a key that is not a str is no wire's, and no journal stores it."""
    for key in data:
        if not isinstance(key, str):
            raise TypeError(f"{owner}.provider_data is keyed by wire name (a str), not {type(key).__name__}")


def _optional_str(owner: str, name: str, value: object) -> None:
    if value is not None and not isinstance(value, str):
        raise TypeError(f"{owner}.{name} must be a str or None, not {type(value).__name__}")


@attrs.frozen(slots=True)
class ToolCall:
    """One call the model asked for.

    ``arguments`` is the parsed object; ``raw_arguments`` the text as the vendor
    sent it (``None`` when the wire carries an object, as Anthropic and Gemini
    do).  ``arguments_error`` is ``"unparseable"`` or ``"empty"`` when the raw
    text did not yield an object; ``arguments_error_detail`` says why (e.g. the
    finish reason that cut it off).
    """

    id: str
    name: str
    arguments: dict[str, Any] = attrs.field(factory=dict, converter=_to_dict)
    raw_arguments: str | None = None
    arguments_error: str | None = None
    arguments_error_detail: str | None = None
    provider_data: dict[str, Any] | None = attrs.field(default=None, converter=_frozen_mapping)

    def __attrs_post_init__(self) -> None:
        # The checks here rather than as validators: a call each less, per call a model makes.
        if not isinstance(self.id, str):
            raise TypeError(f"ToolCall.id must be a str, not {type(self.id).__name__}")
        if not isinstance(self.name, str) or not self.name:
            raise ValueError("ToolCall.name must be a non-empty string")
        error = self.arguments_error
        if error is not None and error not in ("unparseable", "empty"):
            raise ValueError(f"ToolCall.arguments_error must be 'unparseable', 'empty' or None, not {error!r}")
        # What the wires send (the raw text) and a journal stores (names as JSON keys) must be text.
        for key in self.arguments:
            if not isinstance(key, str):
                raise TypeError(f"ToolCall.arguments: argument names must be str, not {type(key).__name__}")
        if self.raw_arguments is not None or self.arguments_error_detail is not None or self.provider_data is not None:
            self._check_optional_fields()  # one test for a call built by hand (a stand-in model's): none of them

    def _check_optional_fields(self) -> None:
        _optional_str("ToolCall", "raw_arguments", self.raw_arguments)
        _optional_str("ToolCall", "arguments_error_detail", self.arguments_error_detail)
        if self.provider_data is not None:
            _check_provider_data("ToolCall", self.provider_data)

    @classmethod
    def from_raw(
        cls,
        id: str,
        name: str,
        raw: str | None,
        *,
        required: bool = False,
        provider_data: Mapping[str, Any] | None = None,
    ) -> ToolCall:
        """Build a call from raw JSON text, marking it when the text does not parse."""
        args, error = parse_arguments(raw, required=required)
        return cls(
            id=id,
            name=name,
            arguments=args,
            raw_arguments=raw,
            arguments_error=error,
            provider_data=provider_data,
        )

    @property
    def arguments_json(self) -> str:
        """The arguments as JSON text: the raw text when it parsed, else the object re-encoded."""
        if self.raw_arguments is not None and self.arguments_error is None and self.raw_arguments.strip():
            return self.raw_arguments
        return json.dumps(self.arguments, separators=(",", ":"), ensure_ascii=False)


@attrs.frozen(slots=True)
class Message:
    """One conversation message.  Build with :meth:`system`, :meth:`user`, :meth:`assistant`, :meth:`tool`.

    ``provider_data`` holds opaque vendor data (thinking blocks with signatures,
    thought signatures) keyed by wire, replayed untouched by that wire's codec.
    ``reasoning`` is the model's structured reasoning text (kept for the record,
    not replayed unless a codec needs it).

    ``parts`` (user and tool messages only) are content parts — one part, or any iterable
    of them, kept as a tuple: ``content`` is then their text parts joined by newlines
    (pass no ``content``, or that text).  Parts
    that are all :class:`~agentactors.parts.Text` are just text: such a message
    stores none, and equals the message built from the joined string.
    """

    role: Role
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = attrs.field(default=(), converter=_to_calls)
    tool_call_id: str | None = None
    name: str | None = None
    reasoning: str = ""
    provider_data: dict[str, Any] | None = attrs.field(default=None, converter=_frozen_mapping)
    is_error: bool = False
    # None for text: a text-only message allocates no tuple (W1/W3 build millions of them), and no converter
    # runs for it either: parts given as any iterable become a tuple in _settle_parts (_given_parts is None at
    # run time; it types what the parameter accepts).
    _parts: tuple[Part, ...] | None = attrs.field(default=None, alias="parts", converter=_given_parts)

    def __attrs_post_init__(self) -> None:
        # The checks of role and content here rather than as validators: a call each less, per message.
        if not isinstance(self.role, str):  # (a dict is not hashable: the set lookup would raise its own error)
            raise TypeError(f"Message.role must be one of {sorted(_ROLES)}, not a {type(self.role).__name__}")
        if self.role not in _ROLES:
            raise ValueError(f"Message.role must be one of {sorted(_ROLES)}, not {self.role!r}")
        if not isinstance(self.content, str):
            raise TypeError(f"Message.content must be a str, not {type(self.content).__name__}")
        # Fields a wire sends as strings and a journal stores by type: one test for the usual message.
        if (
            not isinstance(self.reasoning, str)
            or type(self.is_error) is not bool
            or (self.name is not None and not isinstance(self.name, str))
        ):
            raise self._fields_error()
        if self.provider_data is not None:
            _check_provider_data("Message", self.provider_data)
        if self.role == "tool":
            if not self.tool_call_id:
                raise ValueError("a tool message needs the id of the call it answers (tool_call_id)")
            if not isinstance(self.tool_call_id, str):
                raise TypeError(f"Message.tool_call_id must be a str, not {type(self.tool_call_id).__name__}")
        elif self.tool_call_id is not None:
            raise ValueError(f"only tool messages carry a tool_call_id, not {self.role!r} messages")
        if self.tool_calls and self.role != "assistant":
            raise ValueError(f"only assistant messages carry tool calls, not {self.role!r} messages")
        for call in self.tool_calls:
            if not isinstance(call, ToolCall):
                raise TypeError(f"tool_calls must hold ToolCall objects, not {type(call).__name__}")
        if self._parts is not None:
            self._settle_parts(self._parts)

    def _fields_error(self) -> TypeError:
        """The ``TypeError`` for whichever of ``reasoning``, ``is_error``, ``name`` is of the wrong type."""
        reasoning: object = self.reasoning  # (typed as given, not as declared: the point is they may differ)
        is_error: object = self.is_error
        if not isinstance(reasoning, str):
            return TypeError(f"Message.reasoning must be a str, not {type(reasoning).__name__}")
        if type(is_error) is not bool:
            return TypeError(f"Message.is_error must be a bool, not {type(is_error).__name__}")
        return TypeError(f"Message.name must be a str or None, not {type(self.name).__name__}")

    def _settle_parts(self, given: Part | Iterable[Part]) -> None:
        """Check the parts; set ``content`` to their text, and keep them (a tuple) only when one is not text."""
        parts = _to_parts(given) or ()
        texts: list[str] = []
        media = False
        for part in parts:
            if isinstance(part, Text):
                texts.append(part.text)
            elif isinstance(part, Image | Document | Audio):
                media = True
            else:
                raise TypeError(
                    f"message parts are Text, Image, Document or Audio, not {type(part).__name__}"
                )
        if media and self.role not in ("user", "tool"):
            raise ValueError(f"only user and tool messages carry images, documents or audio, not {self.role!r}")
        text = "\n".join(texts)
        if self.content and self.content != text:
            raise ValueError("a message with parts takes its content from their text: pass no content=")
        object.__setattr__(self, "content", text)
        object.__setattr__(self, "_parts", parts if media else None)

    @property
    def parts(self) -> tuple[Part, ...]:
        """Every part, in order: the stored parts, or the content as one :class:`Text` (none when empty)."""
        if self._parts is not None:
            return self._parts
        return (Text(self.content),) if self.content else ()

    @property
    def media(self) -> tuple[MediaPart, ...]:
        """The parts that are not text (images, documents, audio); ``()`` for a text message."""
        if self._parts is None:
            return ()
        return tuple(p for p in self._parts if not isinstance(p, Text))

    def with_text(self, text: str) -> Message:
        """The same message with its text replaced by ``text``; media parts are kept, after the text.

        (The loop appends notes to tool results this way, without losing an image a tool returned.)
        """
        if self._parts is None:
            return attrs.evolve(self, content=text)
        return attrs.evolve(self, content="", parts=((Text(text),) if text else ()) + self.media)

    @classmethod
    def system(cls, text: str) -> Message:
        return cls(role="system", content=text)

    @classmethod
    def user(cls, text: str | Part | Iterable[Part]) -> Message:
        """A user message: a str, or content parts (``[Text(...), Image(...)]``)."""
        if isinstance(text, str):
            return cls("user", text)  # positional, here and below: keywords cost a good part of building one
        content, parts = _text_and_parts(text)
        return cls(role="user", content=content, parts=parts)

    @classmethod
    def assistant(
        cls,
        text: str = "",
        tool_calls: Iterable[ToolCall] = (),
        *,
        reasoning: str = "",
        provider_data: Mapping[str, Any] | None = None,
    ) -> Message:
        # In field order: role, content, tool_calls, tool_call_id, name, reasoning, provider_data.
        return cls("assistant", text, tuple(tool_calls), None, None, reasoning, provider_data)

    @classmethod
    def tool(
        cls, call_id: str, content: str | Part | Iterable[Part], name: str | None = None, *, is_error: bool = False
    ) -> Message:
        """A tool result: text, or content parts (an image a tool returned) on the wires that take them."""
        if isinstance(content, str):
            # In field order: role, content, tool_calls, tool_call_id, name, reasoning, provider_data, is_error.
            return cls("tool", content, (), call_id, name, "", None, is_error)
        text, parts = _text_and_parts(content)
        return cls(role="tool", content=text, tool_call_id=call_id, name=name, is_error=is_error, parts=parts)


# What text_message fills, field by field, then makes a Message (agentactors._slots).
_new = object.__new__
_MessageDraft = draft(Message, "role content tool_calls tool_call_id name reasoning provider_data is_error parts")


def text_message(
    role: Role,
    content: str,
    tool_calls: tuple[ToolCall, ...],
    tool_call_id: str | None,
    name: str | None,
    reasoning: str,
    provider_data: Mapping[str, Any] | None,
    is_error: bool,
) -> Message:
    """``Message(role, content, tool_calls, tool_call_id, name, reasoning, provider_data, is_error)``: a message
    without media parts, its fields set one by one.

    The same message as the constructor's, with its checks of role, content, call id and tool calls made
    inline — arguments that fail one are handed to the constructor, which raises its error — in about half the
    time: the loop builds four messages per run (the prompt, the model's two turns, a tool's result).  The
    constructor's type checks of ``name``, ``reasoning``, ``is_error`` and ``provider_data`` are not made here:
    the loop passes its own values, of those types by construction.  Every argument is positional.
    """
    if (
        type(content) is not str
        or role not in _ROLES
        or (not tool_call_id if role == "tool" else tool_call_id is not None)
        or (tool_calls and (role != "assistant" or type(tool_calls) is not tuple or not all_tool_calls(tool_calls)))
    ):
        return Message(role, content, tool_calls, tool_call_id, name, reasoning, provider_data, is_error)
    message: Any = _new(_MessageDraft)
    message.role = role
    message.content = content
    message.tool_calls = tool_calls
    message.tool_call_id = tool_call_id
    message.name = name
    message.reasoning = reasoning
    message.provider_data = None if provider_data is None else dict(provider_data)  # the converter's copy
    message.is_error = is_error
    message.parts = None
    message.__class__ = Message
    made: Message = message
    return made


def all_tool_calls(items: Iterable[Any]) -> bool:
    """Whether every item is a :class:`ToolCall` (``True`` for none): the fast constructors' check."""
    for item in items:  # noqa: SIM110 - a loop, not all(<generator>): a generator is a frame per call
        if not isinstance(item, ToolCall):
            return False
    return True


@attrs.frozen(slots=True)
class ToolSpec:
    """A tool as the model sees it: name, description and a JSON Schema for its parameters."""

    name: str = attrs.field()
    description: str = attrs.field(default="")
    parameters: dict[str, Any] = attrs.field(
        factory=lambda: {"type": "object", "properties": {}}, converter=_to_dict
    )

    @name.validator
    def _check_name(self, _: attrs.Attribute[str], value: str) -> None:
        if not isinstance(value, str) or not _TOOL_NAME.fullmatch(value):
            raise ValueError(
                f"tool name {value!r} is invalid: use 1-64 letters, digits, '_', '.' or '-', "
                "starting with a letter or '_'"
            )

    @description.validator
    def _check_description(self, _: attrs.Attribute[str], value: str) -> None:
        if not isinstance(value, str):  # every wire sends it as a string; null is a 400 on some
            raise TypeError(f"tool {self.name!r}: description must be a str, not {type(value).__name__}")

    @parameters.validator
    def _check_parameters(self, _: attrs.Attribute[dict[str, Any]], value: dict[str, Any]) -> None:
        if value.get("type", "object") != "object":
            raise ValueError(f"tool {self.name!r}: parameters must be a JSON Schema of type 'object'")

    @property
    def required(self) -> tuple[str, ...]:
        req = self.parameters.get("required", ())
        return tuple(req) if isinstance(req, list | tuple) else ()


@attrs.frozen(slots=True)
class ToolChoice:
    """How the model may use tools: ``auto``, ``none``, ``required`` (some tool) or ``tool`` (this one).

    ``required`` and ``tool`` are the *forced* modes; not every model accepts them
    (see :func:`agentactors.forced_tool_choice_for`).
    """

    mode: Literal["auto", "none", "required", "tool"] = attrs.field()
    name: str | None = None

    _MODES: ClassVar[frozenset[str]] = frozenset(("auto", "none", "required", "tool"))

    @mode.validator
    def _check_mode(self, _: attrs.Attribute[str], value: str) -> None:
        if value not in self._MODES:
            raise ValueError(f"ToolChoice.mode must be one of {sorted(self._MODES)}, not {value!r}")

    def __attrs_post_init__(self) -> None:
        if self.mode == "tool" and not self.name:
            raise ValueError("ToolChoice.tool(name) needs the name of the tool to force")
        if self.mode != "tool" and self.name is not None:
            raise ValueError(f"ToolChoice mode {self.mode!r} takes no tool name")

    @classmethod
    def auto(cls) -> ToolChoice:
        return _AUTO

    @classmethod
    def none(cls) -> ToolChoice:
        return _NONE

    @classmethod
    def required(cls) -> ToolChoice:
        return _REQUIRED

    @classmethod
    def tool(cls, name: str) -> ToolChoice:
        return cls("tool", name)

    @property
    def forced(self) -> bool:
        """True for ``required`` and ``tool``: the modes some models reject."""
        return self.mode in ("required", "tool")


_AUTO = ToolChoice("auto")
_NONE = ToolChoice("none")
_REQUIRED = ToolChoice("required")


_FORMAT_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")  # fullmatch, as _TOOL_NAME


@attrs.frozen(slots=True)
class ResponseFormat:
    """A JSON-schema response format: the answer text must be JSON matching ``schema``.

    Each wire carries it in its own field (OpenAI ``response_format``, Anthropic
    ``output_config.format``, Gemini ``generationConfig.responseJsonSchema``); a provider whose
    wire or model cannot carry it raises a request-kind error before sending.  ``name`` (1-64
    letters, digits, ``_`` or ``-``) and ``strict`` are what OpenAI's field takes; the other wires
    use the schema alone.  ``schema`` is plain JSON Schema (each codec fits it to its wire).
    """

    name: str = attrs.field()
    schema: dict[str, Any] = attrs.field(converter=_to_dict)
    strict: bool = True
    description: str | None = None

    @name.validator
    def _check_name(self, _: attrs.Attribute[str], value: str) -> None:
        if not isinstance(value, str) or not _FORMAT_NAME.fullmatch(value):
            raise ValueError(f"a response format's name must be 1-64 letters, digits, '_' or '-', not {value!r}")


class StopReason(enum.StrEnum):
    """Why the model stopped, mapped from every vendor's own vocabulary."""

    end_turn = "end_turn"
    tool_use = "tool_use"
    max_tokens = "max_tokens"
    stop_sequence = "stop_sequence"
    content_filter = "content_filter"
    pause_turn = "pause_turn"
    other = "other"


@attrs.frozen(slots=True)
class Usage:
    """Token counts for one response (or, summed with ``+``, for a run).

    Every count is an ``int`` from 0 to ``2**63 - 1`` (what any database's integer column takes): what is
    given that is not one is read as ``0`` — "not reported" — as the wires read a vendor's usage
    (``token_count``).  A provider written
    against a vendor SDK passes on what the SDK holds: ``None`` for a count it did not get, a NaN (Python's
    ``json`` reads one), a string, a negative number.  Refusing those would lose the answer the vendor had
    already given; keeping them would break what sums them (``None + 1``; a NaN budget admits everything)
    and what stores them (a journal that writes ``NaN`` and then cannot read ``int(NaN)`` back).  So:

    * an ``int`` (not a ``bool``) in that range is itself; an integer-like number
      (``numpy.int64``) is the ``int`` it is;
    * a finite float in that range is its whole part (``12.0`` is 12);
    * anything else — ``None``, NaN, ±infinity, a negative or larger number, a ``bool``, a string (even
      ``"12"``: a count is a number, and text read as one invites ``"1e3"`` and ``" 12 "``) — is ``0``.

    Normalised in the constructor, so every Usage there is can be summed, priced, journaled and read back;
    the check is twelve type tests for counts that are already ints (the wires'), and the run's own sums
    (``+``) skip it.

    ``cache_write_1h_tokens`` is the part of ``cache_write_tokens`` written with the 1-hour TTL (Anthropic's
    ``cache_creation.ephemeral_1h_input_tokens``, Bedrock's ``cacheDetails``): the vendor bills it at its own
    rate (2x input against 1.25x for the 5-minute writes), so :class:`~agentactors.pricing.Price` needs it apart.
    It is not another prompt count: the prompt is what it was without it.

    The audio counts are parts of the others, as the vendors report them and bill them at their own rates (an
    audio prompt token of ``gemini-2.5-flash`` costs 3.3 times a text one, of ``gpt-realtime`` 8 times):
    ``input_audio_tokens`` the prompt's audio tokens, cached ones included (OpenAI's
    ``prompt_tokens_details.audio_tokens``, Gemini's ``AUDIO`` entry of ``promptTokensDetails``);
    ``cache_audio_read_tokens`` the audio part of ``cache_read_tokens`` (Gemini's ``cacheTokensDetails``);
    ``output_audio_tokens`` the audio part of ``output_tokens`` (``completion_tokens_details.audio_tokens``,
    ``candidatesTokensDetails``).  Keyword-only: the positional order stays that of the first six.

    The image counts are parts of the others the same way (an image an image model draws costs 12 times a text
    token of ``gemini-2.5-flash-image``, 10 times of ``gemini-3-pro-image-preview``): ``input_image_tokens`` the
    prompt's image tokens, cached ones included (the ``IMAGE`` and ``DOCUMENT`` entries of Gemini's
    ``promptTokensDetails`` — a PDF page is an image to Gemini, and billed as one); ``cache_image_read_tokens``
    the image part of ``cache_read_tokens`` (``cacheTokensDetails``); ``output_image_tokens`` the image part of
    ``output_tokens`` (``candidatesTokensDetails``).  Keyword-only too.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0
    cache_write_1h_tokens: int = 0
    input_audio_tokens: int = attrs.field(default=0, kw_only=True)
    cache_audio_read_tokens: int = attrs.field(default=0, kw_only=True)
    output_audio_tokens: int = attrs.field(default=0, kw_only=True)
    input_image_tokens: int = attrs.field(default=0, kw_only=True)
    cache_image_read_tokens: int = attrs.field(default=0, kw_only=True)
    output_image_tokens: int = attrs.field(default=0, kw_only=True)

    def __attrs_post_init__(self) -> None:
        i, o, r, w, t, h = (
            self.input_tokens, self.output_tokens, self.cache_read_tokens, self.cache_write_tokens,
            self.reasoning_tokens, self.cache_write_1h_tokens,
        )
        if (
            type(i) is int and 0 <= i <= _MAX_TOKEN_COUNT
            and type(o) is int and 0 <= o <= _MAX_TOKEN_COUNT
            and type(r) is int and 0 <= r <= _MAX_TOKEN_COUNT
            and type(w) is int and 0 <= w <= _MAX_TOKEN_COUNT
            and type(t) is int and 0 <= t <= _MAX_TOKEN_COUNT
            and type(h) is int and 0 <= h <= _MAX_TOKEN_COUNT
            and type(a := self.input_audio_tokens) is int and 0 <= a <= _MAX_TOKEN_COUNT
            and type(c := self.cache_audio_read_tokens) is int and 0 <= c <= _MAX_TOKEN_COUNT
            and type(u := self.output_audio_tokens) is int and 0 <= u <= _MAX_TOKEN_COUNT
            and type(m := self.input_image_tokens) is int and 0 <= m <= _MAX_TOKEN_COUNT
            and type(g := self.cache_image_read_tokens) is int and 0 <= g <= _MAX_TOKEN_COUNT
            and type(x := self.output_image_tokens) is int and 0 <= x <= _MAX_TOKEN_COUNT
        ):
            return
        for name in _USAGE_FIELDS:
            object.__setattr__(self, name, _token_count(getattr(self, name)))

    def __add__(self, other: Usage) -> Usage:
        if not isinstance(other, Usage):
            return NotImplemented
        # Counts already checked: the sum is filled as a draft (agentactors._slots), only capped (inline, not
        # min(): a call each), so that it stays a count a store reads back as itself.
        top = _MAX_TOKEN_COUNT
        total: Any = _new(_UsageDraft)
        n = self.input_tokens + other.input_tokens
        total.input_tokens = n if n <= top else top
        n = self.output_tokens + other.output_tokens
        total.output_tokens = n if n <= top else top
        n = self.cache_read_tokens + other.cache_read_tokens
        total.cache_read_tokens = n if n <= top else top
        n = self.cache_write_tokens + other.cache_write_tokens
        total.cache_write_tokens = n if n <= top else top
        n = self.reasoning_tokens + other.reasoning_tokens
        total.reasoning_tokens = n if n <= top else top
        n = self.cache_write_1h_tokens + other.cache_write_1h_tokens
        total.cache_write_1h_tokens = n if n <= top else top
        n = self.input_audio_tokens + other.input_audio_tokens
        total.input_audio_tokens = n if n <= top else top
        n = self.cache_audio_read_tokens + other.cache_audio_read_tokens
        total.cache_audio_read_tokens = n if n <= top else top
        n = self.output_audio_tokens + other.output_audio_tokens
        total.output_audio_tokens = n if n <= top else top
        n = self.input_image_tokens + other.input_image_tokens
        total.input_image_tokens = n if n <= top else top
        n = self.cache_image_read_tokens + other.cache_image_read_tokens
        total.cache_image_read_tokens = n if n <= top else top
        n = self.output_image_tokens + other.output_image_tokens
        total.output_image_tokens = n if n <= top else top
        total.__class__ = Usage
        made: Usage = total
        return made

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens


# The largest token count a Usage holds (a signed 64-bit integer's: any database column takes it).
_MAX_TOKEN_COUNT: Final = 2**63 - 1

_USAGE_FIELDS: Final = (
    "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens",
    "cache_write_1h_tokens", "input_audio_tokens", "cache_audio_read_tokens", "output_audio_tokens",
    "input_image_tokens", "cache_image_read_tokens", "output_image_tokens",
)
_UsageDraft = draft(Usage, " ".join(_USAGE_FIELDS))



def _token_count(value: object) -> int:
    """``value`` as a token count (see :class:`Usage`): itself, its whole part, or 0 for what is not one."""
    if isinstance(value, bool | str | bytes):
        return 0
    try:
        count = operator.index(value)  # type: ignore[arg-type]  # an int, or an int-like (numpy.int64)
    except TypeError:
        if not isinstance(value, numbers.Real):
            return 0
        try:
            number = float(value)
        except (TypeError, ValueError, OverflowError):
            return 0
        if not 0.0 <= number <= _MAX_TOKEN_COUNT:  # NaN and the infinities too
            return 0
        count = int(number)
    return count if 0 <= count <= _MAX_TOKEN_COUNT else 0


# The default of a response's usage: a Usage is frozen, so every response without one shares it.
_NO_USAGE = Usage()


_NO_STOP_TYPE = type(NO_STOP)  # (a pickled copy of NO_STOP is another object of its type)


def _to_strings(value: str | Iterable[str] | None) -> tuple[str, ...]:
    # A bare string is one stop sequence, not a sequence of characters; None (ModelSettings' "unset") is none; a
    # mapping, bytes or a non-iterable is refused as ModelSettings refuses it (to_stop).
    if value is None:
        return ()
    if type(value) is tuple or type(value) is _NO_STOP_TYPE:  # evolve() passes the converted value back in
        return value
    return to_stop(value) or ()


def _to_messages(value: Iterable[Message]) -> tuple[Message, ...]:
    # A function, not ``tuple`` itself: an LLMRequest is built once per run's skeleton, never per step
    # (the loop's steps fill a draft, loop.config.request_like), so one frame buys a clear error here.
    if isinstance(value, Message):
        raise TypeError("LLMRequest.messages is a sequence of Message: LLMRequest([message]), not a lone Message")
    return tuple(value)


@attrs.frozen(slots=True)
class LLMRequest:
    """One model call: the conversation, the tools offered and the generation settings.

    ``response_format`` asks for a JSON answer matching a schema (see :class:`ResponseFormat`).

    ``vendor_options`` passes vendor-only fields through a codec untouched, keyed
    by wire: ``{"anthropic": {"thinking": {...}}, "openai": {"seed": 1}}``.

    The generation settings are the fields of :class:`~agentactors.settings.ModelSettings`,
    each in one place: ``max_tokens``, ``temperature``, ``stop`` (``()`` when unset; :data:`NO_STOP`, also
    ``== ()``, when the settings emptied it — ``ModelSettings(stop=[])`` — which a provider's default does not fill),
    ``top_p``, ``seed``, ``parallel_tool_calls``, ``reasoning_effort``,
    ``thinking_budget``, ``cache`` (a :class:`~agentactors.settings.CachePolicy`; ``True`` /
    ``False`` accepted), ``timeout``; ``ModelSettings.extra`` is ``vendor_options``.
    ``None`` is the vendor's default; how each reaches each wire: ``docs/settings.md``.  They are checked as
    ModelSettings checks them but for the temperature's ceiling, left to the wire.

    :raises TypeError, ValueError: no messages, a field of the wrong type or out of range, duplicate tool
        names, a tool choice the tools cannot meet.
    """

    messages: tuple[Message, ...] = attrs.field(converter=_to_messages)
    model: str | None = None
    tools: tuple[ToolSpec, ...] = attrs.field(default=(), converter=_to_specs)
    tool_choice: ToolChoice = attrs.field(factory=ToolChoice.auto)
    max_tokens: int | None = None
    temperature: float | None = None
    stop: tuple[str, ...] = attrs.field(default=(), converter=_to_strings)
    vendor_options: dict[str, Any] = attrs.field(factory=dict, converter=_to_dict)
    top_p: float | None = attrs.field(default=None, kw_only=True)
    seed: int | None = attrs.field(default=None, kw_only=True)
    parallel_tool_calls: bool | None = attrs.field(default=None, kw_only=True)
    reasoning_effort: str | None = attrs.field(default=None, kw_only=True)
    thinking_budget: int | None = attrs.field(default=None, kw_only=True)
    cache: CachePolicy | None = attrs.field(default=None, converter=to_cache, kw_only=True)
    timeout: float | None = attrs.field(default=None, kw_only=True)
    #: The JSON schema the answer text must match (the vendor's constrained decoding), or ``None``.
    response_format: ResponseFormat | None = attrs.field(default=None, kw_only=True)

    def __attrs_post_init__(self) -> None:
        if not self.messages:
            raise ValueError("an LLMRequest needs at least one message")
        for m in self.messages:
            if not isinstance(m, Message):
                raise TypeError(f"LLMRequest.messages must hold Message objects, not {type(m).__name__}")
        _optional_str("LLMRequest", "model", self.model)
        for t in self.tools:
            if not isinstance(t, ToolSpec):
                raise TypeError(f"LLMRequest.tools must hold ToolSpec objects, not {type(t).__name__}")
        names = [t.name for t in self.tools]
        if len(set(names)) != len(names):
            raise ValueError(f"duplicate tool names in LLMRequest.tools: {names}")
        if not isinstance(self.tool_choice, ToolChoice):
            raise TypeError("LLMRequest.tool_choice must be a ToolChoice")
        if self.tool_choice.forced and not self.tools:
            raise ValueError(f"tool_choice {self.tool_choice.mode!r} needs at least one tool")
        if self.tool_choice.mode == "tool" and self.tool_choice.name not in names:
            raise ValueError(f"tool_choice names {self.tool_choice.name!r}, which is not among the tools {names}")
        # The fields LLMRequest always had are checked as ModelSettings checks them but for the temperature's
        # ceiling, which is left to the wire (a compatible server may take more than 2): what no wire can send
        # (NaN, a negative, a string, True as max_tokens) fails here rather than in a codec or the body encoder.
        check_max_tokens(self.max_tokens, int64=True)
        check_temperature(self.temperature, ceiling=False)
        check_stop(self.stop)
        for wire, options in self.vendor_options.items():
            if not isinstance(wire, str) or not isinstance(options, Mapping):
                raise TypeError(
                    'LLMRequest.vendor_options is keyed by wire: {"openai": {...}, "anthropic": {...}}; '
                    f"{wire!r} maps to a {type(options).__name__}"
                )
        check_top_p(self.top_p)
        check_seed(self.seed)
        check_reasoning_effort(self.reasoning_effort)
        if self.parallel_tool_calls is not None and not isinstance(self.parallel_tool_calls, bool):
            raise TypeError("parallel_tool_calls must be a bool")
        check_thinking_budget(self.thinking_budget, int64=True)
        check_timeout(self.timeout)

        if self.response_format is not None and not isinstance(self.response_format, ResponseFormat):
            raise TypeError("LLMRequest.response_format must be a ResponseFormat or None")

    def with_defaults(self, settings: ModelSettings | None) -> LLMRequest:
        """This request with ``settings`` filling the fields it leaves unset (the request's own values win).

        ``settings.extra`` goes under ``vendor_options``, wire by wire and key by key.  How a provider
        applies its ``settings=`` defaults; returns ``self`` when nothing changes.
        """
        if not settings:
            return self
        changes: dict[str, Any] = {}
        for name, value in settings.request_fields().items():
            if name == "vendor_options":
                merged = {wire: dict(options) for wire, options in value.items()}
                for wire, options in self.vendor_options.items():
                    merged[wire] = {**merged.get(wire, {}), **options}
                if merged != self.vendor_options:
                    changes[name] = merged
            elif name == "stop":
                if not self.stop and type(self.stop) is not _NO_STOP_TYPE:  # unset, not emptied on purpose
                    changes[name] = value
            elif getattr(self, name) is None:
                changes[name] = value
        return attrs.evolve(self, **changes) if changes else self

    def with_model(self, model: str | None) -> LLMRequest:
        """The same request addressed to ``model``."""
        return self if model == self.model else attrs.evolve(self, model=model)

    def options_for(self, wire: str) -> dict[str, Any]:
        """The vendor-only options for ``wire`` (empty when none were given)."""
        value = self.vendor_options.get(wire)
        return dict(value) if isinstance(value, Mapping) else {}


@attrs.frozen(slots=True)
class LLMResponse:
    """A model's answer: text, tool calls, why it stopped, usage and who served it."""

    content: str = ""
    tool_calls: tuple[ToolCall, ...] = attrs.field(default=(), converter=_to_calls)
    stop_reason: StopReason = StopReason.end_turn
    usage: Usage = _NO_USAGE
    model: str | None = None
    provider: str | None = None
    raw_stop_reason: str | None = None
    reasoning: str = ""
    provider_data: dict[str, Any] | None = attrs.field(default=None, converter=_frozen_mapping)
    response_id: str | None = None

    def __attrs_post_init__(self) -> None:
        # A custom provider's response (the wires' decoders and response_of build well-typed ones): checked here,
        # so a stop reason given as its string is the enum a journal records (it stores ``.value``), and a field
        # of the wrong type fails at the provider's line rather than when the answer is recorded or replayed.
        if type(self.stop_reason) is not StopReason:
            object.__setattr__(self, "stop_reason", _stop_reason(self.stop_reason))
        if not isinstance(self.content, str):
            raise TypeError(f"LLMResponse.content must be a str, not {type(self.content).__name__}")
        if not isinstance(self.reasoning, str):
            raise TypeError(f"LLMResponse.reasoning must be a str, not {type(self.reasoning).__name__}")
        if not isinstance(self.usage, Usage):
            raise TypeError(f"LLMResponse.usage must be a Usage, not {type(self.usage).__name__}")
        for call in self.tool_calls:
            if not isinstance(call, ToolCall):
                raise TypeError(f"LLMResponse.tool_calls must hold ToolCall objects, not {type(call).__name__}")
        for name in ("model", "provider", "raw_stop_reason", "response_id"):
            _optional_str("LLMResponse", name, getattr(self, name))
        if self.provider_data is not None:
            _check_provider_data("LLMResponse", self.provider_data)

    def to_message(self) -> Message:
        """The assistant message that records this answer in the conversation."""
        return Message.assistant(
            self.content, self.tool_calls, reasoning=self.reasoning, provider_data=self.provider_data
        )

    def with_provider(self, provider: str) -> LLMResponse:
        return attrs.evolve(self, provider=provider)


def _stop_reason(value: str) -> StopReason:
    """A stop reason given as its value (``"tool_use"``) as the enum; anything else is refused."""
    try:
        return StopReason(value)
    except ValueError:
        raise ValueError(
            f"LLMResponse.stop_reason must be one of {', '.join(r.value for r in StopReason)}, not {value!r}"
        ) from None


# What response_of fills, field by field, then makes an LLMResponse (agentactors._slots).
_ResponseDraft = draft(
    LLMResponse,
    "content tool_calls stop_reason usage model provider raw_stop_reason reasoning provider_data response_id",
)


def response_of(
    content: str,
    tool_calls: tuple[ToolCall, ...],
    stop_reason: StopReason,
    usage: Usage,
    model: str | None,
    provider: str | None,
) -> LLMResponse:
    """``LLMResponse(content, tool_calls, stop_reason, usage, model, provider)``, its fields set one by one.

    The same response as the constructor's (the rest of its fields at their defaults; ``tool_calls`` made a
    tuple, as its converter makes it) in about half the time: a stand-in model (``ScriptedProvider``) answers
    every step of every run with one.  Every argument is positional.
    """
    response: Any = _new(_ResponseDraft)
    response.content = content
    response.tool_calls = tool_calls if type(tool_calls) is tuple else tuple(tool_calls)
    response.stop_reason = stop_reason
    response.usage = usage
    response.model = model
    response.provider = provider
    response.raw_stop_reason = None
    response.reasoning = ""
    response.provider_data = None
    response.response_id = None
    response.__class__ = LLMResponse
    made: LLMResponse = response
    return made


# --- stream events -----------------------------------------------------------------------------


@attrs.frozen(slots=True)
class TextDelta:
    """A piece of answer text."""

    text: str


@attrs.frozen(slots=True)
class ReasoningDelta:
    """A piece of structured reasoning (thinking) text; never part of the answer."""

    text: str


@attrs.frozen(slots=True)
class ToolCallStart:
    """A tool call begins at stream position ``index``."""

    index: int
    id: str
    name: str


@attrs.frozen(slots=True)
class ToolCallDelta:
    """A fragment of the JSON arguments of the call at ``index``."""

    index: int
    arguments_fragment: str


@attrs.frozen(slots=True)
class ToolCallEnd:
    """The call at ``index`` is complete; ``call`` holds its parsed arguments."""

    index: int
    call: ToolCall


@attrs.frozen(slots=True)
class StreamEnd:
    """The last event of every successful stream: the complete response."""

    response: LLMResponse


StreamEvent: TypeAlias = TextDelta | ReasoningDelta | ToolCallStart | ToolCallDelta | ToolCallEnd | StreamEnd


def split_text(text: str, pieces: int = 4) -> Sequence[str]:
    """Split ``text`` into about ``pieces`` chunks at word boundaries (used by test doubles)."""
    if not text:
        return ()
    words = re.findall(r"\S+\s*|\s+", text)
    if len(words) <= 1:
        return (text,)
    size = max(1, -(-len(words) // pieces))
    return tuple("".join(words[i : i + size]) for i in range(0, len(words), size))
