"""``breaker.state_changed`` read in the words of the breaker's original contract as well as ours.

The contract names the fields ``breaker.state_changed(key, from, to, reason)``.  ``from`` is a Python keyword (no
``emit(from=...)``, no ``event.from``), so the payload spells them ``from_state`` and ``to_state``; a reader who
follows the contract (``event.get("from")``, ``getattr(event, "to")``) gets the same states, and the payload keeps
its one spelling (no key is added to records, spans or reports).
"""

from __future__ import annotations

import pytest

from agentactors.errors import ProviderError
from agentactors.events import BreakerStateChanged, Event
from agentactors.providers.scripted import ScriptedProvider
from agentactors.resilience import CircuitState, with_circuit_breaker
from tests.support.resilience import REQ, http_error, recording

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]


async def test_the_contracts_from_and_to_read_the_transition() -> None:
    breaker = with_circuit_breaker(ScriptedProvider([http_error(503)] * 5, name="a"))
    with recording() as rec:
        for _ in range(5):
            with pytest.raises(ProviderError):
                await breaker.complete(REQ)
    (changed,) = rec.of_type("breaker.state_changed")
    assert isinstance(changed, BreakerStateChanged)
    assert changed.get("from") is CircuitState.closed and changed.get("to") is CircuitState.open
    assert getattr(changed, "from") is CircuitState.closed and changed.to is CircuitState.open
    # One spelling in the payload: nothing is added to what recorders, spans and reports read.
    assert sorted(changed.data) == ["from_state", "key", "reason", "to_state"]


def test_the_aliases_belong_to_the_breaker_event_only() -> None:
    other = Event("retry.scheduled", data={"attempt": 1})
    assert other.get("from") is None
    with pytest.raises(AttributeError):
        getattr(other, "from")
    bare = BreakerStateChanged("breaker.state_changed", data={"key": None})
    assert bare.get("from", "unset") == "unset"
    with pytest.raises(AttributeError, match="from"):
        getattr(bare, "from")
