"""The architecture, checked: no import cycle, a kernel that stands alone, no reads of another module's privates.

docs/architecture.md draws the layers; these tests keep a later change from quietly undoing them.  They read
the package's source with :mod:`ast` (nothing is imported), so they see every import: module level, under
``TYPE_CHECKING`` and inside functions alike — a cycle hidden in a function is still a cycle in the design.
``importlib.import_module("...")`` calls are not imports here: they are the deprecation shims of moved names
and paths (``agentactors/_compat.py``, the package's ``__getattr__``), which resolve a name on demand.

Each failure lists every offender with ``file:line``, so one run says all that is left to fix.
"""

from __future__ import annotations

import ast
from collections import deque
from collections.abc import Iterator
from pathlib import Path

import attrs

PACKAGE = "agentactors"
ROOT = Path(__file__).resolve().parents[2]
PACKAGE_DIR = ROOT / PACKAGE


@attrs.frozen
class Module:
    """One module of the package: its dotted name, file and parsed source."""

    name: str
    path: Path
    tree: ast.Module

    @property
    def is_package(self) -> bool:
        return self.path.name == "__init__.py"

    @property
    def where(self) -> str:
        return self.path.relative_to(ROOT).as_posix()


def _load_modules() -> dict[str, Module]:
    modules: dict[str, Module] = {}
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        name = ".".join(parts)
        modules[name] = Module(name, path, ast.parse(path.read_text(encoding="utf-8"), filename=str(path)))
    return modules


MODULES = _load_modules()


# --- the import graph -----------------------------------------------------------------------------


@attrs.frozen
class Edge:
    """``source`` imports ``target`` at ``line`` of the source's file."""

    source: str
    target: str
    line: int

    def describe(self) -> str:
        return f"{self.source} -> {self.target}  ({MODULES[self.source].where}:{self.line})"


def _resolve_relative(module: Module, level: int, name: str | None) -> str:
    """The absolute module a ``from <dots><name> import ...`` in ``module`` refers to."""
    package = module.name.split(".") if module.is_package else module.name.split(".")[:-1]
    base = package[: len(package) - (level - 1)]
    return ".".join([*base, name] if name else base)


def _targets(module: Module, node: ast.Import | ast.ImportFrom) -> Iterator[str]:
    """The package modules an import statement makes ``module`` depend on."""
    if isinstance(node, ast.Import):
        for alias in node.names:
            # `import a.b.c` depends on a.b.c; the parents it also runs are not counted as edges (see below).
            dotted = alias.name
            while dotted and dotted not in MODULES:
                dotted = dotted.rpartition(".")[0]
            if dotted:
                yield dotted
        return
    base = _resolve_relative(module, node.level, node.module) if node.level else (node.module or "")
    for alias in node.names:
        # `from pkg import sub` depends on the submodule when there is one, else on pkg itself.
        sub = f"{base}.{alias.name}"
        if sub in MODULES:
            yield sub
        elif base in MODULES:
            yield base


def _import_graph() -> dict[str, dict[str, Edge]]:
    """source -> target -> the first import of target in source.

    Only explicit imports count.  Importing ``a.b.c`` also runs the packages ``a`` and ``a.b`` first, but
    counting that would make every package that re-exports its children (``agentactors/__init__.py``) a cycle
    with each child; import checkers (grimp, import-linter) leave those implicit edges out too.
    """
    graph: dict[str, dict[str, Edge]] = {name: {} for name in MODULES}
    for module in MODULES.values():
        for node in ast.walk(module.tree):
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            for target in _targets(module, node):
                if target != module.name and target not in graph[module.name]:
                    graph[module.name][target] = Edge(module.name, target, node.lineno)
    return graph


