"""Content parts: text, images, documents and audio a message carries to the model.

A user message (or a tool result) may hold a sequence of parts instead of a string:
``Message.user([Text("What is in this picture?"), Image(data=png)])``.  Each part is a frozen, slotted
``attrs`` class validated where it is built:

* bytes or a URL, exactly one of them (:class:`Audio` takes bytes only: no wire takes an audio URL); an image's
  or an audio's bytes are never empty;
* the media type, sniffed from the bytes' magic numbers when not given (:func:`sniff_media_type`), and
  normalised (``image/jpg`` is ``image/jpeg``); an image type the magic numbers contradict is refused;
* a URL is ``http(s)://`` or ``gs://`` — passed to the vendor as a URL where the wire takes one.  The library
  never fetches a URL itself, so a prompt cannot make it reach into your network; a ``data:`` URL is decoded
  into bytes here (its base64 as browsers read it), so no payload ever travels in a ``url``.  A URL holding
  whitespace or control characters is refused (the check would read another URL than the vendor gets).

Which wire and model can carry which part, and the vendors' size limits, are the codecs' data
(:mod:`agentactors.providers`); a part a wire cannot carry is a request-kind error before anything is sent.

Payloads never leak into text: a part's ``repr`` (and so every event, log line and error that shows it) says
only its media type and size (a URL without its user info and query: both may hold credentials), and the event
serialiser writes bytes as their size.
"""

from __future__ import annotations

import base64
import binascii
import itertools
import re
import urllib.parse
from typing import Any, TypeAlias, cast

import attrs

__all__ = [
    "AUDIO_BYTES_PER_SECOND",
    "AUDIO_TOKENS_PER_SECOND",
    "IMAGE_TOKENS",
    "PAGE_TOKENS",
    "URL_DOCUMENT_PAGES",
    "Audio",
    "Document",
    "Image",
    "MediaPart",
    "Part",
    "Text",
    "describe",
    "is_part",
    "shown_url",
    "size_text",
    "sniff_media_type",
]

# --- token estimates (for ProviderActor's tokens-per-minute budget) --------------------------------------------
#: An image, whatever its size: Anthropic's cost of an image at its largest unresized size (~1.15 megapixels,
#: "about 1,600 tokens", docs.claude.com vision guide); OpenAI's high-detail 1024x1024 is 765 and Gemini's
#: 258–1,290, so one figure errs on the side of the budget for most models.  It under-counts where a model bills
#: more: Claude Opus 4.7's high-resolution images (up to ~3.75 MP: about 5,000) and gpt-4o-mini's (2,833 + 5,667
#: a tile); the vendor's usage then corrects the budget.
IMAGE_TOKENS = 1_600
#: A PDF page: the middle of Anthropic's documented 1,500–3,000 tokens per page (text plus the page image);
#: Gemini counts 258.
PAGE_TOKENS = 2_000
#: A document given by URL has no bytes to count pages in: it counts as this many pages.
URL_DOCUMENT_PAGES = 10
#: A second of audio: Gemini's documented 32 tokens per second.
AUDIO_TOKENS_PER_SECOND = 32
#: Compressed audio whose header gives no duration is taken to run at 128 kbit/s.
AUDIO_BYTES_PER_SECOND = 16_000

