"""Content parts and messages that carry them: built checked, sniffed, payload-free in every text."""

from __future__ import annotations

import base64
import copy
import pickle
import struct
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import assert_type

import attrs
import pytest

from agentactors import Audio, Document, Image, Message, Text
from agentactors.parts import (
    AUDIO_TOKENS_PER_SECOND,
    IMAGE_TOKENS,
    PAGE_TOKENS,
    URL_DOCUMENT_PAGES,
    Part,
    describe,
    sniff_media_type,
)

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + b"\x01" * 64
JPEG = b"\xff\xd8\xff\xe0" + b"\x02" * 64
PDF = b"%PDF-1.7\n1 0 obj << /Type /Catalog /Pages 2 0 R >>\n2 0 obj << /Type /Pages /Kids [3 0 R] /Count 4 >>\n"
SECRET_BYTES = b"\x89PNG\r\n\x1a\n" + b"TOPSECRETPAYLOAD" * 8


def wav(seconds: float, rate: int = 8000) -> bytes:
    data = b"\x00" * int(rate * seconds)
    header = b"RIFF" + struct.pack("<I", 36 + len(data)) + b"WAVEfmt " + struct.pack("<IHHIIHH", 16, 1, 1, rate, rate,
                                                                                       1, 8)
    return header + b"data" + struct.pack("<I", len(data)) + data


@pytest.mark.parametrize(
    ("data", "media_type"),
    [
        (PNG, "image/png"),
        (JPEG, "image/jpeg"),
        (b"GIF89a" + b"\0" * 10, "image/gif"),
        (b"RIFF\0\0\0\0WEBPVP8 ", "image/webp"),
        (b"\0\0\0\x18ftypheic\0\0\0\0", "image/heic"),
        (b"\0\0\0\x18ftypmif1\0\0\0\0", "image/heif"),
        (PDF, "application/pdf"),
        (b"junk" * 10 + PDF, "application/pdf"),
        (wav(0.1), "audio/wav"),
        (b"ID3\x04\0\0\0\0\0\0", "audio/mpeg"),
        (b"\xff\xfb\x90\x00" + b"\0" * 8, "audio/mpeg"),
        (b"\xff\xf1\x50\x80" + b"\0" * 8, "audio/aac"),
        (b"fLaC\0\0\0\x22", "audio/flac"),
        (b"OggS\0\x02" + b"\0" * 8, "audio/ogg"),
        (b"FORM\0\0\0\0AIFF", "audio/aiff"),
        (b"\0\0\0\x20ftypM4A \0\0\0\0", "audio/mp4"),
        (b"hello, world", None),
        (b"", None),
    ],
)
def test_media_types_are_sniffed_from_magic_numbers(data: bytes, media_type: str | None) -> None:
    assert sniff_media_type(data) == media_type


def test_an_image_takes_bytes_or_a_url_exactly() -> None:
    assert Image(data=PNG).media_type == "image/png"
    assert Image(data=bytearray(JPEG)).data == JPEG
    assert Image(data=PNG, media_type="image/PNG; charset=x").media_type == "image/png"
    assert Image(data=JPEG, media_type="image/jpg").media_type == "image/jpeg"  # aliases are normalised
    assert Image(url="https://example.com/cat.jpg").media_type is None  # never fetched, so not sniffed
    with pytest.raises(ValueError, match="exactly one of data= or url="):
        Image()
    with pytest.raises(ValueError, match="exactly one of data= or url="):
        Image(data=PNG, url="https://example.com/a.png")
    with pytest.raises(ValueError, match="cannot be told from its bytes"):
        Image(data=b"not an image")
    with pytest.raises(ValueError, match="must be image/"):
        Image(data=PNG, media_type="audio/wav")
    with pytest.raises(TypeError, match="data must be bytes"):
        Image(data="iVBOR...")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="look like 'type/subtype'"):
        Image(data=PNG, media_type="png")


@pytest.mark.parametrize("url", ["file:///etc/passwd", "ftp://host/x.png", "http:///nohost.png", "/local/x.png",
                                 "javascript:alert(1)"])
def test_a_url_part_is_http_or_gs_only_so_no_prompt_makes_the_library_fetch_anything(url: str) -> None:
    with pytest.raises(ValueError, match=r"http\(s\):// or gs://"):
        Image(url=url)
    assert Image(url="gs://bucket/cat.png").url == "gs://bucket/cat.png"


