"""A Usage holds counts only, so every Usage built can be summed, stored and read back.

Wires build Usage from vendor JSON (Python's ``json`` reads NaN), and a custom provider passes on what its SDK
holds (``None`` for a count it did not get, a string).  Such a Usage was built as given; the journal and the
session codec then wrote it and lost it (``"12"`` came back as 12, ``None`` as 0) or could not read it again
(``int(NaN)``: a stored record that never loads).  Now the constructor reads what is not a count as 0, and a
record an older version wrote with one still loads.
"""

from __future__ import annotations

import json
import math
from fractions import Fraction
from typing import Any

import pytest

from agentactors.loop.pause import PausedRun
from agentactors.messages import Message, ToolCall, Usage
from agentactors.sessions.codec import paused_from_json, paused_to_json, usage_from_json, usage_to_json

TOP = 2**63 - 1


@pytest.mark.parametrize(
    ("given", "count"),
    [
        (12, 12),
        (0, 0),
        (TOP, TOP),
        (12.0, 12),
        (12.9, 12),
        (Fraction(7, 2), 3),
        (None, 0),
        (math.nan, 0),
        (math.inf, 0),
        (-math.inf, 0),
        (-1, 0),
        (-(10**12), 0),
        (TOP + 1, 0),
        (1e300, 0),
        ("12", 0),
        ("", 0),
        (True, 0),
        (b"12", 0),
        ([3], 0),
    ],
)
def test_a_count_that_is_not_one_is_read_as_none_reported(given: Any, count: int) -> None:
    for field in ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens"):
        usage = Usage(**{field: given})
        assert getattr(usage, field) == count and type(getattr(usage, field)) is int
        assert usage == Usage(**{field: count})


def test_sums_stay_counts() -> None:
    assert Usage(1, 2, 3, 4, 5) + Usage(10, 20, 30, 40, 50) == Usage(11, 22, 33, 44, 55)
    assert Usage(TOP, 1) + Usage(5, 1) == Usage(TOP, 2)  # capped: a store reads it back as itself
    assert (Usage(None, 3) + Usage(math.nan, "x")).total_tokens == 3  # type: ignore[arg-type]


HOSTILE = [
    Usage(input_tokens=None),  # type: ignore[arg-type]
    Usage(output_tokens=math.nan),  # type: ignore[arg-type]
    Usage(input_tokens="12", output_tokens=math.nan),  # type: ignore[arg-type]
    Usage(input_tokens=-(10**12), output_tokens=10),
    Usage(12.5, math.inf, 10**30, 3, 4),  # type: ignore[arg-type]
]


@pytest.mark.parametrize("usage", HOSTILE)
def test_every_usage_built_is_stored_and_read_back_as_itself(usage: Usage) -> None:
    text = json.dumps(usage_to_json(usage), allow_nan=False)  # nothing JSON lacks
    assert usage_from_json(json.loads(text)) == usage
    call = ToolCall("c1", "charge", {"cents": 5})
    messages = (Message.user("hi"), Message.assistant("", [call]))
    paused = PausedRun("r1", messages, (call,), (), (call,), usage=usage)
    assert paused_from_json(json.loads(json.dumps(paused_to_json(paused), allow_nan=False))).usage == usage


@pytest.mark.parametrize(
    ("stored", "usage"),
    [
        ('{"input_tokens": NaN, "output_tokens": 5}', Usage(0, 5)),
        ('{"input_tokens": Infinity}', Usage()),
        ('{"input_tokens": "12"}', Usage(12)),  # what an older version meant by it (int("12") read it so)
        ('{"input_tokens": 3.0, "reasoning_tokens": -4}', Usage(3)),
    ],
)
def test_a_usage_an_older_version_stored_with_a_count_that_is_not_one_loads(stored: str, usage: Usage) -> None:
    assert usage_from_json(json.loads(stored)) == usage
