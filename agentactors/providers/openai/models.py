"""OpenAI's models as data, and how a request's settings and parts meet them on the Chat Completions wire.

:data:`MODELS` says, per model-name pattern, whether the model reasons and at which ``reasoning_effort``
values, whether it takes sampling settings, and whether it sees images and PDFs or hears audio.  Sources: the
Chat Completions API reference for ``reasoning_effort`` ("gpt-5.1 defaults to none … The supported reasoning
values for gpt-5.1 are none, low, medium, and high … All models before gpt-5.1 default to medium … and do
not support none … gpt-5-pro defaults to (and only supports) high … xhigh is supported for all models after
gpt-5.1-codex-max"), the o-series and GPT-5 model pages, and the vendor's own 400s for ``stop`` and
``temperature`` on reasoning models ("Unsupported parameter: 'stop' is not supported with this model",
reported for o3, o4-mini, gpt-5, gpt-5-mini and gpt-5.2; allowed on gpt-5.1+ with effort ``none``).
A model no row matches (a compatible server's, a new one) gets every setting as given: the server judges.
Extend a row, or add one above a broader pattern: the first match wins.

Limits (:data:`LIMITS`): "up to 50 MB total payload size per request" of images (OpenAI's images and vision
guide), the same for PDF file inputs; Chat Completions takes PDFs only as ``file_data`` or ``file_id`` ("External
file URL (file_url): not supported" — file inputs guide) and audio only as ``wav`` or ``mp3`` ``input_audio``.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import attrs

from ...messages import LLMRequest, Message
from ...parts import Audio, Document, Image
from .._media import MediaLimits, check_limits, media_of, unsupported
from .._settings import bare_model, dropped, listed, match_model, refused, sent_integer, sent_number

__all__ = ["LIMITS", "MAX_TEMPERATURE", "MODELS", "REPLAYS_REASONING", "WIRE", "OpenAIModel", "audio_format",
           "check_parts", "check_sampling_sent", "check_sent", "encode_settings", "model_row", "reasoning_effort",
           "replays_reasoning", "sampling_allowed", "sampling_fields"]

#: The wire's name: its ``vendor_options`` / ``provider_data`` key and the ``wire`` of its errors and events.
WIRE = "openai"


@attrs.frozen(slots=True)
class OpenAIModel:
    """What one family of OpenAI models takes.

    :param patterns: ``fnmatch`` patterns of the bare model name (lower case, no router prefix).
    :param efforts: the ``reasoning_effort`` values it accepts; ``None`` for a model that does not reason,
        ``()`` for one that reasons but takes no effort setting.
    :param default_effort: the effort it reasons at when none is given.
    :param sampling: whether it takes ``temperature``, ``top_p`` and ``stop``: ``"yes"``, ``"no"``, or
        ``"without_reasoning"`` (only while its effort is ``none``).
    :param vision: whether it takes images and PDFs.
    :param audio: whether it takes ``input_audio``.
    """

    patterns: tuple[str, ...]
    efforts: tuple[str, ...] | None = None
    default_effort: str | None = None
    sampling: Literal["yes", "no", "without_reasoning"] = "yes"
    vision: bool = True
    audio: bool = False

    @property
    def reasons(self) -> bool:
        """Whether the model reasons (and so needs ``max_completion_tokens``)."""
        return self.efforts is not None


_GPT5_1 = ("none", "low", "medium", "high")
_LATEST = ("none", "low", "medium", "high", "xhigh")
_O_SERIES = ("low", "medium", "high")

#: First match wins: narrower patterns first.
MODELS: tuple[OpenAIModel, ...] = (
    OpenAIModel(("gpt-5-chat*", "gpt-5.*-chat*")),  # the non-reasoning chat snapshots
    OpenAIModel(("gpt-5-pro*",), efforts=("high",), default_effort="high", sampling="no"),
    OpenAIModel(("gpt-5.*-pro*",), efforts=("medium", "high", "xhigh"), default_effort="medium", sampling="no"),
    OpenAIModel(("gpt-5.1-codex-max*",), efforts=_LATEST, default_effort="medium", sampling="no"),
    OpenAIModel(("gpt-5.1-codex*",), efforts=_O_SERIES, default_effort="medium", sampling="no"),
    OpenAIModel(("gpt-5.1*",), efforts=_GPT5_1, default_effort="none", sampling="without_reasoning"),
    OpenAIModel(("gpt-5.*",), efforts=_LATEST, default_effort="none", sampling="without_reasoning"),
    OpenAIModel(("gpt-5*",), efforts=("minimal", *_O_SERIES), default_effort="medium", sampling="no"),
    OpenAIModel(("o1-mini*", "o1-preview*"), efforts=(), sampling="no", vision=False),
    OpenAIModel(("o3-mini*",), efforts=_O_SERIES, default_effort="medium", sampling="no", vision=False),
    OpenAIModel(("o1*", "o3*", "o4*"), efforts=_O_SERIES, default_effort="medium", sampling="no"),
    OpenAIModel(("gpt-4o-audio*", "gpt-4o-mini-audio*", "gpt-audio*"), audio=True),
    OpenAIModel(("gpt-3.5*",), vision=False),
    OpenAIModel(("gpt-4*", "chatgpt-*")),
)

LIMITS = MediaLimits(request_bytes=50 * 1024 * 1024)
_IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/webp", "image/gif"})
_AUDIO_FORMATS = {"audio/wav": "wav", "audio/mpeg": "mp3"}
_MAX_STOP = 4
#: The highest ``temperature`` OpenAI's models take.
MAX_TEMPERATURE = 2.0


#: Models (``fnmatch`` patterns of the bare name, as :data:`MODELS`) whose tool-call turns must carry their
#: ``reasoning_content`` back: DeepSeek's thinking mode ("For turns that do perform tool calls, the
#: reasoning_content must be fully passed back to the API in all subsequent requests … otherwise … a 400 error",
#: the thinking-mode guide; deepseek-reasoner is that mode since V3.2) and Kimi's thinking models ("thinking is
#: enabled but reasoning_content is missing in assistant tool call message at index N").  Every other model gets
#: none back: OpenAI refuses a message field it does not know, and DeepSeek's first reasoner (R1) answered
#: ``reasoning_content`` in the input with a 400.  ``vendor_options["openai"]["replay_reasoning"]`` overrides.
REPLAYS_REASONING: tuple[str, ...] = (
    "deepseek-reasoner*", "deepseek-v3.2*", "deepseek-v4*", "kimi-k2-thinking*", "kimi-k2.5*", "kimi-for-coding*",
)
_REPLAYS: dict[str, bool] = {}


def replays_reasoning(model: str) -> bool:
    """Whether ``model``'s assistant tool-call turns go back with ``reasoning_content`` (:data:`REPLAYS_REASONING`)."""
    hit = _REPLAYS.get(model)
    if hit is None:
        name = bare_model(model)
        hit = any(fnmatch.fnmatchcase(name, p) for p in REPLAYS_REASONING)
        if len(_REPLAYS) >= 1024:
            _REPLAYS.clear()
        _REPLAYS[model] = hit
    return hit


