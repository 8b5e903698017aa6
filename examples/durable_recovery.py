"""A run that survives its process being killed: each side effect once, the run finished by another process.

An agent books a flight with three tools that act on the world (reserve a seat, charge a card, send a
receipt).  The run is journaled (``Runtime(journal=SqliteJournal(path))``): each model response and each tool
step is committed before the run goes on.  The first process is killed with SIGKILL inside ``charge_card`` —
after the charge went through, before its result was committed.  A second process (this one) calls
``rt.recover()``: the committed steps are served back (the seat is not reserved again), the cut call runs again
with the same ``ToolContext.idempotency_key`` (the "payment API" below deduplicates on it, as Stripe does on
``Idempotency-Key``), and the run goes on, with its own run id, to its answer.

Runs offline: the built-in FakeVendor plays an OpenAI-compatible model on 127.0.0.1, its answers scripted in
order (three tool calls, then the answer); both processes talk to the same "vendor", so the recovering one
gets the answers the dead one did not ask for.  See docs/durability.md.

    python examples/durable_recovery.py
"""

from __future__ import annotations

import os
import signal
import sys
import tempfile
from pathlib import Path
from typing import Any, NamedTuple

import anyio

from agentactors import Agent, OpenAIProvider, RunResult, Runtime, SqliteJournal, ToolContext, tool

PROMPT = "Book me on flight TP123 and email me the receipt."
ANSWER = "Booked: a seat on TP123, 419.00 charged, the receipt is on its way to ana@example.com."


class Outcome(NamedTuple):
    """What the example shows: the recovered run, the side effects (once each) and every attempt at them."""

    result: RunResult[Any]
    crashed_run: str
    effects: list[str]
    attempts: list[str]
    model_calls: int


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def booking_tools(workdir: Path, *, crash_in: str | None = None) -> list[Any]:
    """The tools, their side effects kept in ``workdir``: ``effects.txt`` (the world) and ``attempts.txt``."""
    effects, attempts = workdir / "effects.txt", workdir / "attempts.txt"

    def act(ctx: ToolContext, what: str) -> str:
        key = ctx.idempotency_key  # "{run_id}:{call_id}": the same when the call runs again after a crash
        with attempts.open("a") as file:
            file.write(f"{key} {what}\n")
        if not any(line.startswith(f"{key} ") for line in _lines(effects)):  # the API deduplicates on the key
            with effects.open("a") as file:
                file.write(f"{key} {what}\n")
        if ctx.tool_name == crash_in:
            os.kill(os.getpid(), signal.SIGKILL)  # done in the world, never committed to the journal
        return f"{what}: done"

    @tool
    async def reserve_seat(ctx: ToolContext, flight: str) -> str:
        """Reserve a seat on a flight."""
        return act(ctx, f"seat reserved on {flight}")

    @tool
    async def charge_card(ctx: ToolContext, amount: int) -> str:
        """Charge the customer's card (amount in cents)."""
        return act(ctx, f"card charged {amount}")

    @tool
    async def send_receipt(ctx: ToolContext, email: str) -> str:
        """Email the receipt."""
        return act(ctx, f"receipt sent to {email}")

    return [reserve_seat, charge_card, send_receipt]


def booker(base_url: str, workdir: Path, *, crash_in: str | None = None) -> Agent[Any]:
    """The agent; recovery finds it again by its name, ``"booker"``."""
    provider = OpenAIProvider("fake-model", api_key="sk-offline-example", base_url=base_url)
    return Agent(provider, tools=booking_tools(workdir, crash_in=crash_in), name="booker", system="You book trips.")


async def crashing_process(db: str, workdir: str, base_url: str) -> None:
    """The first process: runs the booking until ``charge_card`` kills it."""
    async with SqliteJournal(db) as journal, Runtime(journal=journal) as rt:
        await booker(base_url, Path(workdir), crash_in="charge_card").bind(rt).run(PROMPT)
    raise SystemExit("not reached: charge_card kills this process")


async def main() -> Outcome:
    with tempfile.TemporaryDirectory() as tmp:
        from agentactors.testing import FakeToolCall, FakeVendor

        workdir, db = Path(tmp), str(Path(tmp) / "runs.db")
        async with FakeVendor() as vendor:
            vendor.script(  # one answer per model call, whichever process asks
                [FakeToolCall("reserve_seat", {"flight": "TP123"})],
                [FakeToolCall("charge_card", {"amount": 41900})],
                [FakeToolCall("send_receipt", {"email": "ana@example.com"})],
                ANSWER,
            )
            url = vendor.openai_base_url
            done = await anyio.run_process([sys.executable, __file__, "--crash", db, tmp, url], check=False)
            print(f"first process: killed by signal {-done.returncode} inside charge_card")
            asked_before = len(vendor.requests)
            async with SqliteJournal(db) as journal, Runtime(journal=journal) as rt:
                (left,) = await journal.unfinished()
                print(f"the journal holds run {left.run_id}, unfinished after {len(left.steps)} committed step(s)")
                agent = booker(url, workdir).bind(rt)  # keep it: the runtime holds bound agents weakly
                (result,) = await rt.recover()  # this process finishes it
                assert await rt.recover() == [] and agent.name == "booker"
            calls = len(vendor.requests)
        print(f"recovered run {result.run_id}: {result.steps} steps, answer: {result.content}")
        print(f"the model was asked {calls} times: {asked_before} before the crash, {calls - asked_before} after")
        effects, attempts = _lines(workdir / "effects.txt"), _lines(workdir / "attempts.txt")
        print("side effects (each once):", *effects, sep="\n  ")
        print("attempts (the cut call again, with the same key):", *attempts, sep="\n  ")
        return Outcome(result, left.run_id, effects, attempts, calls)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--crash"]:
        db, workdir, base_url = sys.argv[2:5]
        anyio.run(crashing_process, db, workdir, base_url)
    else:
        anyio.run(main)
