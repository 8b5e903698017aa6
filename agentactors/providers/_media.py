"""Checks every wire makes of the content parts of a request before it encodes them.

A part a wire or model cannot carry, and a request over the vendor's size limits, are refused with
:class:`~agentactors.UnsupportedContentError` (request kind) before anything is sent, naming the part by
:func:`~agentactors.parts.describe` (kind, media type, size — never the payload) and the model.  The
limits themselves are each wire's data (:class:`MediaLimits`), cited where they are defined.
"""

from __future__ import annotations

import mimetypes
import urllib.parse
from collections.abc import Iterable, Iterator

import attrs

from ..errors import UnsupportedContentError
from ..messages import Message
from ..parts import Audio, Document, Image, MediaPart, describe

__all__ = ["MediaLimits", "base64_size", "check_limits", "guessed_media_type", "media_of", "unsupported"]


@attrs.frozen(slots=True)
class MediaLimits:
    """A vendor's documented size limits for inline media (``None``: no limit of that kind to check).

    :param image_bytes: the largest image, in bytes as given (before base64).
    :param document_bytes: the largest document.
    :param request_bytes: the most inline media one request may carry, counted as base64 text (what the
        request body carries: 4/3 of the bytes).
    :param image_base64_bytes: the largest image counted as its base64 text, for a vendor that measures the
        encoded field (Anthropic: "image exceeds 5 MB maximum: 6405384 bytes > 5242880 bytes" for a 4.8 MB file).
    :param empty_documents: whether the vendor takes a document of no bytes (an empty text); one that does not
        answers it with a 400, so it is refused before sending.
    """

    image_bytes: int | None = None
    document_bytes: int | None = None
    request_bytes: int | None = None
    image_base64_bytes: int | None = None
    empty_documents: bool = True


def base64_size(size: int) -> int:
    """The length of ``size`` bytes as base64 text."""
    return 4 * ((size + 2) // 3)


def media_of(messages: Iterable[Message]) -> Iterator[MediaPart]:
    """Every media part of the conversation, in order."""
    for message in messages:
        if message.media:
            yield from message.media


def unsupported(part: MediaPart, why: str, *, wire: str, model: str) -> UnsupportedContentError:
    """The request-kind error for a part the wire or model cannot carry (returned, for the caller to raise)."""
    label = describe(part)
    return UnsupportedContentError(
        f"{label}: {why} (model {model!r}); nothing was sent", provider=wire, model=model, part=label
    )


def _mb(size: int) -> str:
    """A limit as its vendor writes it, and exactly: a whole number of MiB as MB (Anthropic's 5 MB is 5,242,880
    bytes), else decimal megabytes (Bedrock's 3.75 MB is 3,750,000 bytes)."""
    mib, rest = divmod(size, 1024 * 1024)
    return f"{mib} MB" if not rest else f"{size / 1_000_000:g} MB"


def check_limits(messages: Iterable[Message], limits: MediaLimits, *, wire: str, model: str) -> None:
    """Raise :class:`~agentactors.UnsupportedContentError` for a part or a request over ``limits``."""
    total = 0
    for part in media_of(messages):
        if part.data is None:
            continue
        size = len(part.data)
        if isinstance(part, Image) and limits.image_bytes is not None and size > limits.image_bytes:
            raise unsupported(
                part, f"over the {_mb(limits.image_bytes)} per-image limit ({limits.image_bytes:,} bytes)",
                wire=wire, model=model,
            )
        encoded = base64_size(size)
        if isinstance(part, Image) and limits.image_base64_bytes is not None and encoded > limits.image_base64_bytes:
            raise unsupported(
                part,
                f"{encoded / (1024 * 1024):.1f} MB as base64 (the size the vendor measures), over the "
                f"{_mb(limits.image_base64_bytes)} per-image limit ({limits.image_base64_bytes:,} bytes): at most "
                f"{limits.image_base64_bytes * 3 // 4:,} bytes of image",
                wire=wire,
                model=model,
            )
        if not size and not limits.empty_documents and isinstance(part, Document):
            raise unsupported(
                part, "an empty document (no bytes): the vendor refuses one with a 400 — leave it out of the message",
                wire=wire, model=model,
            )
        if isinstance(part, Document) and limits.document_bytes is not None and size > limits.document_bytes:
            raise unsupported(
                part, f"over the {_mb(limits.document_bytes)} per-document limit ({limits.document_bytes:,} bytes)",
                wire=wire, model=model,
            )
        total += encoded
        if limits.request_bytes is not None and total > limits.request_bytes:
            raise unsupported(
                part,
                f"the request's inline media reach {total / (1024 * 1024):.1f} MB with this part, over the "
                f"{_mb(limits.request_bytes)} per-request limit ({limits.request_bytes:,} bytes of base64; pass large "
                "files by URL where the wire takes one)",
                wire=wire,
                model=model,
            )


def guessed_media_type(part: Image | Document | Audio) -> str | None:
    """A URL part's media type: the one given, else the one its path's extension says (never fetched)."""
    if part.media_type is not None:
        return part.media_type
    if part.url is None:
        return None
    guessed, _ = mimetypes.guess_type(urllib.parse.urlsplit(part.url).path)
    return guessed
