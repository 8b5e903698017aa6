"""Gemini models as data, and how a request's settings and parts meet them on the generateContent wire.

:data:`MODELS` says, per model-name pattern, which ``thinkingConfig`` the model takes: ``thinkingLevel`` values
(Gemini 3: "Gemini 3 Pro: low, high; Gemini 3 Flash: minimal, low, medium, high"; "You cannot use both
thinking_level and thinking_budget in the same request") or a ``thinkingBudget`` range (Gemini 2.5: "2.5 Pro:
128 to 32768, cannot disable thinking; 2.5 Flash: 0 to 24576; 2.5 Flash-Lite: 512 to 24576", 0 disables), from
Google's thinking guide and the Gemini 3 developer guide; Gemini 3 still takes a ``thinkingBudget`` "for
backwards compatibility".  A model no row matches gets ``reasoning_effort`` as a ``thinkingLevel`` and
``thinking_budget`` as a ``thinkingBudget``, as given.  The first match wins.

Limits (:data:`LIMITS`, "increased file size limits" of January 2026 and the file input methods guide): 100 MB
of inline data a request (base64), PDFs up to 50 MB; ``inlineData.data`` is required (``Blob.data``), and an empty
one is no data: an empty document is refused before sending.  ``fileData`` takes a Files API URI, a ``gs://`` URI or
(since that update) a public or signed HTTPS URL, which Gemini 2.0 and older do not fetch.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

import attrs

from ...messages import LLMRequest, Message
from ...parts import Audio, Document, Image
from ...settings import REASONING_EFFORTS
from .._media import MediaLimits, check_limits, guessed_media_type, media_of, unsupported
from .._settings import dropped, listed, match_model, refused

__all__ = [
    "EFFORT_BUDGETS",
    "LIMITS",
    "MAX_STOP_SEQUENCES",
    "MAX_TEMPERATURE",
    "MODELS",
    "WIRE",
    "GeminiModel",
    "bare_name",
    "check_parts",
    "check_sent_thinking",
    "model_row",
    "thinking_config",
    "wire_media_type",
]

#: The wire's name: its ``vendor_options`` / ``provider_data`` key and the ``wire`` of its errors and events.
WIRE = "gemini"


@attrs.frozen(slots=True)
class GeminiModel:
    """What one family of Gemini models takes.

    :param patterns: ``fnmatch`` patterns of the bare model name.
    :param levels: the ``thinkingLevel`` values it takes (``None``: none).
    :param budget: the ``(min, max)`` positive ``thinkingBudget`` it takes (``None``: no budget control).
    :param can_disable: whether ``thinkingBudget: 0`` turns its thinking off.
    :param thinks: whether it thinks at all.
    :param external_urls: whether ``fileData`` may be an external HTTPS URL.
    :param multimodal: whether it takes media at all.
    """

    patterns: tuple[str, ...]
    levels: tuple[str, ...] | None = None
    budget: tuple[int, int] | None = None
    can_disable: bool = False
    thinks: bool = True
    external_urls: bool = True
    multimodal: bool = True


_ANY_BUDGET = (1, 1_000_000)

#: First match wins: narrower patterns first.
MODELS: tuple[GeminiModel, ...] = (
    GeminiModel(("gemini-3*-flash*",), levels=("minimal", "low", "medium", "high"), budget=_ANY_BUDGET),
    GeminiModel(("gemini-3*-pro*",), levels=("low", "high"), budget=_ANY_BUDGET),
    GeminiModel(("gemini-2.5-pro*",), budget=(128, 32768)),
    GeminiModel(("gemini-2.5-flash-lite*",), budget=(512, 24576), can_disable=True),
    GeminiModel(("gemini-2.5-flash*",), budget=(1, 24576), can_disable=True),
    GeminiModel(("gemini-2.0-flash-thinking*",), external_urls=False),  # thinks, with no control over it
    GeminiModel(("gemini-2.0*", "gemini-1.5*", "gemma-*"), thinks=False, external_urls=False),
    GeminiModel(("gemini-1.0*", "gemini-pro"), thinks=False, external_urls=False, multimodal=False),
)

#: ``reasoning_effort`` as a ``thinkingBudget``, clamped into the model's range, on models without levels.
EFFORT_BUDGETS: dict[str, int] = {
    "minimal": 512,
    "low": 1024,
    "medium": 8192,
    "high": 24576,
    "xhigh": 32768,
    "max": 32768,
}
MAX_STOP_SEQUENCES = 5
#: The highest ``temperature`` Gemini's models take (``generationConfig.temperature``: 0.0 to 2.0).
MAX_TEMPERATURE = 2.0
LIMITS = MediaLimits(document_bytes=50 * 1024 * 1024, request_bytes=100 * 1024 * 1024, empty_documents=False)
# Gemini's names for the audio types (its audio guide lists audio/mp3, not audio/mpeg).
_WIRE_TYPES = {"audio/mpeg": "audio/mp3", "audio/x-aac": "audio/aac"}
_IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/webp", "image/heic", "image/heif"})
_AUDIO_TYPES = frozenset({"audio/wav", "audio/mp3", "audio/aiff", "audio/aac", "audio/ogg", "audio/flac"})
_FILES_API_HOST = "generativelanguage.googleapis.com"


def bare_name(model: str) -> str:
    """``model`` without its resource path (``models/``, a router's ``vendor/``), lower case.

    What the provider's model-prefix lists and the encoder's Gemini-3 check read; unlike
    :func:`~agentactors.providers._settings.bare_model`, nothing else is stripped.
    """
    return model.rsplit("/", 1)[-1].lower()


def model_row(model: str) -> GeminiModel | None:
    """The row of :data:`MODELS` for ``model`` (``None``: a model these tables do not know)."""
    return match_model(MODELS, model)


def thinking_config(request: LLMRequest, model: str) -> dict[str, Any] | None:
    """The ``thinkingConfig`` the settings ask for, or ``None``; refuses and drops per :mod:`._settings`."""
    row = model_row(model)
    budget, effort = request.thinking_budget, request.reasoning_effort
    if budget is not None:
        if effort is not None:
            dropped(WIRE, model, "reasoning_effort", effort,
                    "thinking_budget is set, and Gemini takes a thinkingLevel or a thinkingBudget, not both")
        if row is None:
            return {"thinkingBudget": budget}
        if not row.thinks or row.budget is None:
            why = "the model does not think" if not row.thinks else "the model's thinking takes no budget"
            raise refused(WIRE, model, "thinking_budget", why)
        if budget == 0:
            if not row.can_disable:
                raise refused(WIRE, model, "thinking_budget", "the model's thinking cannot be turned off")
            return {"thinkingBudget": 0}
        low, high = row.budget
        if not low <= budget <= high:
            raise refused(WIRE, model, "thinking_budget", f"the model takes {low} to {high} tokens, not {budget}")
        return {"thinkingBudget": budget}
    if effort is None:
        return None
    if row is None:
        return {"thinkingBudget": 0} if effort == "none" else {"thinkingLevel": effort}
    if not row.thinks or (row.levels is None and row.budget is None):
        dropped(WIRE, model, "reasoning_effort", effort,
                "the model does not reason" if not row.thinks else "the model's thinking takes no setting")
        return None
    if row.levels is not None:
        if effort not in row.levels:
            raise refused(WIRE, model, "reasoning_effort", f"{effort!r} is not accepted: use {listed(row.levels)}")
        return {"thinkingLevel": effort}
    assert row.budget is not None
    if effort == "none":
        if not row.can_disable:
            raise refused(WIRE, model, "reasoning_effort", "the model's thinking cannot be turned off")
        return {"thinkingBudget": 0}
    low, high = row.budget
    return {"thinkingBudget": min(high, max(low, EFFORT_BUDGETS[effort]))}


def check_sent_thinking(config: Mapping[str, Any], model: str) -> None:
    """Judge a ``thinkingConfig`` merged with vendor options as :func:`thinking_config` judges the settings.

    A level the model does not take (or any level on a model without levels), a budget out of its range, ``0``
    where its thinking cannot be turned off and a budget on a model without one are refused; ``-1`` (dynamic
    thinking) and an unknown model's values are sent as given.  The types were checked already (int32).
    """
    row = model_row(model)
    if row is None:
        return
    for key in ("thinkingLevel", "thinking_level"):
        level = config.get(key)
        if level is None or (row.levels is not None and level in row.levels):
            continue
        shown = repr(level) if isinstance(level, str) and level in REASONING_EFFORTS else f"a {type(level).__name__}"
        why = f"{shown} is not accepted: use {listed(row.levels)}" if row.levels is not None else (
            "the model takes no thinkingLevel" + (": set thinking_budget" if row.budget is not None else ""))
        raise refused(WIRE, model, "reasoning_effort", f"{why} (vendor_options['gemini'], thinkingConfig.{key})")
    for key in ("thinkingBudget", "thinking_budget"):
        budget = config.get(key)
        if not isinstance(budget, int) or budget == -1:
            continue
        where = f" (vendor_options['gemini'], thinkingConfig.{key})"
        if not row.thinks or row.budget is None:
            why = "the model does not think" if not row.thinks else "the model's thinking takes no budget"
            raise refused(WIRE, model, "thinking_budget", why + where)
        low, high = row.budget
        if budget == 0 and not row.can_disable:
            raise refused(WIRE, model, "thinking_budget", "the model's thinking cannot be turned off" + where)
        if budget != 0 and not low <= budget <= high:
            raise refused(WIRE, model, "thinking_budget", f"the model takes {low} to {high} tokens, not {budget}"
                          + where)


def wire_media_type(media_type: str) -> str:
    """The media type as Gemini names it."""
    return _WIRE_TYPES.get(media_type, media_type)


def check_parts(messages: Sequence[Message], model: str) -> None:
    """Raise :class:`~agentactors.UnsupportedContentError` for a part this model or wire cannot carry."""
    row = model_row(model)
    for part in media_of(messages):
        if row is not None and not row.multimodal:
            raise unsupported(part, "the model takes text only", wire=WIRE, model=model)
        media_type = guessed_media_type(part)
        if media_type is None:
            raise unsupported(part, "fileData needs a media type, and the URL does not say it: pass media_type=",
                              wire=WIRE, model=model)
        media_type = wire_media_type(media_type)
        if isinstance(part, Image) and media_type not in _IMAGE_TYPES:
            raise unsupported(part, "Gemini takes PNG, JPEG, WEBP, HEIC or HEIF images", wire=WIRE, model=model)
        if isinstance(part, Audio) and media_type not in _AUDIO_TYPES:
            raise unsupported(part, "Gemini takes WAV, MP3, AIFF, AAC, OGG or FLAC audio", wire=WIRE, model=model)
        if isinstance(part, Document) and media_type != "application/pdf" and not media_type.startswith("text/"):
            raise unsupported(part, "Gemini takes PDF and text documents", wire=WIRE, model=model)
        if part.url is not None:
            url = urlsplit(part.url)
            own = url.scheme == "gs" or url.netloc.lower() == _FILES_API_HOST
            if not own and row is not None and not row.external_urls:
                raise unsupported(part, "the model fetches no external URLs (only Files API and gs:// URIs)",
                                  wire=WIRE, model=model)
    check_limits(messages, LIMITS, wire=WIRE, model=model)