# Aliases vendors and browsers use for the same type.
_ALIASES = {
    "image/jpg": "image/jpeg",
    "image/pjpeg": "image/jpeg",
    "audio/mp3": "audio/mpeg",
    "audio/x-wav": "audio/wav",
    "audio/wave": "audio/wav",
    "audio/vnd.wave": "audio/wav",
    "audio/x-flac": "audio/flac",
    "audio/x-aiff": "audio/aiff",
    "audio/x-m4a": "audio/mp4",
    "audio/m4a": "audio/mp4",
}
_MEDIA_TYPE = re.compile(r"^[a-z0-9][a-z0-9!#$&^_.+-]*/[a-z0-9][a-z0-9!#$&^_.+-]*$")
_URL_SCHEMES = frozenset({"http", "https", "gs"})
# Whitespace and control characters: urlsplit drops tabs and newlines (and strips the ends) before the scheme is
# read, so a URL holding them would be checked in one form and sent in another.  RFC 3986 has them percent-encoded.
_URL_UNSAFE = re.compile(r"[\x00-\x20\x7f]")
# A data: URL's base64, read as browsers read it (WHATWG "forgiving-base64 decode"): whitespace dropped, then the
# alphabet without padding.
_B64_SPACE = re.compile(r"[\t\n\f\r ]+")
_B64_ALPHABET = re.compile(r"[A-Za-z0-9+/]*")
# The image types whose magic numbers sniff_media_type knows: a given type among these that the bytes contradict
# is refused (the vendor would refuse it after sending: Anthropic's "does not match the provided media type").
_SNIFFED_IMAGES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp", "image/heic", "image/heif"})
_HEIF_FAMILY = frozenset({"image/heic", "image/heif"})
# The page tree's /Count (the root's is the largest: outline counts are small) and page objects.  Matches are
# capped, so crafted bytes cost a bounded scan, and a plain regex each: no backtracking between the two names.
_PDF_COUNT = re.compile(rb"/Count\s+(\d{1,7})")
_PDF_MATCHES = 10_000
_PDF_PAGE = re.compile(rb"/Type\s*/Page(?![A-Za-z])")
# A PDF whose page tree sits in compressed object streams shows no page objects: count one page per this much.
_PDF_BYTES_PER_PAGE = 100_000


def sniff_media_type(data: bytes) -> str | None:
    """The media type the bytes' magic numbers say (images, PDF, audio), or ``None`` when they say nothing known."""
    head = data[:16]
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if head.startswith(b"RIFF") and head[8:12] == b"WEBP":
        return "image/webp"
    if head.startswith(b"RIFF") and head[8:12] == b"WAVE":
        return "audio/wav"
    if b"%PDF-" in data[:1024]:  # the header may follow up to 1 KB of junk (PDF 1.7, annex H)
        return "application/pdf"
    if head[4:8] == b"ftyp":
        brand = head[8:12]
        if brand in (b"heic", b"heix", b"hevc", b"hevx"):
            return "image/heic"
        if brand in (b"mif1", b"msf1", b"heif"):
            return "image/heif"
        if brand in (b"M4A ", b"M4B "):
            return "audio/mp4"
        return None
    if head.startswith(b"fLaC"):
        return "audio/flac"
    if head.startswith(b"OggS"):
        return "audio/ogg"
    if head.startswith(b"FORM") and head[8:12] in (b"AIFF", b"AIFC"):
        return "audio/aiff"
    if head.startswith(b"ID3"):
        return "audio/mpeg"
    if len(head) >= 2 and head[0] == 0xFF:
        if head[1] & 0xF6 == 0xF0:  # ADTS sync word, layer 0: AAC
            return "audio/aac"
        if head[1] & 0xE0 == 0xE0:  # MPEG audio frame sync
            return "audio/mpeg"
    return None


def _normalised(media_type: str) -> str:
    if not isinstance(media_type, str):
        raise TypeError(f"media_type must be a str, not {type(media_type).__name__}")
    value = media_type.split(";", 1)[0].strip().lower()
    value = _ALIASES.get(value, value)
    if not _MEDIA_TYPE.match(value):
        raise ValueError(f"media_type must look like 'type/subtype', not {media_type!r}")
    return value


def _to_bytes(value: bytes | bytearray | memoryview | None) -> bytes | None:
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, bytearray | memoryview):
        return bytes(value)
    raise TypeError(f"data must be bytes, not {type(value).__name__}")


