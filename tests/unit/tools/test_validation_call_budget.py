"""One call's pattern matching is bounded as a whole, not only string by string.

Each string is matched by ``re`` only while its worst case is small (test_validation_hostile_schemas.py); but an
argument holding thousands of strings, each just under that bound, would still hold the event loop for seconds
to minutes in one validation.  So a call carries a budget: ``re`` work charged at its worst-case estimate, then
the linear matcher (exact verdicts) charged at its steps; a string past both is the call's issue — never a hang,
never a pass.  The largest argument a model can send (64 Mi chars of JSON text, :mod:`agentactors._json`) is
judged well within two seconds.
"""

from __future__ import annotations

import re
import time
from typing import Annotated, Any

import anyio
import pydantic
import pytest

from agentactors import ToolCall
from agentactors._json import MAX_TEXT_CHARS
from agentactors.messages import ToolSpec
from agentactors.output.target import OutputTarget
from agentactors.tools import ToolStatus
from agentactors.tools.executor import ToolExecutorActor
from agentactors.tools.fastcheck import pattern_limit, pattern_search
from agentactors.tools.registry import Tool

# re backtracks up to 50 characters from every start (the match is the empty one at the end): the per-string
# bound lets it take strings of ~6,500 chars, each ~2 ms for re — 3,000 of them held the loop for 6 s and more.
SLOW = "[a-p]{0,50}$"
# A backreference: matched by re only (the linear matcher cannot take it), ~0.04 ms a string at its limit.
BACKREF = r"(a*)\1b"


def take(**arguments: Any) -> str:
    return "ran"


def make(pattern: str) -> Tool[Any, Any]:
    strings = {"type": "array", "items": {"type": "string", "pattern": pattern}}
    schema = {"type": "object", "properties": {"xs": strings}}
    return Tool.from_spec(ToolSpec("strings", "A tool.", schema), take)


def quickly(check: Any, within: float = 2.0) -> Any:
    """``check()``, asserting the work it did took under ``within`` seconds: this thread's CPU time, which a busy
    machine (other processes on both cores) does not stretch as it stretches wall time."""
    started = time.thread_time()
    value = check()
    assert time.thread_time() - started < within
    return value


def letters(i: int, length: int) -> str:
    """A distinct string of ``length`` letters a-p (``i`` in base 16 at its end), every one of them SLOW's worst."""
    tail = "".join(chr(97 + int(d, 16)) for d in f"{i:06x}")
    return ("ab" * length)[: length - len(tail)] + tail


def is_budget_issue(issue: Any, pattern: str) -> bool:
    return bool(
        re.fullmatch(r"xs\[\d+\]", issue.path)
        and f"the pattern {pattern}" in issue.expected
        and "budget" in issue.expected
        and re.fullmatch(r"a string of \d+ chars", issue.got)
    )


def test_thousands_of_strings_each_just_under_the_per_string_bound_are_judged_within_the_call_bound() -> None:
    n = pattern_limit_of(SLOW)
    assert 5000 < n < 10_000
    xs = [letters(i, n) for i in range(3000)]  # 20 MB: re alone would take 6 s and more
    issues = quickly(lambda: make(SLOW).validate({"xs": xs}))
    assert len(issues) == 1 and is_budget_issue(issues[0], SLOW), issues
    # a few of them: re's verdict, as before
    assert quickly(lambda: make(SLOW).validate({"xs": xs[:10]})) == []


def pattern_limit_of(pattern: str) -> int:
    """The longest string re is trusted with for ``pattern``: its worst case there is just under the bound."""
    from agentactors.tools.fastcheck import _matcher  # (the matcher's own figure: no public API gives it)

    return int(_matcher(pattern)[2])


def test_past_the_re_budget_strings_get_exact_verdicts_from_the_linear_matcher() -> None:
    """A pattern whose linear program is small: thousands of strings past the re budget, each judged exactly."""
    pattern = "a*a*b"
    n = pattern_limit_of(pattern)
    xs = ["a" * (n - 1) + "b"] * 1000  # the re budget pays for ~40 of them
    xs[876] = "a" * n  # re's verdict: no match
    assert re.search(pattern, xs[876]) is None and re.search(pattern, xs[0])
    t = make(pattern)
    issues = quickly(lambda: t.validate({"xs": xs}))
    assert [(i.path, i.got) for i in issues] == [("xs[876]", "a string that does not match")]
    xs[876] = xs[0]
    assert quickly(lambda: t.validate({"xs": xs})) == []


