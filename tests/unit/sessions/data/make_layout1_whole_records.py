"""Run on the whole-record layout's code (PYTHONPATH=/tmp/before): prints the SQL of the file it writes.

``layout1_whole_records.sql`` beside it is its output: ``python make_layout1_whole_records.py old.db``.
"""

import sqlite3
import sys

import anyio

from agentactors import Agent, Runtime, ToolCall, tool
from agentactors.providers.scripted import ScriptedProvider
from agentactors.sessions import SqliteStore


@tool
def lookup(order: int) -> str:
    """Look an order up."""
    return f"order {order}: shipped"

@tool(requires_approval=True)
def refund(order: int) -> str:
    """Refund an order."""
    return f"refunded {order}"

async def main(path: str) -> None:
    async with Runtime() as rt:
        store = SqliteStore(path)
        chat = Agent(ScriptedProvider([[ToolCall("c1", "lookup", {"order": 42})], "It shipped.", "You're welcome."]),
                     tools=[lookup], name="support")
        s = rt.session(chat, "user:alice", store=store)
        await s.send("Where is order 42?")
        await s.send("Thanks!")
        script = ["Sure.", [ToolCall("r1", "refund", {"order": 7})]]
        payer = Agent(ScriptedProvider(script), tools=[refund], name="billing")
        p = rt.session(payer, "user:bob", store=store)
        await p.send("Hello")
        r = await p.send("Refund order 7")
        assert r.paused, r
    conn = sqlite3.connect(path)
    print("\n".join(conn.iterdump()))

anyio.run(main, sys.argv[1])
