"""The one-writer, one-reader channel a stream's events travel through (``agentactors._channel``)."""

from __future__ import annotations

import anyio
import anyio.lowlevel
import pytest

from agentactors._channel import Channel

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]


def _channel(capacity: int) -> Channel:
    return Channel(capacity, anyio.Event, anyio.lowlevel.checkpoint_if_cancelled)


async def test_items_arrive_in_order_then_the_end() -> None:
    channel = _channel(4)
    for i in range(3):
        await channel.send(i)
    channel.close_writing()
    assert [await channel.receive() for _ in range(3)] == [0, 1, 2]
    with pytest.raises(anyio.EndOfStream):
        await channel.receive()
    with pytest.raises(anyio.EndOfStream):
        await channel.receive()


async def test_the_writer_runs_ahead_by_the_capacity_only() -> None:
    channel = _channel(2)
    sent: list[int] = []

    async def writer() -> None:
        for i in range(10):
            await channel.send(i)
            sent.append(i)
        channel.close_writing()

    async with anyio.create_task_group() as tg:
        tg.start_soon(writer)
        await anyio.sleep(1)
        assert sent == [0, 1]  # the third send waits (its item is buffered: see the module)
        assert await channel.receive() == 0
        await anyio.sleep(1)
        assert sent == [0, 1, 2]
        got = [await channel.receive() for _ in range(9)]
    assert got == list(range(1, 10))


async def test_capacity_zero_is_a_rendezvous() -> None:
    channel = _channel(0)
    sent: list[int] = []

    async def writer() -> None:
        await channel.send("a")
        sent.append(1)

    async with anyio.create_task_group() as tg:
        tg.start_soon(writer)
        await anyio.sleep(1)
        assert sent == []
        assert await channel.receive() == "a"
    assert sent == [1]


async def test_a_waiting_reader_is_woken_by_a_send_and_by_the_end() -> None:
    channel = _channel(1)
    got: list[object] = []

    async def reader() -> None:
        got.append(await channel.receive())
        try:
            await channel.receive()
        except anyio.EndOfStream:
            got.append("end")

    async with anyio.create_task_group() as tg:
        tg.start_soon(reader)
        await anyio.sleep(1)
        await channel.send("x")
        await anyio.sleep(1)
        channel.close_writing()
    assert got == ["x", "end"]


async def test_when_the_reader_leaves_the_writer_stops_and_the_buffer_is_dropped() -> None:
    channel = _channel(0)
    outcome: list[str] = []

    async def writer() -> None:
        try:
            await channel.send("unread")
        except anyio.BrokenResourceError:
            outcome.append("broken while waiting")
        with pytest.raises(anyio.BrokenResourceError):
            await channel.send("after")
        outcome.append("broken after")

    async with anyio.create_task_group() as tg:
        tg.start_soon(writer)
        await anyio.sleep(1)
        channel.close_reading()
    assert outcome == ["broken while waiting", "broken after"]
    with pytest.raises(anyio.ClosedResourceError):
        await channel.receive()


async def test_a_cancelled_receive_takes_nothing() -> None:
    channel = _channel(4)
    with anyio.move_on_after(1):
        await channel.receive()  # waits: cancelled by the deadline
    await channel.send("kept")
    with anyio.CancelScope() as scope:
        scope.cancel()
        await channel.receive()  # an item is buffered, yet a cancelled receive raises before taking it
    assert await channel.receive() == "kept"


async def test_a_writer_cancelled_while_waiting_leaves_its_item_for_the_reader() -> None:
    channel = _channel(0)
    with anyio.move_on_after(1) as scope:
        await channel.send("sent")
    assert scope.cancelled_caught
    channel.close_writing()
    assert await channel.receive() == "sent"
    with pytest.raises(anyio.EndOfStream):
        await channel.receive()


async def test_without_waiting_both_ends_say_why_they_cannot() -> None:
    channel = _channel(1)
    with pytest.raises(anyio.WouldBlock):
        channel.receive_nowait()  # nothing yet, the writer not done
    channel.send_nowait("a")
    with pytest.raises(anyio.WouldBlock):
        channel.send_nowait("b")  # the buffer is full
    assert channel.receive_nowait() == "a"
    channel.close_writing()
    with pytest.raises(anyio.EndOfStream):
        channel.receive_nowait()
    channel.close_reading()
    with pytest.raises(anyio.ClosedResourceError):
        channel.receive_nowait()
    with pytest.raises(anyio.BrokenResourceError):
        channel.send_nowait("c")


async def test_an_unbounded_channel_takes_every_item_at_once_and_wakes_its_reader() -> None:
    import math

    channel = Channel(math.inf, anyio.Event, anyio.lowlevel.checkpoint_if_cancelled)
    got: list[int] = []

    async def reader() -> None:
        while True:
            try:
                got.append(await channel.receive())
            except anyio.EndOfStream:
                return

    async with anyio.create_task_group() as tg:
        tg.start_soon(reader)
        await anyio.sleep(1)
        for i in range(1000):
            channel.send_nowait(i)  # a recorder's synchronous send: never refused for room
        channel.close_writing()
    assert got == list(range(1000))


async def test_a_channel_opened_for_the_running_backend_parks_and_wakes_its_reader() -> None:
    """``open_channel``: the backend's own one-shot event and checkpoint (found once per backend)."""
    from agentactors._channel import open_channel

    for _ in range(2):  # the second one from the parts found by the first
        channel = open_channel(2)
        got: list[str] = []

        async def reader(channel: Channel = channel, got: list[str] = got) -> None:
            got.append(await channel.receive())

        async with anyio.create_task_group() as tg:
            tg.start_soon(reader)
            await anyio.sleep(1)
            assert got == []
            await channel.send("woken")
        assert got == ["woken"]