def _to_document_bytes(value: bytes | bytearray | memoryview | str | None) -> bytes | None:
    # A text document may be given as the text itself.
    return value.encode("utf-8") if isinstance(value, str) else _to_bytes(value)


def _decode_data_url(url: str) -> tuple[bytes, str | None]:
    """``data:[<type>][;base64],<payload>`` → (bytes, media type or None)."""
    header, sep, payload = url[5:].partition(",")
    if not sep:
        raise ValueError("a data: URL needs a ',' before its payload")
    params = [p.strip() for p in header.split(";")]
    is_base64 = "base64" in (p.lower() for p in params[1:])
    media_type = params[0] or None
    if is_base64:
        # WHATWG's forgiving-base64 decode, as browsers read data: URLs: ASCII whitespace ignored, padding optional.
        text = _B64_SPACE.sub("", urllib.parse.unquote(payload))
        if len(text) % 4 == 0:
            text = text[:-2] if text.endswith("==") else text[:-1] if text.endswith("=") else text
        if len(text) % 4 == 1 or not _B64_ALPHABET.fullmatch(text):
            raise ValueError("the data: URL's base64 payload does not decode")
        try:
            data = base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
        except (binascii.Error, ValueError) as exc:
            raise ValueError("the data: URL's base64 payload does not decode") from exc
    else:
        data = urllib.parse.unquote_to_bytes(payload)
    return data, media_type


def _checked_url(url: Any) -> str:
    if not isinstance(url, str):
        raise TypeError(f"url must be a str, not {type(url).__name__}")
    if _URL_UNSAFE.search(url):
        raise ValueError(
            f"a part's url holds whitespace or control characters (percent-encode them): {shown_url(url)!r}"
        )
    scheme = urllib.parse.urlsplit(url).scheme.lower()
    if scheme not in _URL_SCHEMES or not urllib.parse.urlsplit(url).netloc:
        raise ValueError(
            f"a part's url must be http(s):// or gs:// (the vendor fetches it; this library never does), "
            f"not {shown_url(url)!r}; pass the bytes as data= instead"
        )
    return url


def shown_url(url: str) -> str:
    """``url`` as reprs, errors and event records show it: without its user info, query and fragment (a password,
    a presigned URL's signature and session token are credentials); a ``data:`` URL as ``data:…``.

    A long URL is shown bounded: its scheme and host (each at most 100 characters), then its path's first
    160 characters and how many more there were.

    The part keeps the whole URL — the vendor is sent it — and only stores that must resend it (a durable run's
    journal, a session) write it whole.
    """
    parts = urllib.parse.urlsplit(url)
    tail = "?…" if parts.query or parts.fragment else ""
    if parts.scheme == "data":
        return "data:…"
    host = parts.netloc.rpartition("@")[2]  # ``user:password@`` dropped
    if len(url) <= _URL_SHOWN:
        return urllib.parse.urlunsplit((parts.scheme, host, parts.path, "", "")) + tail
    path = parts.path
    if len(path) > _PATH_SHOWN:
        path = f"{path[:_PATH_SHOWN]}…({len(path) - _PATH_SHOWN} more characters)"
    shown = urllib.parse.urlunsplit((_bounded(parts.scheme), _bounded(host), path, "", ""))
    return shown + tail


_URL_SHOWN = 400  # a URL this long or shorter is shown whole (but for its user info, query and fragment)
_PATH_SHOWN = 160


def _bounded(text: str, limit: int = 100) -> str:
    return text if len(text) <= limit else text[:limit] + "…"