def model_row(model: str) -> OpenAIModel | None:
    """The row of :data:`MODELS` for ``model`` (``None``: a model these tables do not know)."""
    return match_model(MODELS, model)


def reasoning_effort(
    request: LLMRequest, row: OpenAIModel | None, model: str, *, wire: str, no_budget: str
) -> str | None:
    """The effort ``request`` reasons at on an OpenAI wire (``wire``), as ``row`` takes it; ``None``: send none.

    Both OpenAI wires read the one table, so they judge alike: a ``thinking_budget`` of 0 is effort
    ``"none"`` where the model takes that, any other budget is dropped (``no_budget`` says why) and refused on
    a model that does not think; an effort the model does not take is refused, one it cannot carry dropped.
    A model the table does not know gets the effort as given.
    """
    effort = request.reasoning_effort
    budget = request.thinking_budget
    if budget is not None:
        if row is not None and not row.reasons:
            raise refused(wire, model, "thinking_budget", "the model does not think, so it takes no thinking budget")
        if budget == 0 and effort is None and row is not None and "none" in (row.efforts or ()):
            effort = "none"  # no thinking, said the way this model understands it
        else:
            dropped(wire, model, "thinking_budget", budget, no_budget)
    if effort is None or row is None:
        return effort
    if row.efforts is None:
        dropped(wire, model, "reasoning_effort", effort, "the model does not reason")
        return None
    if not row.efforts:
        dropped(wire, model, "reasoning_effort", effort, "the model reasons but takes no effort setting")
        return None
    if effort not in row.efforts:
        raise refused(wire, model, "reasoning_effort", f"{effort!r} is not accepted: use {listed(row.efforts)}")
    return effort


