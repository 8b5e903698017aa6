"""``Nudges`` takes factories, and says so when it is given something else (agentactors/loop/nudges.py).

``Nudges([RepeatedCall()])`` — a policy where its factory goes — was accepted: each run then failed to start it,
logged that, and ran without it, so the policy a user configured was never asked and nothing told them but a
log line per run.  Now the value is refused when it is made.
"""

from __future__ import annotations

from typing import Any

import pytest

from agentactors.loop.nudges import BareAcknowledgment, Nudges, RepeatedCall


@pytest.mark.parametrize("given", [(RepeatedCall(),), [BareAcknowledgment()], ("RepeatedCall",), (None,)])
def test_a_value_that_is_no_factory_is_refused_when_made(given: Any) -> None:
    with pytest.raises(TypeError, match="nudge factory"):
        Nudges(given)


@pytest.mark.parametrize("given", ["RepeatedCall", RepeatedCall, 3])
def test_factories_that_are_not_a_collection_are_refused(given: Any) -> None:
    with pytest.raises(TypeError, match="iterable of policy factories"):
        Nudges(given)


def test_classes_and_functions_are_factories() -> None:
    def mine(is_read_only: Any) -> RepeatedCall:
        return RepeatedCall(is_read_only)

    nudges = Nudges([RepeatedCall, mine])
    assert nudges.factories == (RepeatedCall, mine)
    session = nudges.start(frozenset().__contains__)
    assert session is not None
