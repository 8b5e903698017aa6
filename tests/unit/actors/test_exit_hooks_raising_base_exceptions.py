"""An ``on_stop`` or a cleanup that raises a ``BaseException`` (no failure, no cancellation) at the runtime's exit.

``KeyboardInterrupt``, ``SystemExit`` or the user's own out of an ``on_stop`` run by the exit used to leave
at once: the other actors' ``on_stop`` hooks, every cleanup registered with ``rt.service`` (closing the
shared providers) and the flush of the recorders were skipped.  Now the exit finishes — every hook and
cleanup runs, the recorders are flushed — and the first such exception then leaves ``async with Runtime()``
bare, as one out of a worker's handler does.
"""

from __future__ import annotations

from typing import Any

import pytest

from agentactors.actors import Runtime

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]


class Custom(BaseException):
    """A ``BaseException`` of the user's own."""


KINDS = pytest.mark.parametrize("kind", [KeyboardInterrupt, SystemExit, Custom])


class Hooked:
    def __init__(self, log: list[str], name: str, raises: type[BaseException] | None = None) -> None:
        self.log, self.name, self.raises = log, name, raises

    async def on_start(self) -> None:
        pass

    async def on_stop(self) -> None:
        self.log.append(f"on_stop {self.name}")
        if self.raises is not None:
            raise self.raises(self.name)

    async def receive(self, message: Any) -> Any:
        return message


class Flushed:
    def __init__(self, log: list[str]) -> None:
        self.log = log

    def record(self, event: Any) -> None:
        pass

    def flush(self) -> None:
        self.log.append("flushed")


@KINDS
async def test_an_on_stop_raising_at_the_exit_lets_the_rest_of_the_exit_run(kind: type[BaseException]) -> None:
    log: list[str] = []

    async def cleanup(value: str) -> None:
        log.append(f"cleanup {value}")

    with pytest.raises(kind) as raised:
        async with Runtime([Flushed(log)]) as rt:
            rt.service("svc", lambda: "svc", cleanup=cleanup)
            refs = [rt.spawn(Hooked(log, str(i), kind if i == 0 else None)) for i in range(3)]
            for ref in refs:
                await ref.ask("start")
    assert type(raised.value) is kind and raised.value.args == ("0",)
    assert sorted(line for line in log if line.startswith("on_stop")) == ["on_stop 0", "on_stop 1", "on_stop 2"]
    assert log[-2:] == ["cleanup svc", "flushed"]
    assert all(ref.stopped for ref in refs)
    assert rt.stats().actors == 0


@KINDS
async def test_a_cleanup_raising_lets_the_others_run_and_leaves_first(kind: type[BaseException]) -> None:
    log: list[str] = []

    async def cleanup(value: str) -> None:
        log.append(f"cleanup {value}")
        if value == "b":
            raise kind(value)

    with pytest.raises(kind) as raised:
        async with Runtime([Flushed(log)]) as rt:
            for key in ("a", "b", "c"):
                rt.service(key, lambda key=key: key, cleanup=cleanup)  # type: ignore[misc]
    assert raised.value.args == ("b",)
    assert log == ["cleanup c", "cleanup b", "cleanup a", "flushed"]


async def test_an_escalated_failure_still_wins_over_an_on_stop_raising_later() -> None:
    log: list[str] = []

    class Boom:
        async def receive(self, message: Any) -> Any:
            raise ValueError("escalated")

    with pytest.raises(ValueError, match="escalated"):
        async with Runtime() as rt:
            await rt.spawn(Hooked(log, "x", KeyboardInterrupt)).ask("start")
            await rt.spawn(Boom(), on_failure="escalate").tell("go")
            await rt.wait_idle()
    assert log == ["on_stop x"]