def test_a_backreference_pattern_past_the_call_budget_is_the_call_s_issue() -> None:
    """The linear matcher cannot take a backreference: once the budget is spent, the call's issue, never a pass."""
    limit = pattern_limit(BACKREF)
    assert limit is not None
    xs = ["a" * limit] * 60_000  # none matches (re's verdict on each): 2 s and more of re
    t = make(BACKREF)
    issues = quickly(lambda: t.validate({"xs": xs}))
    assert len(issues) == 1 and is_budget_issue(issues[0], BACKREF), issues
    # under not: an issue still (an error there would be a pass)
    negated = Tool.from_spec(ToolSpec("n", "A tool.", {"type": "object", "properties": {"xs": {"type": "array",
                             "items": {"not": {"pattern": BACKREF}}}}}), take)
    assert len(quickly(lambda: negated.validate({"xs": xs}))) == 1
    # within the budget, re's verdicts as before
    assert [i.path for i in t.validate({"xs": [*xs[:3], "aab"]})] == ["xs[0]", "xs[1]", "xs[2]"]


def test_the_budget_is_per_call() -> None:
    """A call that spent its budget leaves none spent for the next one (on this thread or another)."""
    t = make(SLOW)
    n = pattern_limit_of(SLOW)
    heavy = {"xs": [letters(i, n) for i in range(3000)]}
    assert len(t.validate(heavy)) == 1
    assert t.validate({"xs": [letters(1, n)] * 5}) == []
    assert pattern_search(SLOW)(letters(2, 20_000)) is True  # outside a call: no budget, as before


@pytest.mark.anyio
async def test_a_call_of_thousands_of_costly_strings_is_an_invalid_result_within_the_bound() -> None:
    n = pattern_limit_of(SLOW)
    executor = ToolExecutorActor([make(SLOW)])
    with anyio.fail_after(10):
        started = time.monotonic()
        bad = await executor.execute_one(ToolCall("1", "strings", {"xs": [letters(i, n) for i in range(3000)]}))
        good = await executor.execute_one(ToolCall("2", "strings", {"xs": [letters(i, n) for i in range(5)]}))
        assert time.monotonic() - started < 3.0
    assert bad.status is ToolStatus.invalid and "budget" in bad.content
    assert good.content == "ran"


def test_typed_output_shares_the_call_budget() -> None:
    class Answer(pydantic.BaseModel):
        xs: list[Annotated[str, pydantic.WithJsonSchema({"type": "string", "pattern": SLOW})]]

    n = pattern_limit_of(SLOW)
    member = OutputTarget(Answer).members[0]
    checked = quickly(lambda: member.check({"xs": [letters(i, n) for i in range(3000)]}))
    assert not checked.ok and "budget" in checked.issues[0].expected
    assert quickly(lambda: member.check({"xs": [letters(i, n) for i in range(5)]})).ok


@pytest.mark.parametrize("pattern", [SLOW, BACKREF, "x{1,5000}$", ".{0,2000}!"])
def test_the_largest_argument_a_model_can_send_is_judged_within_the_bound(pattern: str) -> None:
    """64 Mi chars of strings each at its pattern's worst (the JSON policy's MAX_TEXT_CHARS bounds arguments).

    ``x{1,5000}$`` and ``.{0,2000}!`` are linear programs of thousands of instructions: the linear matcher takes
    ~0.1-0.2 ms a character on them, so their strings are charged at that cost too.
    """
    n = {SLOW: pattern_limit_of(SLOW), BACKREF: pattern_limit(BACKREF)}.get(pattern) or 300
    one = {SLOW: letters(0, n), BACKREF: "a" * n, "x{1,5000}$": "x" * n + "!", ".{0,2000}!": "a" * n}[pattern]
    count = MAX_TEXT_CHARS // (len(one) + 3)  # '"…",' each
    xs = [one[:-1] + chr(97 + i % 16) if pattern == SLOW else one for i in range(count)]
    issues = quickly(lambda: make(pattern).validate({"xs": xs}))
    assert len(issues) == 1 and is_budget_issue(issues[0], pattern), issues
