"""A chain left by a cancellation closes every member (``async with with_fallback(a, b)`` in a cancelled scope).

Before, ``MultiProvider.aclose`` closed the members one after the other, unshielded: the first member whose close
reached a checkpoint raised the cancellation, and every member after it stayed open (its HTTP pool, its
connections) until garbage collection — what the SQL journals and stores did too.
"""

from __future__ import annotations

from typing import Any

import anyio
import anyio.lowlevel
import pytest

from agentactors import ScriptedProvider, with_fallback, with_pool

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]


class _Member(ScriptedProvider):
    """A member whose close checkpoints (as an HTTP provider's may) before it is done."""

    def __init__(self, name: str) -> None:
        super().__init__("x", name=name)
        self.shut = False

    async def aclose(self) -> None:
        await anyio.lowlevel.checkpoint()
        self.shut = True
        await super().aclose()


@pytest.mark.parametrize("make", [with_fallback, with_pool])
async def test_a_chain_closed_by_a_cancelled_caller_closes_every_member(anyio_backend: Any, make: Any) -> None:
    a, b, c = _Member("a"), _Member("b"), _Member("c")
    chain = make(a, b, c)
    with anyio.CancelScope() as scope:
        scope.cancel()
        await chain.aclose()
    assert scope.cancelled_caught  # the cancellation still propagated (then caught by its scope)
    assert (a.shut, b.shut, c.shut) == (True, True, True)


async def test_a_chain_left_by_a_cancellation_closes_every_member(anyio_backend: Any) -> None:
    a, b = _Member("a"), _Member("b")
    with anyio.move_on_after(1):
        async with with_fallback(a, b):
            await anyio.sleep(5)
    assert (a.shut, b.shut) == (True, True)


async def test_a_member_whose_close_hangs_does_not_hold_the_caller_forever(anyio_backend: Any) -> None:
    class _Stuck(_Member):
        async def aclose(self) -> None:
            await anyio.sleep_forever()

    stuck, other = _Stuck("stuck"), _Member("other")
    with anyio.fail_after(120):  # (virtual time: the bound passes at once)
        with anyio.CancelScope() as scope:
            scope.cancel()
            await with_fallback(stuck, other).aclose()
    assert scope.cancelled_caught
