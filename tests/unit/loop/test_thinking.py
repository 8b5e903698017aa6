"""Think blocks: one tag grammar for the whole answer and the stream, in linear work whatever the text holds."""

from __future__ import annotations

import re
import time
from collections.abc import Callable

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from agentactors.loop.thinking import ThinkFilter, strip_think


def _cpu(fn: Callable[[], object]) -> float:
    """CPU seconds ``fn`` takes (process time: the machine may be shared)."""
    started = time.process_time()
    fn()
    return time.process_time() - started


def _stream(text: str, size: int) -> str:
    f = ThinkFilter()
    shown = [f.feed(text[i : i + size]) for i in range(0, len(text), size)]
    shown.append(f.finish())
    return "".join(shown)


def test_many_tag_starts_without_a_close_are_stripped_in_linear_time() -> None:
    # Each "<think" used to be tried against the whole rest of the text for its ">": ~17 s here.
    text = "<think" * 50_000
    took = _cpu(lambda: strip_think(text))
    assert took < 2.0
    assert strip_think(text) == text


def test_the_filter_reads_markup_in_linear_time() -> None:
    # Every "<" used to copy (and lower-case) the rest of its delta: a 1.3 MB HTML answer in 4 deltas took ~17 s.
    text = "<p>x</p>" * 160_000
    took = _cpu(lambda: _stream(text, len(text) // 4))
    assert took < 2.0
    assert _stream(text, len(text) // 4) == text


def test_the_filter_reads_many_think_blocks_in_linear_time() -> None:
    # Inside a block each search lower-cased the whole delta again: 80,000 blocks in 4 deltas took ~15 s.
    text = "<think>a</think>b" * 80_000
    took = _cpu(lambda: _stream(text, len(text) // 4))
    assert took < 2.0
    assert _stream(text, len(text) // 4) == "b" * 80_000


@pytest.mark.parametrize(
    "text",
    [
        '<think type="plan">the secret plan</think>The answer.',
        "<think>the secret plan</think >The answer.",
        "<THINKING>the secret plan</Thinking\n>The answer.",
        "<reasoning effort='high'>the secret plan</reasoning>The answer.",
    ],
)
@pytest.mark.parametrize("size", [1, 2, 3, 7, 1000])
def test_the_stream_shows_what_the_answer_keeps(text: str, size: int) -> None:
    # The stream used to know only bare lower-case tags: it showed the plan of the first, and hid the answer of
    # the second (waiting for a "</think>" that never came).
    assert _stream(text, size).strip() == strip_think(text) == "The answer."


def test_a_stream_cut_inside_a_tag_or_a_block() -> None:
    assert _stream("Answer <thi", 2) == "Answer <thi"  # never became a tag: it was text
    assert _stream("Answer <think>cut off", 2) == "Answer "  # a block cut off is thinking
    assert _stream("Answer <think>cut off </thi", 3) == "Answer "
    assert strip_think("Answer <think>cut off </thi") == "Answer"


def test_a_closing_tag_split_after_its_first_character_still_closes() -> None:
    f = ThinkFilter()
    shown = [f.feed("<think>")]
    shown += [f.feed("x" * 97 + "<") for _ in range(1000)]  # each delta ends on what may start "</think>"
    shown += [f.feed("/think>Answer"), f.finish()]
    assert "".join(shown) == "Answer"


_OPENING = re.compile(r"<(think|thinking|reasoning)\b[^<>]*>", re.IGNORECASE)
_CLOSING = re.compile(r"</(think|thinking|reasoning)\s*>", re.IGNORECASE)
_word = st.sampled_from(["a", "b c", "\n", "<", ">", "x<y", "</", "think", "<b>", "{", "</th"])
_tag = st.sampled_from(["think", "thinking", "reasoning", "THINK", "Think"])
_attrs = st.sampled_from(["", ' a="1"', " x", "\n"])
_space = st.sampled_from(["", " ", "\n  "])


@st.composite
def _block(draw: st.DrawFn) -> str:
    name = draw(_tag)
    body = "".join(draw(st.lists(_word, max_size=4)))
    closed = draw(st.booleans())
    return f"<{name}{draw(_attrs)}>{body}" + (f"</{name.lower()}{draw(_space)}>" if closed else "")


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(_word, _block()), max_size=8), st.integers(1, 9))
def test_the_stream_and_the_answer_agree(pieces: list[str], size: int) -> None:
    text = "".join(pieces)
    # A closing tag with no opening tag anywhere: the answer drops what came before it, which the stream has
    # already shown (it cannot take back what it showed).
    assume(_OPENING.search(text) is not None or _CLOSING.search(text) is None)
    assert _stream(text, size).strip() == strip_think(text)
