"""No import cycle goes through providers/ or errors.py; each wire's modules import one way, only
its provider.py touches the transport.

The graph is read from the source (every ``import`` statement, including the ones under
``if TYPE_CHECKING:`` and inside functions), not from what happens to be imported at run
time, so an import hidden in a function still counts.  The package-wide cycle check is
the layout's; this one guards the providers' layering and the bottom of the error tree.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Mapping, Set
from pathlib import Path

import agentactors

PACKAGE = Path(agentactors.__file__).parent
# Every wire folder: providers/<wire>/ with a provider.py (http/ is the transport, not a wire).
WIRES = tuple(sorted(p.parent.name for p in (PACKAGE / "providers").glob("*/provider.py") if p.parent.name != "http"))


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@functools.cache
def import_graph() -> Mapping[str, frozenset[str]]:
    """module -> the package modules it imports, anywhere in its source (read once: the tests only read it)."""
    files = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {name: set() for name in files}
    for name, path in files.items():
        is_package = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    package = name if is_package else name.rpartition(".")[0]
                    for _ in range(node.level - 1):
                        package = package.rpartition(".")[0]
                    base = f"{package}.{node.module}" if node.module else package
                else:
                    base = node.module or ""
                # ``from pkg import mod`` imports the module pkg.mod; ``from mod import name`` imports mod.
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in files else base for a in node.names]
            graph[name].update(t for t in targets if t in files and t != name)
    return {name: frozenset(imported) for name, imported in graph.items()}


def cycles(graph: Mapping[str, Set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycle_goes_through_providers_or_errors() -> None:
    graph = import_graph()
    assert graph.get("agentactors.providers.openai.provider")  # the graph was read

    def guarded(module: str) -> bool:
        return module.startswith("agentactors.providers") or module == "agentactors.errors"

    through = [c for c in cycles(graph) if any(guarded(m) for m in c)]
    assert not through, f"import cycles: {through}"


def test_errors_imports_nothing_of_the_package_but_redaction() -> None:
    assert import_graph()["agentactors.errors"] <= {"agentactors.redaction"}


# A wire's layers, top down: a module imports only modules of the layers below its own.
WIRE_LAYERS = (("provider",), ("encode", "stream"), ("decode",), ("models",))


def test_each_wire_imports_one_way_provider_then_encode_and_stream_then_decode_then_models() -> None:
    graph = import_graph()
    assert {"openai", "anthropic", "gemini"} <= set(WIRES)  # the folders were found
    for wire in WIRES:
        package = f"agentactors.providers.{wire}"
        depth = {f"{package}.{m}": level for level, layer in enumerate(WIRE_LAYERS) for m in layer}
        assert depth.keys() <= graph.keys(), f"{wire}: missing {sorted(depth.keys() - graph.keys())}"
        for module, level in depth.items():
            upward = sorted(t for t in graph[module] if t in depth and depth[t] <= level)
            assert not upward, f"{module} imports {upward}: against the order {WIRE_LAYERS}"
        # The order is the one the code has, not one it merely allows.
        provider, encode, stream, decode, models = (
            f"{package}.{m}" for m in ("provider", "encode", "stream", "decode", "models")
        )
        assert {encode, stream, decode} <= graph[provider], wire
        assert decode in graph[stream] and models in graph[encode] and models in graph[decode], wire
        # Any other module of the folder (gemini's schema.py, bedrock's eventstream.py) is a helper of a layer:
        # it may sit under encode or stream, never over the provider.
        helpers = [m for m in graph if m.startswith(f"{package}.") and m not in depth]
        for helper in helpers:
            assert provider not in graph[helper], f"{helper} imports {provider}"


def test_no_wire_module_but_provider_touches_the_transport() -> None:
    """Encoding, decoding and model data are pure: only ``provider.py`` imports ``http/`` (or httpx)."""
    graph = import_graph()
    for wire in WIRES:
        package = f"agentactors.providers.{wire}"
        for module in sorted(m for m in graph if m.startswith(f"{package}.") and m != f"{package}.provider"):
            http = sorted(t for t in graph[module] if t.startswith("agentactors.providers.http"))
            assert not http, f"{module} imports {http}"
            assert "httpx" not in _third_party_imports(module), module


def _third_party_imports(module: str) -> set[str]:
    path = PACKAGE.parent.joinpath(*module.split(".")).with_suffix(".py")
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name.partition(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            found.add(node.module.partition(".")[0])
    return found


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