def test_a_data_url_is_decoded_into_bytes_so_no_payload_travels_in_url() -> None:
    url = "data:image/png;base64," + base64.b64encode(PNG).decode()
    image = Image(url=url)
    assert image.url is None and image.data == PNG and image.media_type == "image/png"
    assert Document(url="data:text/plain,hello%20there", media_type="text/plain").text == "hello there"
    with pytest.raises(ValueError, match="does not decode"):
        Image(url="data:image/png;base64,!!!")
    with pytest.raises(ValueError, match="needs a ','"):
        Image(url="data:image/png;base64")


def test_documents_are_pdf_or_text() -> None:
    pdf = Document(data=PDF, title="report")
    assert pdf.media_type == "application/pdf" and pdf.pages == 4 and pdf.title == "report"
    text = Document(data="plain text, given as a str", media_type="text/plain")
    assert text.data == b"plain text, given as a str" and text.text == "plain text, given as a str"
    assert text.pages is None and pdf.text is None
    with pytest.raises(ValueError, match="not a PDF"):
        Document(data=b"hello")
    with pytest.raises(ValueError, match="UTF-8"):
        Document(data=b"\xff\xfe", media_type="text/plain")
    with pytest.raises(ValueError, match="use Image"):
        Document(data=PNG, media_type="image/png")
    assert Document(url="https://example.com/r.pdf").media_type == "application/pdf"


def test_audio_takes_bytes_only() -> None:
    audio = Audio(wav(2.0))
    assert audio.media_type == "audio/wav" and audio.url is None and audio.seconds == pytest.approx(2.0)
    assert Audio(b"\0" * 100, media_type="audio/mp3").media_type == "audio/mpeg"
    with pytest.raises(ValueError, match="cannot be told"):
        Audio(b"\0" * 100)
    with pytest.raises(ValueError, match="must be audio/"):
        Audio(PNG, media_type="image/png")


def test_token_estimates_per_image_page_and_second() -> None:
    assert Image(data=PNG).estimated_tokens == IMAGE_TOKENS
    assert Image(url="https://example.com/a.png").estimated_tokens == IMAGE_TOKENS
    assert Document(data=PDF).estimated_tokens == 4 * PAGE_TOKENS
    assert Document(url="https://example.com/a.pdf").estimated_tokens == URL_DOCUMENT_PAGES * PAGE_TOKENS
    assert Document(data="x" * 400, media_type="text/plain").estimated_tokens == 101
    assert Audio(wav(10.0)).estimated_tokens == 10 * AUDIO_TOKENS_PER_SECOND + 1
    # A page tree without /Count still counts its page objects; a compressed one counts by size.
    loose = b"%PDF-1.4\n" + b"<< /Type /Page >>\n" * 3 + b"<< /Type /Pages >>\n"
    assert Document(data=loose).pages == 3
    assert Document(data=b"%PDF-1.5\n" + b"\0" * 250_000).pages == 3
    # An estimate, not a parse: crafted bytes cost a bounded scan (matches are capped)
    assert Document(data=b"%PDF-1.4\n" + b"/Type /Page " * 20_000).pages == 10_000


def test_no_payload_in_a_repr_a_description_or_a_message_repr() -> None:
    image = Image(data=SECRET_BYTES)
    encoded = base64.b64encode(SECRET_BYTES).decode()
    texts = [repr(image), describe(image), repr(Message.user([Text("q"), image])),
             repr(Document(data=PDF)), repr(Audio(SECRET_BYTES, media_type="audio/wav"))]
    for text in texts:
        assert "TOPSECRET" not in text and encoded[:20] not in text and "\\x89" not in text
    assert repr(image) == f"Image(media_type='image/png', size={len(SECRET_BYTES)})"
    assert describe(image) == "Image(image/png, 136 B)"
    signed = Image(url="https://bucket.example.com/cat.png?X-Amz-Signature=abcdef0123456789")
    assert "abcdef" not in repr(signed) and "abcdef" not in describe(signed)
    assert "https://bucket.example.com/cat.png?…" in repr(signed)


def test_a_message_of_parts_keeps_them_and_its_content_is_their_text() -> None:
    image = Image(data=PNG)
    message = Message.user([Text("What is"), image, Text("this?")])
    assert message.content == "What is\nthis?"
    assert message.parts == (Text("What is"), image, Text("this?"))
    assert message.media == (image,)
    assert Message.user(image).parts == (image,) and Message.user(image).content == ""
    assert Message.user("plain").parts == (Text("plain"),) and Message.user("plain").media == ()
    assert Message.user("").parts == ()


