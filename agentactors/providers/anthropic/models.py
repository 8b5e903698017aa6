"""Claude models as data, and how a request's settings and parts meet them on the Messages wire.

:data:`MODELS` says, per model-name pattern, how the model thinks and which ``output_config.effort`` values
it takes.  Sources: Anthropic's extended thinking, adaptive thinking and effort pages ("budget_tokens must be
at least 1024 … less than max_tokens"; "Thinking isn't compatible with temperature or top_k modifications …
top_p … between 0.95 and 1"; "Adaptive thinking is supported on Claude Opus 4.6 and Sonnet 4.6 … budget_tokens
… deprecated"; "Claude Opus 4.7 … only support adaptive thinking. Manual extended thinking … will return a
400"; "The effort parameter is supported by … Claude Opus 4.6, Claude Sonnet 4.6 and Claude Opus 4.5"; Opus
4.7 adds ``xhigh`` and rejects ``temperature`` / ``top_p`` / ``top_k`` outright), and the vendor's 400 for both
samplers on Opus 4.1 and later 4.x models, Sonnet 4.5 / 4.6 and Haiku 4.5 ("`temperature` and `top_p` cannot
both be specified for this model. Please use only one.", the 4.5 migration notes).  A model no row matches gets
every setting as given: ``thinking_budget`` as a manual budget, ``reasoning_effort`` as adaptive thinking with
that effort.  The first match wins.

Limits (:data:`LIMITS`, Anthropic's vision and PDF guides and API overview): 5 MB an image, a 32 MB request;
images are JPEG, PNG, GIF or WebP; documents PDF (base64 or URL) or plain text.  There is no audio input.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

import attrs

from ...messages import LLMRequest, Message
from ...parts import Audio, Document, Image
from ...settings import REASONING_EFFORTS
from .._media import MediaLimits, check_limits, media_of, unsupported
from .._settings import dropped, listed, match_model, refused, sent_integer, sent_number

__all__ = [
    "EFFORT_BUDGETS",
    "LIMITS",
    "MIN_THINKING_BUDGET",
    "MODELS",
    "WIRE",
    "ClaudeModel",
    "Thinking",
    "check_parts",
    "check_sent",
    "check_sent_stop",
    "check_sent_sampling",
    "model_row",
    "plan_thinking",
    "sampling_fields",
]

#: The wire's name: its ``vendor_options`` / ``provider_data`` key and the ``wire`` of its errors and events.
WIRE = "anthropic"

Thinking = Literal["none", "manual", "adaptive", "adaptive_only"]


@attrs.frozen(slots=True)
class ClaudeModel:
    """What one family of Claude models takes.

    :param patterns: ``fnmatch`` patterns of the bare model name (``claude-…``; cloud prefixes removed).
    :param thinking: ``"none"``, ``"manual"`` (``budget_tokens``), ``"adaptive"`` (adaptive, and manual
        still accepted) or ``"adaptive_only"``.
    :param efforts: the ``output_config.effort`` values it takes (``None``: no effort parameter).
    :param sampling: whether it takes ``temperature`` / ``top_p`` at all.
    :param one_sampler: whether it takes ``temperature`` or ``top_p`` but refuses the two together.
    :param vision: whether it takes images and PDFs.
    """

    patterns: tuple[str, ...]
    thinking: Thinking = "manual"
    efforts: tuple[str, ...] | None = None
    sampling: bool = True
    one_sampler: bool = False
    vision: bool = True


#: First match wins: narrower patterns first.
MODELS: tuple[ClaudeModel, ...] = (
    ClaudeModel(("claude-opus-4-7*",), thinking="adaptive_only",
                efforts=("low", "medium", "high", "xhigh", "max"), sampling=False),
    ClaudeModel(("claude-opus-4-6*", "claude-sonnet-4-6*"), thinking="adaptive",
                efforts=("low", "medium", "high", "max"), one_sampler=True),
    ClaudeModel(("claude-opus-4-5*",), efforts=("low", "medium", "high"), one_sampler=True),
    ClaudeModel(("claude-sonnet-4-5*", "claude-haiku-4-5*", "claude-opus-4-1*"), one_sampler=True),
    ClaudeModel(("claude-opus-4-0*", "claude-opus-4-2*", "claude-sonnet-4-0*", "claude-sonnet-4-2*", "claude-opus-4",
                 "claude-sonnet-4", "claude-3-7-sonnet*")),
    ClaudeModel(("claude-3-5-*", "claude-3-opus*", "claude-3-sonnet*", "claude-3-haiku*"), thinking="none"),
    ClaudeModel(("claude-2*", "claude-instant*"), thinking="none", vision=False),
)

MIN_THINKING_BUDGET = 1024
#: ``reasoning_effort`` as a manual thinking budget, on models without adaptive thinking.
EFFORT_BUDGETS: Mapping[str, int] = {
    "minimal": 1024,
    "low": 2048,
    "medium": 8192,
    "high": 16384,
    "xhigh": 24576,
    "max": 24576,
}

# Anthropic measures an image's 5 MB on its base64 text ("image exceeds 5 MB maximum: 6405384 bytes > 5242880
# bytes" for a 4.8 MB file): at most 3.75 MiB of image.
LIMITS = MediaLimits(image_base64_bytes=5 * 1024 * 1024, request_bytes=32 * 1024 * 1024)
_IMAGE_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})
_TOP_P_WITH_THINKING = 0.95


def model_row(model: str) -> ClaudeModel | None:
    """The row of :data:`MODELS` for ``model`` (``None``: a model these tables do not know)."""
    return match_model(MODELS, model)


def plan_thinking(
    request: LLMRequest, model: str, *, wire: str = WIRE
) -> tuple[dict[str, Any] | None, str | None]:
    """``(thinking, effort)``: the ``thinking`` object and the ``output_config.effort`` the settings ask for.

    ``(None, None)`` when the settings ask for neither.  Raises
    :class:`~agentactors.UnsupportedSettingError` for a budget the model cannot take and an effort it does not
    know; drops (with ``llm.setting_dropped``) an effort for a model that does not reason.  ``wire``: the wire the
    request goes to, named by those errors and events (Bedrock plans Claude's thinking with this table).
    """
    row = model_row(model)
    budget, effort = request.thinking_budget, request.reasoning_effort
    thinking: dict[str, Any] | None = None
    if budget is not None and budget > 0:
        if row is not None and row.thinking == "none":
            raise refused(wire, model, "thinking_budget", "the model does not think")
        if row is not None and row.thinking == "adaptive_only":
            raise refused(wire, model, "thinking_budget",
                          "the model takes no thinking budget, only adaptive thinking: set reasoning_effort")
        if budget < MIN_THINKING_BUDGET:
            raise refused(wire, model, "thinking_budget", f"Claude requires at least {MIN_THINKING_BUDGET} tokens")
        if request.max_tokens is not None and budget >= request.max_tokens:
            raise refused(wire, model, "thinking_budget",
                          f"the budget ({budget}) must be below max_tokens ({request.max_tokens})")
        thinking = {"type": "enabled", "budget_tokens": budget}
    if effort is None or effort == "none":
        return thinking, None  # "none": no thinking, nothing to send
    if row is not None and row.thinking == "none" and row.efforts is None:
        dropped(wire, model, "reasoning_effort", effort, "the model does not reason")
        return thinking, None
    sent: str | None = None
    if row is None or row.efforts is not None:
        if row is not None and row.efforts is not None and effort not in row.efforts:
            raise refused(wire, model, "reasoning_effort", f"{effort!r} is not accepted: use {listed(row.efforts)}")
        sent = effort
    if thinking is None and budget is None:
        if row is None or row.thinking in ("adaptive", "adaptive_only"):
            thinking = {"type": "adaptive"}
        elif row.thinking == "manual":
            thinking = _budget_for(effort, request, model, wire)
    return thinking, sent


def _budget_for(effort: str, request: LLMRequest, model: str, wire: str) -> dict[str, Any] | None:
    budget = EFFORT_BUDGETS.get(effort)
    if budget is None:
        raise refused(wire, model, "reasoning_effort", f"{effort!r} has no thinking budget on this model")
    if request.max_tokens is not None:
        budget = min(budget, request.max_tokens - 1)
        if budget < MIN_THINKING_BUDGET:
            dropped(wire, model, "reasoning_effort", effort,
                    f"max_tokens ({request.max_tokens}) leaves no room for the {MIN_THINKING_BUDGET}-token "
                    "minimum thinking budget")
            return None
    return {"type": "enabled", "budget_tokens": budget}


def sampling_fields(request: LLMRequest, model: str, *, thinking: bool, wire: str = WIRE) -> dict[str, Any]:
    """``temperature`` / ``top_p`` for the body, checked against thinking and the model (the conflict table).

    Both set, on a model that takes one of them only (:attr:`ClaudeModel.one_sampler`), is a conflict: refused,
    as the vendor would, rather than guessing which one the caller meant.  ``wire``: as for :func:`plan_thinking`.
    """
    row = model_row(model)
    out: dict[str, Any] = {}
    for name in ("temperature", "top_p"):
        value = getattr(request, name)
        if value is None:
            continue
        if row is not None and not row.sampling:
            dropped(wire, model, name, value, "the model takes no sampling settings")
            continue
        if name == "temperature" and value > 1:
            raise refused(wire, model, "temperature", f"Claude takes 0 to 1, not {value!r}")
        if thinking and name == "temperature" and value != 1:
            raise refused(wire, model, "temperature",
                          "extended thinking is not compatible with a temperature other than 1")
        if thinking and name == "top_p" and value < _TOP_P_WITH_THINKING:
            raise refused(wire, model, "top_p",
                          f"extended thinking takes top_p between {_TOP_P_WITH_THINKING} and 1, not {value!r}")
        out[name] = value
    if len(out) == 2 and row is not None and row.one_sampler:
        raise refused(wire, model, "top_p", "the model takes temperature or top_p, not both: set one of them")
    return out


def check_sent_sampling(
    wire: str, model: str, options: Mapping[str, Any], *, temperature: Any, top_p: Any, thinking: Any,
    keys: tuple[str, str] = ("temperature", "top_p"),
) -> None:
    """Judge the sampling values a merged body sends to a Claude model, with the ``thinking`` it sends.

    The conflict table of :func:`sampling_fields`, for values that may have come from vendor options (``keys``:
    their names on the wire, Bedrock's ``topP``): a model without sampling settings takes neither (refused, not
    dropped: the options put it there), a temperature is 0 to 1, thinking takes a temperature of 1 and a
    ``top_p`` of 0.95 or more, and a one-sampler model not both.
    """
    row = model_row(model)
    values = {"temperature": temperature, "top_p": top_p}
    given = {name: value for name, value in values.items() if value is not None}
    if given and row is not None and not row.sampling:
        raise refused(wire, model, next(iter(given)), "the model takes no sampling settings")
    sent_number(wire, model, "temperature", keys[0], temperature, options, low=0.0, high=1.0)
    sent_number(wire, model, "top_p", keys[1], top_p, options, low=0.0, high=1.0)
    if isinstance(thinking, Mapping) and thinking.get("type", "enabled") != "disabled":
        if temperature is not None and temperature != 1:
            raise refused(wire, model, "temperature",
                          "extended thinking is not compatible with a temperature other than 1")
        if top_p is not None and top_p < _TOP_P_WITH_THINKING:
            raise refused(wire, model, "top_p",
                          f"extended thinking takes top_p between {_TOP_P_WITH_THINKING} and 1, not {top_p!r}")
    if len(given) == 2 and row is not None and row.one_sampler:
        raise refused(wire, model, "top_p", "the model takes temperature or top_p, not both: set one of them")


def check_sent_stop(wire: str, model: str, stop: Any, options: Mapping[str, Any], *, key: str) -> None:
    """Refuse a stop sequence that is only whitespace: Claude's 400 ("stop_sequences: each stop sequence must
    contain non-whitespace"), on the Messages API and Bedrock alike.  A stop sequence constrains the answer, so it
    is refused rather than dropped.  ``key``: its field on the wire (named when a vendor option set it).
    """
    if not isinstance(stop, list | tuple):
        return
    for sequence in stop:
        if isinstance(sequence, str) and not sequence.strip():
            where = f" (vendor_options[{wire!r}], {key})" if key in options or "inferenceConfig" in options else ""
            raise refused(wire, model, "stop", f"Claude takes stop sequences that contain non-whitespace, not "
                          f"{sequence!r}{where}")


def check_sent(body: Mapping[str, Any], model: str, options: Mapping[str, Any]) -> None:
    """Judge what a body merged with ``vendor_options["anthropic"]`` sends, as the settings are judged.

    Sampling (:func:`check_sent_sampling`), ``max_tokens`` (a positive int) and a manual thinking budget (at least
    :data:`MIN_THINKING_BUDGET`, below ``max_tokens``; none on a model without manual thinking).  Called only when
    there are options.
    """
    thinking = body.get("thinking")
    check_sent_sampling(WIRE, model, options, temperature=body.get("temperature"), top_p=body.get("top_p"),
                        thinking=thinking)
    max_tokens = body.get("max_tokens")
    sent_integer(WIRE, model, "max_tokens", "max_tokens", max_tokens, options, low=1, high=2**63 - 1)
    row = model_row(model)
    _check_sent_effort(body, model, row)
    if not isinstance(thinking, Mapping) or thinking.get("type", "enabled") != "enabled":
        return
    if row is not None and row.thinking in ("none", "adaptive_only"):
        raise refused(WIRE, model, "thinking_budget", "the model does not think" if row.thinking == "none" else
                      "the model takes no thinking budget, only adaptive thinking")
    budget = thinking.get("budget_tokens")
    sent_integer(WIRE, model, "thinking_budget", "thinking.budget_tokens", budget, options,
                 low=MIN_THINKING_BUDGET, high=2**63 - 1)
    if isinstance(budget, int) and isinstance(max_tokens, int) and budget >= max_tokens:
        raise refused(WIRE, model, "thinking_budget",
                      f"the budget ({budget}) must be below max_tokens ({max_tokens})")


def _check_sent_effort(body: Mapping[str, Any], model: str, row: ClaudeModel | None) -> None:
    """Refuse an ``output_config.effort`` (from vendor options: the settings' was judged) outside the efforts ``row``
    lists, as the setting is refused.

    A model whose row lists none (no effort parameter in the table) or an unknown model gets it as given: the
    vendor judges it.  A value is named only when it is a known effort (an option may hold anything).
    """
    config = body.get("output_config")
    effort = config.get("effort") if isinstance(config, Mapping) else None
    if effort is None or row is None or row.efforts is None or effort in row.efforts:
        return
    shown = repr(effort) if isinstance(effort, str) and effort in REASONING_EFFORTS else f"a {type(effort).__name__}"
    raise refused(WIRE, model, "reasoning_effort", f"{shown} is not accepted: use {listed(row.efforts)} "
                  "(vendor_options['anthropic'], output_config.effort)")


def check_parts(messages: Sequence[Message], model: str) -> None:
    """Raise :class:`~agentactors.UnsupportedContentError` for a part this model or wire cannot carry."""
    row = model_row(model)
    for part in media_of(messages):
        if isinstance(part, Audio):
            raise unsupported(part, "the Messages API takes no audio input", wire=WIRE, model=model)
        if row is not None and not row.vision:
            raise unsupported(part, "the model takes no images or documents", wire=WIRE, model=model)
        if part.url is not None and not part.url.lower().startswith(("http://", "https://")):
            raise unsupported(part, "the Messages API fetches URLs over http(s) only", wire=WIRE, model=model)
        if isinstance(part, Image):
            if part.data is not None and part.media_type not in _IMAGE_TYPES:
                raise unsupported(part, "the Messages API takes JPEG, PNG, GIF or WebP images", wire=WIRE, model=model)
        elif isinstance(part, Document):
            if part.media_type != "application/pdf" and not part.media_type.startswith("text/"):
                raise unsupported(part, "the Messages API takes PDF and text documents", wire=WIRE, model=model)
            if part.url is not None and part.media_type != "application/pdf":
                raise unsupported(part, "a document URL must be a PDF's; pass text as data", wire=WIRE, model=model)
    check_limits(messages, LIMITS, wire=WIRE, model=model)
