"""W1 floors: a hand-written plain asyncio loop and hand-written naive anyio actors.

Both run the same conversation as every other implementation: model call →
one tool call → model call → final text, with an in-process zero-latency model.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import anyio
from anyio.abc import ObjectReceiveStream, ObjectSendStream


def fake_model(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """The shared zero-latency model: ask for the tool once, then answer with its result."""
    last = messages[-1]
    if last["role"] == "tool":
        return {"role": "assistant", "content": f"The answer is {last['content']}."}
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "call_1", "name": "add", "arguments": json.dumps({"a": 2, "b": 3})}],
    }


def add(a: int, b: int) -> int:
    return a + b


# --- plain asyncio loop (the floor) ------------------------------------------------------------


async def plain_loop_run(prompt: str) -> str:
    messages: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
    while True:
        reply = fake_model(messages)
        messages.append(reply)
        calls = reply.get("tool_calls")
        if not calls:
            return str(reply["content"])
        for call in calls:
            args = json.loads(call["arguments"])
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": str(add(**args))})


# --- naive anyio actors: every ask is a message over memory object streams ---------------------


class NaiveActors:
    """A model actor and a tool actor, each a task reading a memory object stream; asks carry a reply stream."""

    def __init__(self) -> None:
        self.model_send: ObjectSendStream[Any]
        self.tool_send: ObjectSendStream[Any]

    async def __aenter__(self) -> NaiveActors:
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        self.model_send, model_recv = anyio.create_memory_object_stream[Any](256)
        self.tool_send, tool_recv = anyio.create_memory_object_stream[Any](256)
        self._tg.start_soon(self._model_actor, model_recv)
        self._tg.start_soon(self._tool_actor, tool_recv)
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.model_send.aclose()
        await self.tool_send.aclose()
        await self._tg.__aexit__(None, None, None)

    async def _model_actor(self, inbox: ObjectReceiveStream[Any]) -> None:
        async with inbox:
            async for messages, reply in inbox:
                await reply.send(fake_model(messages))

    async def _tool_actor(self, inbox: ObjectReceiveStream[Any]) -> None:
        async with inbox:
            async for call, reply in inbox:
                await reply.send(str(add(**json.loads(call["arguments"]))))

    async def _ask(self, inbox: ObjectSendStream[Any], payload: Any) -> Any:
        send, recv = anyio.create_memory_object_stream[Any](1)
        async with send, recv:
            await inbox.send((payload, send))
            return await recv.receive()

    async def run(self, prompt: str) -> str:
        messages: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
        while True:
            reply = await self._ask(self.model_send, list(messages))
            messages.append(reply)
            calls = reply.get("tool_calls")
            if not calls:
                return str(reply["content"])
            for call in calls:
                result = await self._ask(self.tool_send, call)
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": result})


# --- messaging baselines (W2) --------------------------------------------------------------------


async def asyncio_queue_roundtrips(n: int) -> list[float]:
    """asyncio.Queue + Future ask round-trips (asyncio only)."""
    loop = asyncio.get_running_loop()
    q: asyncio.Queue[tuple[int, asyncio.Future[int]]] = asyncio.Queue(256)

    async def server() -> None:
        while True:
            x, fut = await q.get()
            if x < 0:
                return
            fut.set_result(x)

    task = asyncio.ensure_future(server())
    times: list[float] = []
    clock = loop.time
    for i in range(n):
        t0 = clock()
        fut: asyncio.Future[int] = loop.create_future()
        await q.put((i, fut))
        await fut
        times.append(clock() - t0)
    stop: asyncio.Future[int] = loop.create_future()
    await q.put((-1, stop))
    await task
    return times


async def memory_stream_roundtrips(n: int) -> list[float]:
    send, recv = anyio.create_memory_object_stream[Any](256)

    async def server() -> None:
        async with recv:
            async for x, reply in recv:
                await reply.send(x)

    times: list[float] = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(server)
        for i in range(n):
            t0 = anyio.current_time()
            rs, rr = anyio.create_memory_object_stream[Any](1)
            async with rs, rr:
                await send.send((i, rs))
                await rr.receive()
            times.append(anyio.current_time() - t0)
        await send.aclose()
    return times


async def memory_stream_tells(n: int) -> float:
    """Seconds to push ``n`` one-way messages through a memory object stream to a consumer task."""
    send, recv = anyio.create_memory_object_stream[int](256)
    done = anyio.Event()

    async def consumer() -> None:
        count = 0
        async with recv:
            async for _ in recv:
                count += 1
                if count == n:
                    done.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(consumer)
        t0 = anyio.current_time()
        async with send:
            for i in range(n):
                await send.send(i)
        await done.wait()
        return anyio.current_time() - t0
