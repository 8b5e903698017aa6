"""Content parts a hostile caller builds: bytes that lie about their type, data: URLs as browsers write them, and the
vendors' size limits measured the way the vendor measures them."""

from __future__ import annotations

import base64

import pytest

from agentactors import Image, Message, Text, UnsupportedContentError
from agentactors.providers._media import MediaLimits, check_limits

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + b"\x01" * 64
PDF = b"%PDF-1.7\n1 0 obj << /Type /Catalog >>\n"
WAV = b"RIFF\x24\x00\x00\x00WAVEfmt " + b"\x00" * 40


@pytest.mark.parametrize(("data", "sniffed"), [(PDF, "application/pdf"), (WAV, "audio/wav")])
def test_an_image_whose_bytes_are_a_known_non_image_is_refused(data: bytes, sniffed: str) -> None:
    # A PDF or a WAV under image/png is no PNG: the vendor refuses it after sending ("Could not process image").
    with pytest.raises(ValueError, match=f"bytes are {sniffed}, not image/png"):
        Image(data=data, media_type="image/png")
    with pytest.raises(ValueError, match=f"bytes are {sniffed}, not image/png"):
        Image(url="data:image/png;base64," + base64.b64encode(data).decode())


@pytest.mark.parametrize("scheme", ["DATA", "Data", "dAtA"])
def test_a_data_url_scheme_is_case_insensitive(scheme: str) -> None:
    # RFC 3986: schemes are case-insensitive; "DATA:" was refused as "must be http(s)://".
    image = Image(url=f"{scheme}:image/png;base64," + base64.b64encode(PNG).decode())
    assert image.data == PNG and image.url is None and image.media_type == "image/png"


def test_a_data_url_with_wrapped_or_unpadded_base64_decodes() -> None:
    # Browsers decode data: URLs forgivingly (WHATWG "forgiving-base64 decode"): whitespace ignored, padding optional.
    encoded = base64.b64encode(PNG + b"xy").decode()
    assert encoded.endswith("=")
    wrapped = "\n".join(encoded[i:i + 16] for i in range(0, len(encoded), 16))
    assert Image(url="data:image/png;base64," + wrapped).data == PNG + b"xy"
    assert Image(url="data:image/png;base64," + encoded.rstrip("=")).data == PNG + b"xy"
    # Still refused: a character outside the alphabet, and a length no padding can complete.
    for bad in (encoded[:-4] + "!!==", encoded.rstrip("=") + "A" * 3):
        with pytest.raises(ValueError, match="does not decode"):
            Image(url="data:image/png;base64," + bad)


def test_a_per_image_limit_measured_as_base64_counts_the_base64() -> None:
    # Anthropic's "image exceeds 5 MB maximum: 6405384 bytes > 5242880 bytes" is for a 4.8 MB file: the limit is on
    # the base64 text.  A 4 MB image (5.3 MB as base64) passed the check and drew the 400 after sending.
    limits = MediaLimits(image_base64_bytes=5 * 1024 * 1024)
    image = Image(data=PNG + b"\x00" * (4 * 1024 * 1024))
    over = r"as base64 .* over the 5 MB per-image limit \(5,242,880 bytes\)"
    with pytest.raises(UnsupportedContentError, match=over) as caught:
        check_limits([Message.user([Text("x"), image])], limits, wire="anthropic", model="claude-x")
    assert caught.value.part == "Image(image/png, 4.0 MB)"
    small = Image(data=PNG + b"\x00" * (3 * 1024 * 1024))  # 4 MB as base64
    check_limits([Message.user([Text("x"), small])], limits, wire="anthropic", model="claude-x")


def test_a_limit_is_named_in_the_vendors_words_and_in_bytes() -> None:
    # Bedrock's 3.75 MB (3,750,000 bytes) read "over the 3.57628 MB per-image limit".
    image = Image(data=PNG + b"\x00" * 4_000_000)
    with pytest.raises(UnsupportedContentError) as caught:
        check_limits([Message.user([image])], MediaLimits(image_bytes=3_750_000), wire="bedrock", model="m")
    assert "over the 3.75 MB per-image limit (3,750,000 bytes)" in str(caught.value)
    with pytest.raises(UnsupportedContentError) as caught:
        check_limits([Message.user([image])], MediaLimits(request_bytes=5 * 1024 * 1024), wire="anthropic", model="m")
    assert "over the 5 MB per-request limit (5,242,880 bytes of base64" in str(caught.value)