def _check_image_bytes(name: str, data: bytes, media_type: str) -> None:
    """Refuse a given image type the bytes' magic numbers contradict (a type they cannot tell is taken as given).

    Bytes the magic numbers say are another image type, or no image at all (a PDF, a WAV), are refused.
    """
    if media_type not in _SNIFFED_IMAGES:
        return
    sniffed = sniff_media_type(data)
    if sniffed is None or sniffed == media_type:
        return
    if sniffed in _HEIF_FAMILY and media_type in _HEIF_FAMILY:
        return  # HEIC is a HEIF: either name fits the same bytes
    if not sniffed.startswith("image/"):
        part = "Audio" if sniffed.startswith("audio/") else "Document"
        raise ValueError(
            f"the {name}'s bytes are {sniffed}, not {media_type}: no image (a vendor refuses them after sending); "
            f"use {part}(...) for them"
        )
    raise ValueError(
        f"the {name}'s bytes are {sniffed}, not {media_type}: pass media_type={sniffed!r}, or none to have it "
        "sniffed (a vendor refuses an image whose type does not match its bytes)"
    )


def size_text(size: int) -> str:
    """A payload's size as :func:`describe` writes it: ``"512 B"``, ``"2.0 KB"``, ``"3.1 MB"``."""
    if size < 1024:
        return f"{size} B"
    if size < 1024 * 1024:
        return f"{size / 1024:.1f} KB"
    return f"{size / (1024 * 1024):.1f} MB"


class _Media:
    """What every media part shares (mixed into the attrs classes; holds no state of its own)."""

    __slots__ = ()
    kind: str = "media"
    data: bytes | None
    url: str | None
    media_type: str | None

    @property
    def size(self) -> int | None:
        """The payload's size in bytes; ``None`` for a part given by URL."""
        return None if self.data is None else len(self.data)

    def base64(self) -> str:
        """The payload as standard base64 (what every wire's inline form carries)."""
        if self.data is None:
            raise ValueError(f"{describe(cast(Any, self))} has no bytes to encode (it is given by URL)")
        return base64.b64encode(self.data).decode("ascii")

    def data_url(self) -> str:
        """The payload as a ``data:<media type>;base64,…`` URL (OpenAI's inline form)."""
        return f"data:{self.media_type};base64,{self.base64()}"

    def _check_source(self, name: str, media_type: str | None, category: str | None) -> None:
        if (self.data is None) == (self.url is None):
            raise ValueError(f"{name} takes exactly one of data= or url=")
        if self.url is not None and not isinstance(self.url, str):
            raise TypeError(f"{name}'s url must be a str, not {type(self.url).__name__}")
        if self.url is not None and self.url[:5].lower() == "data:":  # a scheme is case-insensitive (RFC 3986)
            data, given = _decode_data_url(self.url)
            object.__setattr__(self, "data", data)
            object.__setattr__(self, "url", None)
            media_type = media_type or given
        elif self.url is not None:
            _checked_url(self.url)
        if category is not None and self.data is not None and not self.data:
            raise ValueError(f"the {name} has no bytes (an empty payload is no {category} to any vendor)")
        explicit = media_type is not None  # given, or the data: URL's
        if media_type is None and self.data is not None:
            media_type = sniff_media_type(self.data)
            if media_type is None:
                raise ValueError(f"the {name}'s media type cannot be told from its bytes; pass media_type=")
        if media_type is not None:
            media_type = _normalised(media_type)
            top = media_type.split("/", 1)[0]
            if category is not None and top != category:
                raise ValueError(f"{name} media_type must be {category}/*, not {media_type!r}")
            if category is None and top in ("image", "audio"):
                raise ValueError(f"a {top} is not a Document: use {top.capitalize()}(...) for {media_type!r}")
            if explicit and category == "image" and self.data is not None:
                _check_image_bytes(name, self.data, media_type)
        object.__setattr__(self, "media_type", media_type)

    def _repr_fields(self) -> str:
        if self.data is not None:
            return f"media_type={self.media_type!r}, size={len(self.data)}"
        return f"url={shown_url(self.url or '')!r}, media_type={self.media_type!r}"


