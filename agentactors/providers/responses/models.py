"""How a request's settings and parts meet OpenAI's models on the Responses wire.

The models are OpenAI's, so their data is the Chat Completions wire's table
(:data:`agentactors.providers.openai.models.MODELS`: which models reason, at which efforts, whether they take
sampling settings and see images); what differs is the wire's fields.  From the Responses API reference:

* ``max_output_tokens`` (the codec's), ``temperature``, ``top_p``, ``parallel_tool_calls``,
  ``reasoning: {"effort", "summary"}``, ``prompt_cache_retention``;
* no ``stop`` (refused: dropping it would hand back text past the stop sequence) and no ``seed`` (dropped:
  it only tunes);
* ``max_output_tokens`` of at least 16 ("Invalid 'max_output_tokens': integer below minimum value. Expected a
  value >= 16", OpenAI's and Azure's 400): a smaller ``max_tokens`` is refused on OpenAI's own endpoint and for
  a model the table knows (:data:`MIN_MAX_OUTPUT_TOKENS`);
* images as ``input_image`` (``image_url``: an http(s) URL or a ``data:`` URL), PDFs as ``input_file``
  (``file_data`` as a ``data:`` URL with a ``filename``, or ``file_url``), text documents as
  ``input_text``; no audio input.  "Up to 50 MB total payload size per request" of images and files, as on
  Chat Completions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ...messages import LLMRequest, Message
from ...parts import Audio, Document, Image
from .._media import MediaLimits, check_limits, media_of, unsupported
from .._settings import dropped, refused, sent_integer
from ..openai.models import check_sampling_sent, model_row, reasoning_effort, sampling_allowed, sampling_fields

__all__ = ["LIMITS", "MIN_MAX_OUTPUT_TOKENS", "WIRE", "check_max_output_tokens", "check_parts", "check_sent",
           "encode_settings", "model_row", "reasons"]

WIRE = "openai-responses"

LIMITS = MediaLimits(request_bytes=50 * 1024 * 1024)
_IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/webp", "image/gif"})
#: The least ``max_output_tokens`` the Responses API takes.
MIN_MAX_OUTPUT_TOKENS = 16


def reasons(model: str) -> bool | None:
    """Whether ``model`` reasons (``None``: a model the table does not know)."""
    row = model_row(model)
    return None if row is None else row.reasons


def check_max_output_tokens(request: LLMRequest, model: str, *, official: bool) -> None:
    """Refuse a ``max_tokens`` below :data:`MIN_MAX_OUTPUT_TOKENS` where OpenAI's minimum applies.

    On OpenAI's own endpoint, and for a model the table knows (Azure serves those); a compatible server's
    model is judged by that server.
    """
    limit = request.max_tokens
    if limit is not None and limit < MIN_MAX_OUTPUT_TOKENS and (official or model_row(model) is not None):
        raise refused(WIRE, model, "max_tokens",
                      f"the Responses API takes max_output_tokens of at least {MIN_MAX_OUTPUT_TOKENS}, not {limit}")


def check_sent(body: Mapping[str, Any], model: str, options: Mapping[str, Any], *, official: bool) -> None:
    """Judge what a body merged with this wire's vendor options sends for the mapped settings, as they are judged.

    ``temperature`` / ``top_p`` at the ``reasoning.effort`` sent, and ``max_output_tokens`` (at least
    :data:`MIN_MAX_OUTPUT_TOKENS` where OpenAI's minimum applies, else positive).  Called only with options.
    """
    reasoning = body.get("reasoning")
    effort = reasoning.get("effort") if isinstance(reasoning, Mapping) else None
    check_sampling_sent(body, model, options, effort, wire=WIRE, field="reasoning effort")
    low = MIN_MAX_OUTPUT_TOKENS if official or model_row(model) is not None else 1
    sent_integer(WIRE, model, "max_tokens", "max_output_tokens", body.get("max_output_tokens"), options,
                 low=low, high=2**63 - 1)


def encode_settings(request: LLMRequest, model: str, *, tools: bool) -> dict[str, Any]:
    """The body fields ``request``'s settings become on this wire (``max_output_tokens`` aside).

    Drops what the model cannot carry (``llm.setting_dropped``) and raises
    :class:`~agentactors.UnsupportedSettingError` for what it cannot take.
    """
    row = model_row(model)
    out: dict[str, Any] = {}
    effort = reasoning_effort(
        request, row, model, wire=WIRE,
        no_budget="the Responses API takes no thinking budget; reasoning.effort sets how much the model reasons",
    )
    if effort is not None:
        out["reasoning"] = {"effort": effort}
    sampling, why = sampling_allowed(row, effort, field="reasoning effort")
    out.update(sampling_fields(request, model, allowed=sampling, why=why, wire=WIRE, known=row is not None))
    if request.stop:
        raise refused(WIRE, model, "stop", "the Responses API takes no stop sequences")
    if request.seed is not None:
        dropped(WIRE, model, "seed", request.seed, "the Responses API takes no seed")
    if request.parallel_tool_calls is not None and tools:
        out["parallel_tool_calls"] = request.parallel_tool_calls
    if request.cache is not None and request.cache.retention == "extended":
        out["prompt_cache_retention"] = "24h"
    return out


def check_parts(messages: Sequence[Message], model: str, *, official: bool) -> None:
    """Raise :class:`~agentactors.UnsupportedContentError` for a part this model or wire cannot carry."""
    row = model_row(model)
    for part in media_of(messages):
        if isinstance(part, Image):
            if row is not None and not row.vision:
                raise unsupported(part, "the model takes no images", wire=WIRE, model=model)
            if part.data is not None and part.media_type not in _IMAGE_TYPES:
                raise unsupported(part, "the Responses API takes PNG, JPEG, WEBP or GIF images", wire=WIRE,
                                  model=model)
            if part.url is not None and not part.url.lower().startswith(("http://", "https://")):
                raise unsupported(part, "the Responses API fetches images over http(s) only", wire=WIRE, model=model)
        elif isinstance(part, Document):
            if part.media_type == "application/pdf":
                if row is not None and not row.vision:
                    raise unsupported(part, "the model takes no PDF files", wire=WIRE, model=model)
                if part.url is not None and not part.url.lower().startswith(("http://", "https://")):
                    raise unsupported(part, "the Responses API fetches files over http(s) only", wire=WIRE,
                                      model=model)
            elif not part.media_type.startswith("text/") or part.url is not None:
                raise unsupported(part, "the Responses API takes PDF files and inline text only", wire=WIRE,
                                  model=model)
        elif isinstance(part, Audio):
            raise unsupported(part, "the Responses API takes no audio input", wire=WIRE, model=model)
    if official:
        check_limits(messages, LIMITS, wire=WIRE, model=model)
