"""``scrub_chain`` sees into exception groups and through chains of any length.

A task group fails with an ``ExceptionGroup``; a traceback prints every sub-exception with its own cause
chain.  A credential in a sub-exception's cause is not in the group's ``str`` or ``repr``, so a check of
those alone kept the group — and the secret reachable, and printed.  And a chain of thousands of links
(an error re-wrapped in a loop) must be replaced like a short one, not end in a ``RecursionError``.
"""

from __future__ import annotations

import traceback

from agentactors.errors import RedactedException, scrub_chain

TOKEN = "Bearer abcdefghijklmnopqrstuvwx"


def _raised(exc: BaseException) -> BaseException:
    try:
        raise exc
    except BaseException as caught:
        return caught


def _sub_with_a_dirty_cause() -> Exception:
    try:
        try:
            raise KeyError(f"Authorization: {TOKEN}")
        except KeyError as inner:
            raise ValueError("the upstream call failed") from inner
    except ValueError as outer:
        return outer


def test_a_secret_in_a_sub_exceptions_cause_is_not_kept_or_printed() -> None:
    group = _raised(ExceptionGroup("unhandled errors in a TaskGroup", [_sub_with_a_dirty_cause(), OSError("x")]))
    assert TOKEN not in str(group) and TOKEN not in repr(group), "the secret hides below the group's own texts"
    scrubbed = scrub_chain(group)
    assert scrubbed is not group
    printed = "".join(traceback.format_exception(scrubbed))
    assert TOKEN not in printed
    assert isinstance(scrubbed, RedactedException)
    notes = "\n".join(getattr(scrubbed, "__notes__", ()))
    assert "sub-exception 1" in notes and "the upstream call failed" in notes and "KeyError" in notes
    assert "sub-exception 2" in notes and "OSError" in notes, "every sub-exception is still told"


def test_a_clean_group_is_kept_as_it_is() -> None:
    group = ExceptionGroup("g", [ValueError("plain"), KeyError("also plain")])
    assert scrub_chain(group) is group


def test_a_chain_of_thousands_of_links_is_replaced() -> None:
    exc: BaseException = ValueError(f"token={TOKEN[7:]}")
    for i in range(3000):
        wrapper = RuntimeError(f"retry {i}")
        wrapper.__cause__ = exc
        exc = wrapper
    scrubbed = scrub_chain(exc)
    links = 0
    cur: BaseException | None = scrubbed
    while cur is not None:
        assert isinstance(cur, RedactedException) and TOKEN[7:] not in str(cur)
        links, cur = links + 1, cur.__cause__
    assert links == 3001