@attrs.frozen(slots=True)
class Text:
    """A piece of text in a message (the text parts of a message, joined, are its ``content``)."""

    text: str = attrs.field()

    @text.validator
    def _check_text(self, _: attrs.Attribute[str], value: str) -> None:
        if not isinstance(value, str):
            raise TypeError(f"Text.text must be a str, not {type(value).__name__}")

    kind = "text"


@attrs.frozen(slots=True, repr=False)
class Image(_Media):
    """An image: ``Image(data=png_bytes)`` (media type sniffed) or ``Image(url="https://…/cat.jpg")``.

    :raises ValueError: neither or both of ``data`` / ``url``, a URL that is not http(s) or gs, a media type
        that is not ``image/*``, no bytes, bytes whose type cannot be told without one, or bytes whose magic
        numbers say another image type than the one given (``image/heic`` and ``image/heif`` are one family).
    :raises TypeError: ``data`` that is not bytes, or a ``url`` that is not a str.
    """

    data: bytes | None = attrs.field(default=None, converter=_to_bytes)
    url: str | None = None
    media_type: str | None = None

    kind = "image"

    def __attrs_post_init__(self) -> None:
        self._check_source("Image", self.media_type, "image")

    @property
    def estimated_tokens(self) -> int:
        """Tokens this image is budgeted at (:data:`IMAGE_TOKENS`)."""
        return IMAGE_TOKENS

    def __repr__(self) -> str:
        return f"Image({self._repr_fields()})"


def _pdf_pages(data: bytes) -> int:
    """An estimate for budgeting, not a parse: the largest /Count, else the page objects, else by size."""
    counts = [int(m.group(1)) for m in itertools.islice(_PDF_COUNT.finditer(data), _PDF_MATCHES)]
    if counts and max(counts) > 0:
        return max(counts)  # the root page tree's /Count is the document's total
    pages = sum(1 for _ in itertools.islice(_PDF_PAGE.finditer(data), _PDF_MATCHES))
    return pages if pages else 1 + len(data) // _PDF_BYTES_PER_PAGE


@attrs.frozen(slots=True, repr=False)
class Document(_Media):
    """A document: a PDF (the default) or text (``text/plain``, ``text/markdown``, …), by bytes or URL.

    ``title`` names it to the model where the wire has a field for that (Anthropic's ``title``, OpenAI's
    ``filename``).  ``pages`` is the page count read from a PDF's page tree (an estimate when the tree is
    compressed; ``None`` for a URL or a text document), used for token budgeting.  A text document's bytes may
    be given as a ``str``.  ``media_type=None`` is the default (a PDF) for a URL, and sniffed from bytes.

    :raises ValueError: neither or both of ``data`` / ``url``, a URL that is not http(s) or gs, an image or audio
        media type, bytes that are not a PDF under the default media type, or text that is not UTF-8.
    """

    data: bytes | None = attrs.field(default=None, converter=_to_document_bytes)
    url: str | None = None
    media_type: str = "application/pdf"
    title: str | None = None
    pages: int | None = attrs.field(init=False, default=None, eq=False)

    kind = "document"

    def __attrs_post_init__(self) -> None:
        if self.title is not None and not isinstance(self.title, str):
            raise TypeError(f"Document.title must be a str, not {type(self.title).__name__}")
        self._check_source("Document", self.media_type, None)
        if self.data is None:
            kept: str | None = self.media_type
            if kept is None:  # a URL with media_type=None: the default, as when none is passed
                object.__setattr__(self, "media_type", "application/pdf")
            return
        if self.media_type == "application/pdf":
            if b"%PDF-" not in self.data[:1024]:
                raise ValueError("the Document's bytes are not a PDF; pass the media_type they are")
            object.__setattr__(self, "pages", _pdf_pages(self.data))
        elif self.media_type.startswith("text/"):
            try:
                self.data.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise ValueError("a text Document's bytes must be UTF-8") from exc

    @property
    def text(self) -> str | None:
        """A text document's content as a ``str`` (``None`` for a PDF or a URL)."""
        if self.data is None or not self.media_type.startswith("text/"):
            return None
        return self.data.decode("utf-8")

    @property
    def estimated_tokens(self) -> int:
        """Tokens this document is budgeted at: :data:`PAGE_TOKENS` a page, a text document's chars / 4."""
        text = self.text
        if text is not None:
            return len(text) // 4 + 1
        return PAGE_TOKENS * (self.pages if self.pages is not None else URL_DOCUMENT_PAGES)

    def __repr__(self) -> str:
        title = f", title={self.title!r}" if self.title is not None else ""
        pages = f", pages={self.pages}" if self.pages is not None else ""
        return f"Document({self._repr_fields()}{pages}{title})"


