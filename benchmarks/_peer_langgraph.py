"""langgraph implementation of the W1 run: a model node and a ToolNode in a StateGraph.

No ``from __future__ import annotations`` here: langgraph reads node type hints at runtime.  The node, the route
and the tool are ``async def``: driven with ``ainvoke``, langgraph runs a plain ``def`` node or route (and
langchain a plain ``def`` tool) in a worker thread, a hop per step agentactors' async tool does not pay.
"""

from typing import Any

from _baselines import add
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool as lc_tool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode


@lc_tool("add")
async def add_tool(a: int, b: int) -> int:
    """Add two integers."""
    return add(a, b)


async def model_node(state: MessagesState) -> dict:
    last = state["messages"][-1]
    if isinstance(last, ToolMessage):
        return {"messages": [AIMessage(content=f"The answer is {last.content}.")]}
    call = {"name": "add", "args": {"a": 2, "b": 3}, "id": "call_1", "type": "tool_call"}
    return {"messages": [AIMessage(content="", tool_calls=[call])]}


async def route(state: MessagesState) -> str:
    last = state["messages"][-1]
    return "tools" if getattr(last, "tool_calls", None) else END


def build() -> Any:
    graph = StateGraph(MessagesState)
    graph.add_node("model", model_node)
    graph.add_node("tools", ToolNode([add_tool]))
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", route, ["tools", END])
    graph.add_edge("tools", "model")
    return graph.compile()