def sampling_allowed(row: OpenAIModel | None, effort: str | None, *, field: str) -> tuple[bool, str]:
    """Whether the model takes ``temperature``/``top_p`` at ``effort``, and if not why (``field``: the effort's name).

    A reasoning model takes none, or (``"without_reasoning"``) only while its effort, given or default, is
    ``"none"``; a model that does not reason, or one the table does not know, takes them.
    """
    if row is None or not row.reasons or row.sampling == "yes":
        return True, ""
    if row.sampling == "no":
        return False, "reasoning models take no sampling settings"
    return (effort or row.default_effort) == "none", f"the model takes it only with {field} 'none'"


def sampling_fields(
    request: LLMRequest, model: str, *, allowed: bool, why: str, wire: str, known: bool = False
) -> dict[str, Any]:
    """``request``'s ``temperature`` and ``top_p`` as body fields, or, when not ``allowed``, none: each dropped.

    ``why`` (from :func:`sampling_allowed`) goes in the ``llm.setting_dropped`` event of each one dropped.
    ``known``: the model is one of :data:`MODELS`, whose temperature OpenAI takes from 0 to 2 only (a request
    built without ``ModelSettings`` may carry more, which a compatible server's model may take).
    """
    out: dict[str, Any] = {}
    for name in ("temperature", "top_p"):
        value = getattr(request, name)
        if value is None:
            continue
        if allowed:
            if known and name == "temperature" and value > MAX_TEMPERATURE:
                raise refused(wire, model, "temperature", f"OpenAI takes 0 to {MAX_TEMPERATURE:g}, not {value!r}")
            out[name] = value
        else:
            dropped(wire, model, name, value, why)
    return out


def encode_settings(request: LLMRequest, model: str, *, tools: bool) -> dict[str, Any]:
    """The body fields ``request``'s settings become on this wire (``max_tokens`` aside: the codec picks its field).

    Drops what the model cannot carry (with ``llm.setting_dropped``) and raises
    :class:`~agentactors.UnsupportedSettingError` for what it cannot take (see :mod:`._settings`).
    """
    row = model_row(model)
    out: dict[str, Any] = {}
    effort = reasoning_effort(
        request, row, model, wire=WIRE,
        no_budget="Chat Completions takes no thinking budget; reasoning_effort sets how much the model reasons",
    )
    if effort is not None:
        out["reasoning_effort"] = effort
    sampling, why = sampling_allowed(row, effort, field="reasoning_effort")
    out.update(sampling_fields(request, model, allowed=sampling, why=why, wire=WIRE, known=row is not None))
    if request.stop:
        if not sampling:
            raise refused(WIRE, model, "stop", why)
        if row is not None and len(request.stop) > _MAX_STOP:
            raise refused(WIRE, model, "stop", f"Chat Completions takes at most {_MAX_STOP} stop sequences")
        out["stop"] = list(request.stop)
    if request.seed is not None:
        out["seed"] = request.seed
    if request.parallel_tool_calls is not None and tools:
        out["parallel_tool_calls"] = request.parallel_tool_calls  # without tools it is a 400 (and means nothing)
    if request.cache is not None and request.cache.retention == "extended":
        out["prompt_cache_retention"] = "24h"
    return out


_SEED = (-(2**63), 2**63 - 1)
_MAX_INT = 2**63 - 1


def check_sampling_sent(
    body: Mapping[str, Any], model: str, options: Mapping[str, Any], effort: Any, *, wire: str, field: str
) -> OpenAIModel | None:
    """Judge the ``temperature`` / ``top_p`` a merged body sends (either OpenAI wire), at the ``effort`` it sends.

    A model reasoning at that effort takes neither (the vendor's 400, not a drop: the caller's vendor options put
    them or the effort there); a known model takes a temperature of 0 to 2, every model a ``top_p`` of 0 to 1.
    An effort the model does not take is refused.  Returns the model's row.
    """
    row = model_row(model)
    if row is not None and row.efforts and isinstance(effort, str) and effort not in row.efforts:
        raise refused(wire, model, "reasoning_effort", f"{effort!r} is not accepted: use {listed(row.efforts)}")
    allowed, why = sampling_allowed(row, effort if isinstance(effort, str) else None, field=field)
    for setting in ("temperature", "top_p"):
        if setting in body and not allowed:
            raise refused(wire, model, setting, f"{why}, and the request sends {field} {effort!r}"
                          if effort is not None else why)
    sent_number(wire, model, "temperature", "temperature", body.get("temperature"), options, low=0.0,
                high=MAX_TEMPERATURE if row is not None else None)
    sent_number(wire, model, "top_p", "top_p", body.get("top_p"), options, low=0.0, high=1.0)
    return row