def test_text_only_parts_are_just_text() -> None:
    assert Message.user([Text("a"), Text("b")]) == Message.user("a\nb")
    assert Message(role="user", parts=[Text("a")]) == Message.user("a")


def test_parts_are_typed_as_accepted_one_part_or_any_iterable_and_kept_as_a_tuple() -> None:
    # mypy --strict checks these calls (make test): each is what a user writes, each is accepted at run time.
    image = Image(data=PNG)
    listed: list[Part] = [Text("look"), image]
    seq: Sequence[Part] = listed
    iterable: Iterable[Part] = iter(listed)
    messages = [
        Message(role="user", parts=[Text("look"), image]),
        Message(role="user", parts=listed),
        Message(role="user", parts=(Text("look"), image)),
        Message(role="user", parts=seq),
        Message(role="user", parts=iterable),
        Message(role="user", parts=(p for p in listed)),
    ]
    for message in messages:
        assert_type(message.parts, tuple[Part, ...])
        assert message.parts == (Text("look"), image) and message.content == "look"
    assert Message(role="tool", tool_call_id="c1", parts=image).parts == (image,)  # one part
    # The factories take the same: a generator too.
    assert Message.user(p for p in listed) == Message(role="user", parts=listed)
    assert Message.tool("c1", (p for p in listed)).parts == (Text("look"), image)
    assert Message(role="user", content="x", parts=None).parts == (Text("x"),)


def test_only_user_and_tool_messages_carry_media() -> None:
    with pytest.raises(ValueError, match="only user and tool messages"):
        Message(role="assistant", parts=[Image(data=PNG)])
    with pytest.raises(ValueError, match="only user and tool messages"):
        Message(role="system", parts=[Image(data=PNG)])
    with pytest.raises(TypeError, match="parts are Text, Image, Document or Audio"):
        Message.user(["just a string"])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="not a string"):
        Message(role="user", parts="abc")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="takes its content from their text"):
        Message(role="user", content="other", parts=[Text("x"), Image(data=PNG)])
    tool = Message.tool("c1", [Text("the chart"), Image(data=PNG)], "plot")
    assert tool.content == "the chart" and len(tool.media) == 1 and tool.tool_call_id == "c1"


def test_with_text_keeps_the_media_after_the_new_text() -> None:
    image = Image(data=PNG)
    tool = Message.tool("c1", [Text("chart"), image], "plot", is_error=False)
    noted = tool.with_text("chart\n\n[note]")
    assert noted.content == "chart\n\n[note]" and noted.media == (image,) and noted.name == "plot"
    plain = Message.tool("c2", "x", "t", is_error=True)
    assert plain.with_text("y") == Message.tool("c2", "y", "t", is_error=True)


def test_parts_and_messages_pickle_copy_and_evolve() -> None:
    message = Message.user([Text("q"), Image(data=PNG), Document(data=PDF, title="t"), Audio(wav(0.1))])
    assert pickle.loads(pickle.dumps(message)) == message
    assert attrs.evolve(message) == message
    assert attrs.evolve(message, name="n").parts == message.parts
    assert pickle.loads(pickle.dumps(Document(data=PDF))).pages == 4
    assert copy.deepcopy(message) == message and copy.copy(message) == message


@pytest.mark.anyio
async def test_an_event_record_never_holds_the_credentials_a_part_url_carries(tmp_path: Path) -> None:
    from agentactors import Agent, JsonlRecorder, ScriptedProvider

    urls = [
        "https://user:hunter2pass@example.com/a.png",
        "https://bucket.s3.amazonaws.com/a.png?X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20261205&"
        "X-Amz-Signature=abcdef0123456789abcdef&X-Amz-Security-Token=FQoGZXIvYXdzEJr",
        "https://storage.googleapis.com/b/a.png?X-Goog-Signature=0123abcd&sig=SECRETSIG123#frag",
    ]
    path = tmp_path / "events.jsonl"
    recorder = JsonlRecorder(path)
    await Agent(ScriptedProvider(["ok"]), recorders=[recorder]).run(
        [Message.user([Text("look"), *(Image(url=u) for u in urls)])]
    )
    recorder.close()
    text = path.read_text()
    assert "example.com/a.png" in text and "bucket.s3.amazonaws.com/a.png?…" in text  # the part is recorded
    for secret in ("hunter2pass", "AKIAIOSFODNN7EXAMPLE", "abcdef0123456789", "FQoGZXIvYXdzEJr", "0123abcd",
                   "SECRETSIG123", "frag"):
        assert secret not in text
