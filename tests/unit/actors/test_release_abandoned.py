"""An answer produced *after* its asker gave up is released too (the ReleasableAnswer protocol).

A handler running in a worker is cancelled when its asker leaves, but one that reaches no checkpoint after
that (the last await of ProviderActor's stream handler takes a slot with a shielded checkpoint) still
returns its answer.  Found by the cancellation storm (tests/reliability): the ProviderStream was dropped
unreleased and its feeding task blocked on a buffer nobody would read, until the runtime closed.
"""

from __future__ import annotations

import anyio
import pytest

from agentactors.actors import Runtime

pytestmark = pytest.mark.anyio


class Owned:
    """An answer that owns work: counts its releases."""

    def __init__(self) -> None:
        self.released = 0

    def release_unclaimed(self) -> None:
        self.released += 1


class FinishesRegardless:
    """Answers after a shielded wait: its asker's abandonment reaches it too late to stop it."""

    def __init__(self) -> None:
        self.answers: list[Owned] = []

    async def receive(self, message: float) -> Owned:
        with anyio.CancelScope(shield=True):
            await anyio.sleep(message)
        answer = Owned()
        self.answers.append(answer)
        return answer


@pytest.mark.virtual_time
async def test_an_answer_finished_after_its_asker_left_is_released_once() -> None:
    actor = FinishesRegardless()
    async with Runtime() as rt:
        ref = rt.spawn(actor, direct=False)  # handled in a worker; the asker waits on the mailbox
        with anyio.move_on_after(1):
            await ref.ask(5.0)
        await rt.wait_idle()
        (answer,) = actor.answers
        assert answer.released == 1
        taken = await ref.ask(0.0)  # an answer its asker takes is never released
        assert taken.released == 0