def check_sent(body: Mapping[str, Any], model: str, options: Mapping[str, Any], *, official: bool) -> None:
    """Judge what a body merged with ``vendor_options["openai"]`` sends for the mapped settings, as they are judged.

    Called only when there are options: the settings alone were checked by :func:`encode_settings`.  On OpenAI's
    own endpoint (``official``) a reasoning model takes ``max_completion_tokens``, never ``max_tokens`` (its 400:
    "Unsupported parameter: 'max_tokens' is not supported with this model").
    """
    effort = body.get("reasoning_effort")
    row = check_sampling_sent(body, model, options, effort, wire=WIRE, field="reasoning_effort")
    if official and row is not None and row.reasons and "max_tokens" in body:
        raise refused(WIRE, model, "max_tokens",
                      "OpenAI's reasoning models take max_completion_tokens, not max_tokens (vendor_options"
                      "['openai']['max_tokens']): set ModelSettings.max_tokens, which picks the field")
    low, high = _SEED
    sent_integer(WIRE, model, "seed", "seed", body.get("seed"), options, low=low, high=high)
    for key in ("max_tokens", "max_completion_tokens"):
        sent_integer(WIRE, model, "max_tokens", key, body.get(key), options, low=1, high=_MAX_INT)
    stop = body.get("stop")
    if stop is not None:
        allowed, why = sampling_allowed(row, effort if isinstance(effort, str) else None, field="reasoning_effort")
        if not allowed:
            raise refused(WIRE, model, "stop", why)
        count = 1 if isinstance(stop, str) else len(stop) if isinstance(stop, list | tuple) else 0
        if row is not None and count > _MAX_STOP:
            raise refused(WIRE, model, "stop", f"Chat Completions takes at most {_MAX_STOP} stop sequences")


def audio_format(part: Audio) -> str | None:
    """``input_audio.format`` for ``part`` (``wav`` / ``mp3``), or ``None`` when this wire takes no such audio."""
    return _AUDIO_FORMATS.get(part.media_type or "")


def check_parts(messages: Sequence[Message], model: str, *, official: bool) -> None:
    """Raise :class:`~agentactors.UnsupportedContentError` for a part this model or wire cannot carry.

    The size limits are OpenAI's own: checked against its endpoint (``official``), not a compatible server's.
    """
    row = model_row(model)
    for part in media_of(messages):
        if isinstance(part, Image):
            if row is not None and not row.vision:
                raise unsupported(part, "the model takes no images", wire=WIRE, model=model)
            if part.data is not None and part.media_type not in _IMAGE_TYPES:
                raise unsupported(part, "Chat Completions takes PNG, JPEG, WEBP or GIF images", wire=WIRE, model=model)
            if part.url is not None and not part.url.lower().startswith(("http://", "https://")):
                raise unsupported(part, "Chat Completions fetches images over http(s) only", wire=WIRE, model=model)
        elif isinstance(part, Document):
            if part.url is not None:
                raise unsupported(
                    part,
                    "Chat Completions takes no file URLs (file_url is the Responses API's); pass the bytes",
                    wire=WIRE,
                    model=model,
                )
            if part.media_type == "application/pdf":
                if row is not None and not row.vision:
                    raise unsupported(part, "the model takes no PDF files", wire=WIRE, model=model)
            elif not part.media_type.startswith("text/"):
                raise unsupported(part, "Chat Completions takes PDF files and text only", wire=WIRE, model=model)
        elif isinstance(part, Audio):
            if row is not None and not row.audio:
                raise unsupported(part, "the model takes no audio input (gpt-audio models do)", wire=WIRE, model=model)
            if audio_format(part) is None:
                raise unsupported(part, "input_audio takes WAV or MP3 only", wire=WIRE, model=model)
    if official:
        check_limits(messages, LIMITS, wire=WIRE, model=model)