def _strongly_connected(graph: dict[str, dict[str, Edge]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative (the graph is small, but recursion limits are not worth thinking about)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                components.append(sorted(component))
    return components


def _shortest_cycle(graph: dict[str, dict[str, Edge]], start: str, within: set[str]) -> list[Edge]:
    """A shortest import cycle through ``start`` using only modules of ``within`` (its component)."""
    previous: dict[str, Edge] = {}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for target, edge in sorted(graph[node].items()):
            if target not in within:
                continue
            if target == start:
                path = [edge]
                while path[0].source != start:
                    path.insert(0, previous[path[0].source])
                return path
            if target not in previous:
                previous[target] = edge
                queue.append(target)
    return []  # unreachable for a member of a component of two or more


def test_the_package_import_graph_has_no_cycle() -> None:
    graph = _import_graph()
    components = [c for c in _strongly_connected(graph) if len(c) > 1]
    report: list[str] = []
    for component in components:
        members = set(component)
        report.append(f"cycle among {len(component)} modules: {', '.join(component)}")
        # One shortest cycle through each member: together they show every edge that closes a loop.
        seen: set[tuple[str, ...]] = set()
        for member in component:
            cycle = _shortest_cycle(graph, member, members)
            key = tuple(sorted(edge.source for edge in cycle))
            if key in seen:
                continue
            seen.add(key)
            report.append("  " + "\n    ".join(edge.describe() for edge in cycle))
    assert not components, "import cycles in the package:\n" + "\n".join(report)


# --- the actor kernel stands alone ----------------------------------------------------------------

KERNEL = [
    f"{PACKAGE}.actors.{name}"
    for name in ("_cell", "runtime", "ref", "worker", "supervision", "mailbox")
    if f"{PACKAGE}.actors.{name}" in MODULES
]

# What the kernel is the foundation of: it may know none of them (docs/architecture.md, "Layout").
ABOVE_THE_KERNEL = (
    f"{PACKAGE}.agent",
    f"{PACKAGE}.loop",
    f"{PACKAGE}.providers",
    f"{PACKAGE}.tools",
    f"{PACKAGE}.actors.provider",
    f"{PACKAGE}.actors.tools",
)


def _is_above_the_kernel(module: str) -> bool:
    return any(module == layer or module.startswith(layer + ".") for layer in ABOVE_THE_KERNEL)


def test_the_actor_kernel_imports_nothing_above_it() -> None:
    """Directly or through a module it imports: a kernel that reaches the loop by way of a helper still does."""
    assert KERNEL, "no kernel module found: update KERNEL to the layout"
    graph = _import_graph()
    offenders: list[str] = []
    for start in KERNEL:
        previous: dict[str, Edge] = {}
        queue = deque([start])
        while queue:
            node = queue.popleft()
            for target, edge in sorted(graph[node].items()):
                if target in previous or target == start:
                    continue
                previous[target] = edge
                if _is_above_the_kernel(target):
                    path = [edge]
                    while path[0].source != start:
                        path.insert(0, previous[path[0].source])
                    offenders.append(f"{start} reaches {target}:\n    " + "\n    ".join(e.describe() for e in path))
                else:
                    queue.append(target)
    assert not offenders, "the actor kernel imports from above it:\n" + "\n".join(offenders)


# --- no module reads another module's private attributes ------------------------------------------

# Justified exceptions: (file, the expression as the failure message writes it) -> why it is fine.  Keep each
# one argued; test_the_allow_list_has_no_stale_entries removes the ones nobody needs any more.
ALLOWED_PRIVATE_READS: dict[tuple[str, str], str] = {}


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _is_own(node: ast.expr) -> bool:
    """``self``, ``cls`` or ``super()``: the object whose class (or its base) the module itself defines."""
    if isinstance(node, ast.Name):
        return node.id in ("self", "cls")
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super"


_BY_NAME = frozenset({"getattr", "setattr", "hasattr", "delattr"})


def _string_attribute(call: ast.Call) -> tuple[ast.expr, str] | None:
    """``(obj, "_name")`` for ``getattr(obj, "_name", ...)`` and kin, and ``object.__setattr__(obj, "_name", v)``."""
    func = call.func
    by_name = isinstance(func, ast.Name) and func.id in _BY_NAME
    by_object = (
        isinstance(func, ast.Attribute)
        and func.attr in ("__setattr__", "__getattribute__", "__delattr__")
        and isinstance(func.value, ast.Name)
        and func.value.id == "object"
    )
    if not (by_name or by_object) or len(call.args) < 2:
        return None
    name = call.args[1]
    if isinstance(name, ast.Constant) and isinstance(name.value, str):
        return call.args[0], name.value
    return None


def _own_private_names(tree: ast.Module) -> set[str]:
    """The private attribute names a module defines for itself.

    ``self._x`` / ``cls._x`` assignments (also through ``object.__setattr__(self, "_x", ...)``, as frozen classes
    do), ``__slots__`` entries, and names bound in a class body (fields, class attributes, methods).
    """
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) and _is_own(node.value):
            names.add(node.attr)
        elif isinstance(node, ast.Call) and ast.unparse(node.func) in ("setattr", "object.__setattr__"):
            found = _string_attribute(node)
            if found is not None and _is_own(found[0]):
                names.add(found[1])
        elif isinstance(node, ast.ClassDef):
            for statement in node.body:
                if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                    names.add(statement.name)
                targets: list[ast.expr] = []
                value: ast.expr | None = None
                if isinstance(statement, ast.Assign):
                    targets, value = statement.targets, statement.value
                elif isinstance(statement, ast.AnnAssign):
                    targets, value = [statement.target], statement.value
                for target in targets:
                    if isinstance(target, ast.Name):
                        names.add(target.id)
                        if target.id == "__slots__" and value is not None:
                            names.update(_slot_names(value))
    return {name for name in names if _is_private(name)}


def _slot_names(value: ast.expr) -> Iterator[str]:
    if isinstance(value, ast.Constant) and isinstance(value.value, str):
        yield value.value
    elif isinstance(value, ast.Tuple | ast.List | ast.Set):
        for element in value.elts:
            if isinstance(element, ast.Constant) and isinstance(element.value, str):
                yield element.value


def _private_reads(module: Module) -> list[tuple[int, str]]:
    """``(line, expression)`` for each access to a private name the module does not define itself, in line order.

    Attribute access (``x._name``), access by string (``getattr(x, "_name")`` and kin) and importing a private
    name (``from .ref import _CURRENT``; a private *module*, ``from . import _gate``, is the package's own).
    """
    own = _own_private_names(module.tree)
    found: set[tuple[int, str]] = set()
    for node in ast.walk(module.tree):
        if isinstance(node, ast.ImportFrom):
            base = _resolve_relative(module, node.level, node.module) if node.level else (node.module or "")
            for alias in node.names:
                if _is_private(alias.name) and f"{base}.{alias.name}" not in MODULES:
                    found.add((node.lineno, f"from {base} import {alias.name}"))
            continue
        if isinstance(node, ast.Attribute):
            obj, name = node.value, node.attr
            text = ast.unparse(node)
        elif isinstance(node, ast.Call) and (by_string := _string_attribute(node)) is not None:
            obj, name = by_string
            text = f"{ast.unparse(node.func)}({ast.unparse(obj)}, {name!r}, ...)"
        else:
            continue
        if _is_private(name) and name not in own and not _is_own(obj):
            found.add((node.lineno, text))
    return sorted(found)


def test_no_module_reads_private_attributes_of_another_modules_objects() -> None:
    """A heuristic, by name: ``x._name`` where ``x`` is not ``self``/``cls``/``super()`` and the module defines
    no ``_name`` of its own — the reader reaches into state another module owns (modules included:
    ``othermodule._private`` counts too)."""
    offenders = [
        f"{module.where}:{line}: {text}"
        for module in MODULES.values()
        for line, text in _private_reads(module)
        if (module.where, text) not in ALLOWED_PRIVATE_READS
    ]
    assert not offenders, f"{len(offenders)} reads of another module's private attributes:\n" + "\n".join(offenders)


def test_the_allow_list_has_no_stale_entries() -> None:
    """An exception nobody needs any more is a hole for the next violation: remove it."""
    used = {(module.where, text) for module in MODULES.values() for _, text in _private_reads(module)}
    stale = sorted(set(ALLOWED_PRIVATE_READS) - used)
    assert not stale, f"allow-list entries no module needs: {stale}"


# --- the checks check: each one finds what it is for in a made-up module ---------------------------


def _made_up(name: str, source: str) -> Module:
    return Module(name, PACKAGE_DIR / (name.rpartition(".")[2] + ".py"), ast.parse(source))


def test_relative_imports_resolve_from_modules_and_packages() -> None:
    module = _made_up(f"{PACKAGE}.actors.runtime", "")
    assert _resolve_relative(module, 1, "ref") == f"{PACKAGE}.actors.ref"
    assert _resolve_relative(module, 2, "events") == f"{PACKAGE}.events"
    package = Module(f"{PACKAGE}.actors", PACKAGE_DIR / "actors" / "__init__.py", ast.parse(""))
    assert _resolve_relative(package, 1, "ref") == f"{PACKAGE}.actors.ref"
    assert _resolve_relative(package, 2, None) == PACKAGE


def test_every_kind_of_import_is_an_edge_but_a_string_import() -> None:
    module = _made_up(
        f"{PACKAGE}.actors.runtime",
        "from typing import TYPE_CHECKING\n"
        "import importlib\n"
        "from .ref import ActorRef\n"  # relative, module level
        "import agentactors.events\n"  # absolute
        "if TYPE_CHECKING:\n"
        "    from ..agent import Agent\n"  # type checking only
        "def later():\n"
        "    from agentactors.loop import controller\n"  # function level, a submodule by from-import
        "    importlib.import_module('agentactors.tools')\n",  # a deprecation shim: not an edge
    )
    targets = {
        t
        for node in ast.walk(module.tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for t in _targets(module, node)
    }
    assert targets == {f"{PACKAGE}.actors.ref", f"{PACKAGE}.events", f"{PACKAGE}.agent", f"{PACKAGE}.loop.controller"}


def test_cycles_are_found_and_shown() -> None:
    graph = {
        "a": {"b": Edge("a", "b", 1)},
        "b": {"c": Edge("b", "c", 2)},
        "c": {"a": Edge("c", "a", 3)},
        "d": {"a": Edge("d", "a", 4)},
    }
    assert [c for c in _strongly_connected(graph) if len(c) > 1] == [["a", "b", "c"]]
    assert [(e.source, e.target) for e in _shortest_cycle(graph, "b", {"a", "b", "c"})] == [
        ("b", "c"),
        ("c", "a"),
        ("a", "b"),
    ]


def test_private_reads_are_told_from_a_modules_own() -> None:
    module = _made_up(
        f"{PACKAGE}.made_up",
        "from .ref import _CURRENT\n"  # a private name of another module
        "from . import _compat\n"  # a private module of the package: fine
        "class Mine:\n"
        "    __slots__ = ('_slot',)\n"
        "    _level = 1\n"
        "    def __init__(self, other):\n"
        "        self._state = 0\n"
        "        object.__setattr__(self, '_frozen', 1)\n"
        "        super()._setup()\n"  # the base's, through super(): fine
        "    def _helper(self):\n"
        "        return self._state\n"
        "    def read(self, other, ref, mod):\n"
        "        other._state, other._slot, other._level, other._frozen, other._helper()\n"  # all the module's own
        "        ref._mailbox\n"  # another module's
        "        getattr(ref, '_actor', None)\n"  # the same by name
        "        mod._private_function()\n"  # a module's private function
        "        return other.__class__, ref.public\n",  # dunders and public names: fine
    )
    assert [text for _, text in _private_reads(module)] == [
        f"from {PACKAGE}.ref import _CURRENT",
        "ref._mailbox",
        "getattr(ref, '_actor', ...)",
        "mod._private_function",
    ]
