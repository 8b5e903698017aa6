"""Leftovers of the parts' audits: a URL is shown bounded, an empty document is refused where the wire would 400."""

from __future__ import annotations

import pytest

from agentactors import Document, Image
from agentactors.events import to_jsonable
from agentactors.parts import describe, shown_url

LONG = "https://user:pw@cdn.example.com/" + "a" * 300_000 + "?X-Amz-Signature=s3cr3t"


def test_a_very_long_url_is_shown_bounded_with_its_scheme_and_host() -> None:
    shown = shown_url(LONG)
    assert len(shown) < 400
    assert shown.startswith("https://cdn.example.com/aaa")
    assert "more characters" in shown and shown.endswith("?…")
    assert "pw" not in shown and "s3cr3t" not in shown


def test_a_long_urls_repr_description_and_record_are_bounded() -> None:
    image = Image(url=LONG)
    assert image.url == LONG  # the part keeps the whole URL: the vendor is sent it
    for text in (repr(image), describe(image), repr(Document(url=LONG, media_type="application/pdf"))):
        assert len(text) < 500 and "cdn.example.com" in text and "s3cr3t" not in text


def test_a_long_url_in_an_event_record_is_bounded() -> None:
    record = to_jsonable({"part": Image(url=LONG)})
    assert len(str(record)) < 1_000 and "s3cr3t" not in str(record)


def test_a_refused_long_url_is_bounded_in_the_error() -> None:
    for bad in ("ftp://host/" + "b" * 300_000, "https://host/" + "c" * 300_000 + " space"):
        with pytest.raises(ValueError) as caught:
            Image(url=bad)
        assert len(str(caught.value)) < 1_000


def test_a_very_long_host_is_bounded_too() -> None:
    shown = shown_url("https://" + "h" * 300_000 + ".example/x")
    assert len(shown) < 400 and shown.startswith("https://hhh")


def test_a_short_url_is_shown_as_before() -> None:
    assert shown_url("https://u:p@host/a/b.png?sig=1#f") == "https://host/a/b.png?…"
    assert shown_url("gs://bucket/obj.pdf") == "gs://bucket/obj.pdf"
    assert shown_url("data:image/png;base64,AAAA") == "data:…"
