"""The benchmarks measure every framework under the conditions agentactors gets (a skeptical peer's review).

agentactors' W1 tool is ``async def`` (a sync tool would run in a worker thread, a documented cost): the peers'
models, tools, graph nodes and routes are ``async def`` too, so that no peer pays a thread hop per call that
agentactors does not.  pydantic-ai (``FunctionModel``, ``tool_plain``), openai-agents (``function_tool``) and
langgraph (nodes, conditional edges, ``ToolNode``) all run a plain ``def`` in a worker thread when driven with
``await``.  And a timed window starts from a clean heap: no implementation pays for collecting the garbage of
the one measured before it.
"""

from __future__ import annotations

import ast
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.paths import ROOT

BENCH = ROOT / "benchmarks"
BENCH_PYTHON = ROOT / ".venv-bench" / "bin" / "python"

# In .venv-bench the same rule is checked by running every W1 implementation with thread starts recorded:
# `.venv-bench/bin/python benchmarks/fairness_probe.py` (the peers are not in the test environment: here the rule
# is read from the source, which CI can check).

# --- without .venv-bench: the same rule read from the source ----------------------------------------------

# Calls that hand a function to a peer framework, and the positions of the functions among their arguments.
_HANDED_OVER = {"FunctionModel": (0,), "add_node": (1,), "add_conditional_edges": (1,), "ToolNode": ()}
# Decorators that make a peer's tool of a function.
_TOOL_DECORATORS = {"tool_plain", "function_tool", "lc_tool", "tool"}


def _name(node: ast.expr) -> str:
    while isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


def _local_functions(scope: ast.AST) -> dict[str, ast.AST]:
    """The functions ``scope`` defines itself (not those of the functions inside it), by name."""
    found: dict[str, ast.AST] = {}
    todo = list(ast.iter_child_nodes(scope))
    while todo:
        node = todo.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            found[node.name] = node
        elif not isinstance(node, ast.Lambda):
            todo.extend(ast.iter_child_nodes(node))
    return found


def _sync_functions_handed_over(path: Path) -> Iterator[str]:
    """Each plain ``def`` of ``path`` a peer gets as its model, tool, node or route (names resolved in scope)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))

    def visit(scope: ast.AST, visible: dict[str, ast.AST]) -> Iterator[str]:
        visible = {**visible, **_local_functions(scope)}
        todo = list(ast.iter_child_nodes(scope))
        while todo:
            node = todo.pop()
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                if isinstance(node, ast.FunctionDef) and any(_name(d) in _TOOL_DECORATORS
                                                             for d in node.decorator_list):
                    yield f"{path.name}: tool {node.name}"
                yield from visit(node, visible)
                continue
            todo.extend(ast.iter_child_nodes(node))
            if not isinstance(node, ast.Call):
                continue
            args: list[Any] = []
            if _name(node) in _HANDED_OVER:
                args = [node.args[i] for i in _HANDED_OVER[_name(node)] if i < len(node.args)]
            if isinstance(node.func, ast.Call) and _name(node.func) in _TOOL_DECORATORS:  # agent.tool_plain(...)(f)
                args = list(node.args)
            for arg in args:
                if isinstance(arg, ast.Name) and isinstance(visible.get(arg.id), ast.FunctionDef):
                    yield f"{path.name}: {_name(node)} gets {arg.id}"

    yield from visit(tree, {})


@pytest.mark.parametrize("name", ["_peers.py", "_peer_langgraph.py", "_peer_autogen.py", "w1_independent.py"])
def test_the_peers_get_async_functions_as_agentactors_does(name: str) -> None:
    assert list(_sync_functions_handed_over(BENCH / name)) == []


# --- a clean heap before each timed window ------------------------------------------------------------------


@pytest.fixture
def workloads() -> Iterator[Any]:
    paths = list(sys.path)
    sys.path.insert(0, str(BENCH))
    try:
        import _workloads  # type: ignore[import-not-found]  # benchmarks/ is not a package

        yield _workloads
    finally:
        sys.path[:] = paths
        sys.modules.pop("_workloads", None)


class _Recorder:
    name = "recorder"

    def __init__(self, events: list[str], answer: str) -> None:
        self.events = events
        self.answer = answer

    async def run(self, prompt: str) -> str:
        self.events.append("run")
        return self.answer


@pytest.mark.anyio
async def test_w1_times_each_implementation_from_a_clean_heap(workloads: Any,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    events: list[str] = []

    def collect(*generation: int) -> int:
        events.append("collect")
        return 0

    monkeypatch.setattr(workloads.gc, "collect", collect)
    real_clock = time.perf_counter

    def clock() -> float:
        events.append("clock")
        return real_clock()

    monkeypatch.setattr(workloads.time, "perf_counter", clock)
    await workloads._time_sequential(_Recorder(events, workloads.EXPECTED), 2)
    # The warm-up run, then the previous implementation's garbage collected, then the clock starts.
    assert events[:3] == ["run", "collect", "clock"], events


@pytest.mark.anyio
async def test_w7_times_each_client_from_a_clean_heap(workloads: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    events: list[str] = []

    def collect(*generation: int) -> int:
        events.append("collect")
        return 0

    monkeypatch.setattr(workloads.gc, "collect", collect)
    real_cpu = time.process_time

    def cpu() -> float:
        events.append("cpu")
        return real_cpu()

    monkeypatch.setattr(workloads.time, "process_time", cpu)

    async def one(i: int) -> None:
        events.append("run")

    await workloads._w7_timed(one, 2)
    # Three warm-up runs, the garbage collected, then the CPU clock starts; the timed runs after it.
    assert events == ["run"] * 3 + ["collect", "cpu", "run", "run", "cpu"], events


# --- agentactors as users get it, wherever a peer is beside it ---------------------------------------------

# The functions that build agentactors' side of a comparison with a peer (W7, W12; W1's make_agent).
_COMPARED = {"_workloads.py": ("make_agent", "_w7_ours_run"), "_w12.py": ("_agentactors",)}
# Agent options a user leaves at their defaults; turning one off would spare agentactors work the peers do.
_DEFAULTS_ONLY = {"nudges"}


@pytest.mark.parametrize("name", sorted(_COMPARED))
def test_agentactors_runs_with_its_defaults_beside_a_peer(name: str) -> None:
    tree = ast.parse((BENCH / name).read_text(encoding="utf-8"))
    functions = {n.name: n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
    changed = [
        f"{function}: Agent({keyword.arg}=...)"
        for function in _COMPARED[name]
        for node in ast.walk(functions[function])
        if isinstance(node, ast.Call) and _name(node) == "Agent"
        for keyword in node.keywords
        if keyword.arg in _DEFAULTS_ONLY
    ]
    assert changed == []