def _wav_seconds(data: bytes) -> float | None:
    if len(data) < 44 or not (data.startswith(b"RIFF") and data[8:12] == b"WAVE"):
        return None
    byte_rate = int.from_bytes(data[28:32], "little")
    return (len(data) - 44) / byte_rate if byte_rate > 0 else None


@attrs.frozen(slots=True, repr=False)
class Audio:
    """Audio, by bytes only (no wire takes an audio URL): ``Audio(wav_bytes)``, media type sniffed.

    :raises ValueError: no bytes (or empty ones), a media type that is not ``audio/*``, or bytes whose type cannot
        be told without one.
    """

    data: bytes = attrs.field(converter=_to_bytes)
    media_type: str | None = None

    kind = "audio"

    @property
    def url(self) -> None:
        """Always ``None``: audio travels as bytes."""
        return None

    def __attrs_post_init__(self) -> None:
        if self.data is None:
            raise ValueError("Audio takes its bytes: Audio(data, media_type=None)")
        if not self.data:
            raise ValueError("the Audio has no bytes (an empty payload is no audio to any vendor)")
        media_type = self.media_type
        if media_type is None:
            media_type = sniff_media_type(self.data)
            if media_type is None:
                raise ValueError("the Audio's media type cannot be told from its bytes; pass media_type=")
        media_type = _normalised(media_type)
        if not media_type.startswith("audio/"):
            raise ValueError(f"Audio media_type must be audio/*, not {media_type!r}")
        object.__setattr__(self, "media_type", media_type)

    @property
    def size(self) -> int:
        """The payload's size in bytes."""
        return len(self.data)

    @property
    def seconds(self) -> float:
        """The duration: a WAV header's, else the size at :data:`AUDIO_BYTES_PER_SECOND`."""
        exact = _wav_seconds(self.data)
        return exact if exact is not None else len(self.data) / AUDIO_BYTES_PER_SECOND

    @property
    def estimated_tokens(self) -> int:
        """Tokens this audio is budgeted at (:data:`AUDIO_TOKENS_PER_SECOND` a second)."""
        return int(self.seconds * AUDIO_TOKENS_PER_SECOND) + 1

    def base64(self) -> str:
        """The payload as standard base64."""
        return base64.b64encode(self.data).decode("ascii")

    def data_url(self) -> str:
        """The payload as a ``data:`` URL."""
        return f"data:{self.media_type};base64,{self.base64()}"

    def __repr__(self) -> str:
        return f"Audio(media_type={self.media_type!r}, size={len(self.data)})"


MediaPart: TypeAlias = Image | Document | Audio
Part: TypeAlias = Text | Image | Document | Audio
_PART_TYPES = (Text, Image, Document, Audio)


def is_part(value: object) -> bool:
    """Whether ``value`` is a content part."""
    return isinstance(value, _PART_TYPES)


def describe(part: MediaPart) -> str:
    """A part as errors and events name it: its kind, media type and size (or URL, query removed); no payload."""
    kind = type(part).__name__
    if part.data is not None:
        return f"{kind}({part.media_type}, {size_text(len(part.data))})"
    return f"{kind}({part.media_type or 'media type unknown'} at {shown_url(part.url or '')})"
