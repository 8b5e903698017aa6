"""The architecture, checked: no import cycle, layers that stand alone, no reads of another module's privates.

docs/architecture.md draws the layers; these tests keep a later change from quietly undoing them.  They read
the package's source with :mod:`ast` (nothing is imported), so they see every import: module level, under
``TYPE_CHECKING`` and inside functions alike — a cycle hidden in a function is still a cycle in the design.
Everything that makes a module run another counts as an edge of the graph:

- an import statement: ``import a.b.c`` depends on ``a.b.c``; ``from a.b import x`` on ``a.b`` — it reads the
  namespace ``a/b/__init__.py`` makes, whose own imports then count like any module's — and on ``a.b.x`` too
  when that is a module.  So a module reaches a sibling by ``from .sibling import name`` (or
  ``import agentactors.pkg.sibling as sibling``), not by ``from . import sibling`` through its package's
  ``__init__``, which imports the module back when it re-exports it;
- the package ``__init__`` modules an import runs on the way (``import agentactors.loop.result`` from
  ``agentactors.tools`` runs ``agentactors/loop/__init__.py`` first) — except the importer's own enclosing
  packages, which are already running when it runs;
- ``importlib.import_module(...)`` (a deprecation shim, a name served lazily): its string, or the module-level
  constant it names, or, when the name is computed, every string of the module that names a package module.

Each failure lists every offender with ``file:line``, so one run says all that is left to fix.
"""

from __future__ import annotations

import ast
import functools
from collections import deque
from collections.abc import Iterator, Mapping
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
    def package(self) -> str:
        """The package its relative imports start from: itself for an ``__init__``, else its parent."""
        return self.name if self.is_package else self.name.rpartition(".")[0]

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
    """``source`` runs ``target`` at ``line`` of the source's file (``via``: the module whose import runs it,
    when ``target`` is a package ``__init__`` run on the way)."""

    source: str
    target: str
    line: int
    via: str = ""

    def describe(self) -> str:
        how = f", importing {self.via}" if self.via else ""
        return f"{self.source} -> {self.target}  ({MODULES[self.source].where}:{self.line}{how})"


def _resolve_relative(module: Module, level: int, name: str | None) -> str:
    """The absolute module a ``from <dots><name> import ...`` in ``module`` refers to."""
    package = module.package.split(".")
    base = package[: len(package) - (level - 1)]
    return ".".join([*base, name] if name else base)


def _longest_module(dotted: str, modules: Mapping[str, object]) -> str:
    """The package module ``import dotted`` (or ``import_module(dotted)``) runs last: ``""`` if none."""
    while dotted and dotted not in modules:
        dotted = dotted.rpartition(".")[0]
    return dotted


def _string_constants(module: Module) -> dict[str, str]:
    """The module-level ``NAME = "..."`` constants (what an ``import_module(NAME)`` resolves to)."""
    constants: dict[str, str] = {}
    value: ast.expr | None
    for node in module.tree.body:
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign):
            targets, value = [node.target], node.value
        else:
            continue
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            constants.update({t.id: value.value for t in targets if isinstance(t, ast.Name)})
    return constants


def _is_import_call(node: ast.AST) -> bool:
    """``importlib.import_module(...)``, ``import_module(...)`` or ``__import__(...)`` with an argument."""
    if not isinstance(node, ast.Call) or not node.args:
        return False
    func = node.func
    if isinstance(func, ast.Attribute):
        return func.attr == "import_module"
    return isinstance(func, ast.Name) and func.id in ("import_module", "__import__")


def _imported_by_name(module: Module, call: ast.Call) -> Iterator[str]:
    """The package modules an ``import_module`` call may run (see the module docstring)."""
    argument = call.args[0]
    if isinstance(argument, ast.Constant) and isinstance(argument.value, str):
        names = [argument.value]
    elif isinstance(argument, ast.Name) and argument.id in (constants := _string_constants(module)):
        names = [constants[argument.id]]
    else:
        names = [
            node.value
            for node in ast.walk(module.tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in MODULES
        ]
    for name in names:
        if found := _longest_module(name, MODULES):
            yield found


def _targets(module: Module, node: ast.AST) -> Iterator[str]:
    """The package modules an import statement (or an ``import_module`` call) names."""
    if _is_import_call(node):
        assert isinstance(node, ast.Call)
        yield from _imported_by_name(module, node)
        return
    if isinstance(node, ast.Import):
        for alias in node.names:
            # `import a.b.c` names a.b.c; the packages it runs on the way are added by _edges.
            if found := _longest_module(alias.name, MODULES):
                yield found
        return
    if not isinstance(node, ast.ImportFrom):
        return
    base = _resolve_relative(module, node.level, node.module) if node.level else (node.module or "")
    if base in MODULES:
        # `from pkg import name` reads pkg's namespace, which pkg's __init__ makes: `name` may be a submodule
        # (imported on the spot) or whatever the __init__ bound under that name — a dependency on pkg either way.
        yield base
    for alias in node.names:
        if (sub := f"{base}.{alias.name}") in MODULES:
            yield sub


def _enclosing_packages(name: str) -> list[str]:
    """``a``, ``a.b`` for ``a.b.c``: the ``__init__`` modules that run before it, outermost first."""
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def _edges(module: Module) -> Iterator[Edge]:
    """Every edge of ``module``: what each of its imports names, and the package ``__init__`` modules they run
    on the way — but not the importer's own enclosing packages (already running when it runs: counting them
    would make each child of a package that re-exports its children a cycle with it, as grimp and
    import-linter would agree).  A module names its own package only by importing from it explicitly."""
    running = {*_enclosing_packages(module.name), module.name}
    for node in ast.walk(module.tree):
        if not (isinstance(node, ast.Import | ast.ImportFrom) or _is_import_call(node)):
            continue
        line = getattr(node, "lineno", 0)
        named = [target for target in _targets(module, node) if target != module.name]
        yield from (Edge(module.name, target, line) for target in named)
        for target in named:
            for package in _enclosing_packages(target):
                if package not in running and package not in named and package in MODULES:
                    yield Edge(module.name, package, line, via=target)


@functools.cache
def _import_graph() -> Mapping[str, Mapping[str, Edge]]:
    """source -> target -> the first edge from source to target (read once: several tests walk it)."""
    graph: dict[str, dict[str, Edge]] = {name: {} for name in MODULES}
    for module in MODULES.values():
        for edge in _edges(module):
            graph[module.name].setdefault(edge.target, edge)
    return graph


def _strongly_connected(graph: Mapping[str, Mapping[str, object]]) -> list[list[str]]:
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


def _shortest_path(graph: Mapping[str, Mapping[str, Edge]], start: str, goal: str, within: set[str]) -> list[Edge]:
    """The edges of a shortest path from ``start`` to ``goal`` through nodes of ``within`` (a cycle when the
    goal is the start): ``[]`` when there is none."""
    previous: dict[str, tuple[str, Edge]] = {}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for target, edge in sorted(graph[node].items()):
            if target not in within or (target in previous and target != goal):
                continue
            if target == goal:
                path, at = [edge], node
                while at != start:
                    at, step = previous[at]
                    path.insert(0, step)
                return path
            previous[target] = (node, edge)
            queue.append(target)
    return []


def _shortest_cycle(graph: Mapping[str, Mapping[str, Edge]], start: str, within: set[str]) -> list[Edge]:
    """A shortest cycle through ``start`` using only nodes of ``within`` (its component)."""
    return _shortest_path(graph, start, start, within)


def _cycle_report(graph: Mapping[str, Mapping[str, Edge]], what: str) -> list[str]:
    """One paragraph per cycle of ``graph``: its members, and one shortest cycle through each member —
    together they show every edge that closes a loop."""
    report: list[str] = []
    for component in (c for c in _strongly_connected(graph) if len(c) > 1):
        members = set(component)
        report.append(f"cycle among {len(component)} {what}: {', '.join(component)}")
        seen: set[tuple[str, ...]] = set()
        for member in component:
            cycle = _shortest_cycle(graph, member, members)
            key = tuple(sorted(f"{edge.source}>{edge.target}" for edge in cycle))
            if key not in seen:
                seen.add(key)
                report.append("  " + "\n    ".join(edge.describe() for edge in cycle))
    return report


def test_the_package_import_graph_has_no_cycle() -> None:
    report = _cycle_report(_import_graph(), "modules")
    assert not report, "import cycles in the package:\n" + "\n".join(report)


# --- no cycle between packages ----------------------------------------------------------------------

# The root's modules are the data model (messages, parts, settings, errors, events, redaction) with the root's
# private helpers, beneath every package — and the user API, above them all, each module a node of its own:
# the package's __init__, the command line (which runs the demo), explain() over a run's record (which the
# demo prints), the deprecation aliases of moved paths (which name modules of every layer).
USER_API = frozenset({PACKAGE, f"{PACKAGE}.__main__", f"{PACKAGE}.explain", f"{PACKAGE}._deprecate"})
DATA_MODEL_LAYER = f"{PACKAGE} (data model)"


def _package_of(module: str) -> str:
    """``agentactors.X`` for ``agentactors.X.*``; for a root module, itself (the user API) or the data model."""
    if module in USER_API:
        return module
    parts = module.split(".")
    if len(parts) == 2 and not MODULES[module].is_package:
        return DATA_MODEL_LAYER
    return ".".join(parts[:2])


def _package_graph(graph: Mapping[str, Mapping[str, Edge]]) -> dict[str, dict[str, Edge]]:
    """The import graph with each module collapsed to its package: package -> package -> a module edge."""
    packages: dict[str, dict[str, Edge]] = {_package_of(name): {} for name in graph}
    for source, targets in sorted(graph.items()):
        for target, edge in sorted(targets.items()):
            if (into := _package_of(target)) != (outof := _package_of(source)):
                packages[outof].setdefault(into, edge)
    return packages


def test_no_cycle_between_packages() -> None:
    """``actors`` ↔ ``tools`` was one: a package that imports another's module while that one imports it back
    cannot be understood, tested or moved alone — even when no single module closes the loop."""
    report = _cycle_report(_package_graph(_import_graph()), "packages")
    assert not report, "import cycles between packages:\n" + "\n".join(report)


# --- the actor kernel stands alone ----------------------------------------------------------------

KERNEL = sorted(name for name in MODULES if name == f"{PACKAGE}.actors" or name.startswith(f"{PACKAGE}.actors."))


def _kernel_may_import(module: str) -> bool:
    """The kernel itself and the root's data model: everything else is above it (docs/architecture.md)."""
    return module in KERNEL or _package_of(module) == DATA_MODEL_LAYER


def test_the_actor_kernel_imports_nothing_above_it() -> None:
    """Directly or through a module it imports: a kernel that reaches the loop by way of a helper (or of the
    data model's lazy names) still does."""
    assert f"{PACKAGE}.actors.runtime" in KERNEL, "no kernel module found: update KERNEL to the layout"
    graph = _import_graph()
    offenders: list[str] = []
    for start in KERNEL:
        previous: dict[str, tuple[str, Edge]] = {}
        queue = deque([start])
        while queue:
            node = queue.popleft()
            for target, edge in sorted(graph[node].items()):
                if target in previous or target == start:
                    continue
                previous[target] = (node, edge)
                if _kernel_may_import(target):
                    queue.append(target)
                    continue
                path, at = [edge], node
                while at != start:
                    at, step = previous[at]
                    path.insert(0, step)
                offenders.append(f"{start} reaches {target}:\n    " + "\n    ".join(e.describe() for e in path))
                queue.clear()  # one way up per kernel module is enough to show
                break
    assert not offenders, "the actor kernel imports from above it:\n" + "\n".join(offenders)


# --- a private module is its package's ----------------------------------------------------------


def _private_owner(module: str) -> str | None:
    """The package a module is private to: ``a.b`` for ``a.b._x`` (or ``a.b._x.y``), None for a public one."""
    parts = module.split(".")
    for i, part in enumerate(parts):
        if part.startswith("_") and not (part.startswith("__") and part.endswith("__")):
            return ".".join(parts[:i])
    return None


def _inside(module: Module, package: str) -> bool:
    return module.package == package or module.package.startswith(package + ".")


def _private_imports(module: Module) -> Iterator[Edge]:
    """The imports by ``module`` of a private module of a package it is not inside (the first of each)."""
    seen: set[str] = set()
    for edge in _edges(module):
        owner = _private_owner(edge.target)
        if not edge.via and owner is not None and not _inside(module, owner) and edge.target not in seen:
            seen.add(edge.target)
            yield edge


def test_no_module_imports_another_packages_private_module() -> None:
    """``a.b._x`` is ``a.b``'s (and its subpackages'): its names may change with no deprecation, so a module
    outside would break silently.  The root's private modules (``agentactors._scrub``) are the whole package's."""
    offenders = [edge.describe() for module in MODULES.values() for edge in _private_imports(module)]
    assert not offenders, "imports of another package's private module:\n" + "\n".join(offenders)


# --- no module reads another module's private attributes ------------------------------------------

# Justified exceptions: (file, the expression as the failure message writes it) -> why it is fine.  Keep each
# one argued; test_the_allow_list_has_no_stale_entries removes the ones nobody needs any more.
ALLOWED_PRIVATE_READS: dict[tuple[str, str], str] = {
    ("agentactors/_backend.py", "scope._parent_scope"): (
        "anyio's own link from a cancel scope to the one around it, read by the backend seam only: a run's "
        "checkpoint walks from its frame's scope instead of looking the task's innermost scope up (W1); "
        "used only when anyio's asyncio scopes have it, and checked against anyio's checkpoint_if_cancelled "
        "by tests/unit/test_backend.py"
    ),
    ("agentactors/_backend.py", "scope._cancel_called"): (
        "what anyio's cancel_called property returns, read in the same walk: a property is a Python call, and a "
        "run's two checkpoints walk two scopes each (W1); used only when anyio's scopes keep it as a slot and the "
        "property exists, and checked against anyio's checkpoint_if_cancelled by tests/unit/test_backend.py"
    ),
    ("agentactors/_backend.py", "scope._shield"): (
        "what anyio's shield property returns, read in the same walk for the same reason, under the same check"
    ),
    ("agentactors/_backend.py", "scope._host_task"): (
        "the task that entered an anyio asyncio cancel scope, read by entered_here() only where an ask would queue "
        "behind a busy actor (never a direct ask): no public API links a scope to its task, and an actor asking "
        "itself from its own handler is told from any other asker by it; an AttributeError means no answer "
        "(tests/unit/actors/test_an_actor_asking_itself.py checks it on both backends)"
    ),
    ("agentactors/_backend.py", "scope._CancelScope__original"): (
        "the trio scope inside anyio's trio CancelScope, read by entered_here() for the same reason and check"
    ),
    ("agentactors/_backend.py", "original._cancel_status"): (
        "trio's record of an active scope (None once left), matched by entered_here() against the calling task's "
        "chain of cancel statuses, for the same reason and check"
    ),
    ("agentactors/_backend.py", "task._cancel_status"): (
        "the calling trio task's innermost cancel status, where entered_here() starts that chain (same reason)"
    ),
    ("agentactors/_backend.py", "nursery._cancel_status"): (
        "the status a trio task began in (its parent nursery's): where entered_here() stops, so that only the "
        "task's own scopes count, not its starter's (same reason and check)"
    ),
    ("agentactors/otel/recorder.py", "provider._active_span_processor"): (
        "the OpenTelemetry SDK TracerProvider's multi-processor, read once per recorder to find a SimpleSpanProcessor "
        "(it exports on the event loop: the recorder warns): the SDK has no public way to list a provider's "
        "processors; any error or another layout means no warning (tests/unit/otel/test_recorder_processors.py)"
    ),
    ("agentactors/tools/validation.py", "validator._resolver"): (
        "jsonschema's resolver of the subschema being validated, read by the unevaluatedProperties keyword's walk "
        "(_evaluated_keys) to look a $ref / $dynamicRef up exactly as jsonschema's own walk "
        "(_utils.find_evaluated_property_keys_by_schema, which that keyword replaces: it runs re.search on the "
        "model's keys) does: no public API gives it; the agreement with jsonschema's verdicts through $ref is "
        "checked by tests/unit/tools/test_validation_regex_keywords.py"
    ),
    ("agentactors/otel/recorder.py", "active._span_processors"): (
        "the processors that multi-processor holds, read in the same look for the same reason, under the same check"
    ),
}


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


# --- which objects are provably of the module's own classes ----------------------------------------
#
# A private name the module also defines is not enough: ``other._state`` in a module with its own ``_state``
# may still read another module's object of the same shape.  The read is the module's own only when ``other``
# is provably an instance (or the class) of a class the module defines: ``self``, ``cls``, ``super()``; a name
# whose every binding in its scope is one (a parameter annotated with a local class, ``x = Local(...)``,
# ``x = self._attr`` where ``_attr`` is declared with a local class, ``for x in <own collection>``); an
# attribute declared with a local class; a call of a function or method whose return annotation is one.  Not
# a type checker: anything it cannot prove is not the module's own (``isinstance`` narrowing included).

_MAPPINGS = frozenset({"dict", "Mapping", "MutableMapping", "defaultdict", "OrderedDict", "WeakValueDictionary"})
# Methods of a collection that return one of its elements (or a view of them).
_ELEMENT_METHODS = frozenset({"get", "pop", "popleft", "setdefault", "values", "copy"})
_FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda


def _annotation(node: ast.expr | None) -> ast.expr | None:
    """The annotation as an expression, a string annotation parsed."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:
            return ast.parse(node.value, mode="eval").body
        except SyntaxError:
            return None
    return node


def _is_none(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _denotes_local(node: ast.expr | None, classes: frozenset[str]) -> bool:
    """Whether every value the annotation admits, ``None`` aside, is of a local class (``Local``, ``Local[T]``,
    ``Local | None``) or a collection of them (``list[Local]``, ``tuple[Local, ...]``; a mapping's values)."""
    node = _annotation(node)
    if isinstance(node, ast.Name):
        return node.id in classes
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        members = [m for m in (node.left, node.right) if not _is_none(m)]
        return bool(members) and all(_denotes_local(m, classes) for m in members)
    if not isinstance(node, ast.Subscript):
        return False
    base = node.value.id if isinstance(node.value, ast.Name) else getattr(node.value, "attr", None)
    if base in classes:
        return True
    args = [
        a
        for a in (node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice])
        if not (isinstance(a, ast.Constant) and a.value is Ellipsis)
    ]
    if base in _MAPPINGS:
        return len(args) == 2 and _denotes_local(args[1], classes)
    members = [a for a in args if not _is_none(a)] if base in ("Optional", "Union") else args
    return bool(members) and all(_denotes_local(m, classes) for m in members)


def _parameters(function: _FunctionNode) -> list[ast.arg]:
    a = function.args
    return [*a.posonlyargs, *a.args, *a.kwonlyargs, *([a.vararg] if a.vararg else []), *([a.kwarg] if a.kwarg else [])]


@attrs.frozen
class LocalTypes:
    """What a module declares with its own classes: the classes, and attributes and callables typed with them."""

    classes: frozenset[str]
    attributes: frozenset[str]  # declared with a local class, and never with anything else
    functions: frozenset[str]  # module-level functions returning a local class
    methods: frozenset[str]  # methods (and properties) of a local class returning one


def _local_types(tree: ast.Module) -> LocalTypes:
    classes = frozenset(n.name for n in ast.walk(tree) if isinstance(n, ast.ClassDef))
    local_attributes: set[str] = set()
    other_attributes: set[str] = set()
    methods: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for statement in node.body:
                if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
                    local = _denotes_local(statement.annotation, classes)
                    (local_attributes if local else other_attributes).add(statement.target.id)
                elif isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef) and _denotes_local(
                    statement.returns, classes
                ):
                    methods.add(statement.name)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            typed = {a.arg for a in _parameters(node) if _denotes_local(a.annotation, classes)}
            for inner in ast.walk(node):
                if isinstance(inner, ast.AnnAssign) and (name := _own_attribute(inner.target)) is not None:
                    local = _denotes_local(inner.annotation, classes)
                    (local_attributes if local else other_attributes).add(name)
                elif isinstance(inner, ast.Assign) and not _is_none(inner.value):
                    value = inner.value
                    local = (isinstance(value, ast.Name) and value.id in typed) or (
                        isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id in classes
                    )
                    for target in inner.targets:
                        if (name := _own_attribute(target)) is not None:
                            (local_attributes if local else other_attributes).add(name)
    functions = frozenset(
        n.name
        for n in tree.body
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and _denotes_local(n.returns, classes)
    )
    return LocalTypes(classes, frozenset(local_attributes - other_attributes), functions, frozenset(methods))


def _own_attribute(node: ast.expr) -> str | None:
    """``x`` for ``self.x`` / ``cls.x``."""
    return node.attr if isinstance(node, ast.Attribute) and _is_own(node.value) else None


def _is_provably_local(node: ast.expr, owned: frozenset[str], types: LocalTypes) -> bool:
    """Whether ``node`` is an instance (or the class) of a class the module defines, as far as can be proved."""
    if _is_own(node):
        return True
    if isinstance(node, ast.Name):
        return node.id in owned or node.id in types.classes
    if isinstance(node, ast.Attribute):
        wanted = node.attr == "__class__" or node.attr in types.attributes
        return wanted and _is_provably_local(node.value, owned, types)
    if isinstance(node, ast.Subscript | ast.Await):
        return _is_provably_local(node.value, owned, types)
    if isinstance(node, ast.IfExp):
        return all(_is_none(b) or _is_provably_local(b, owned, types) for b in (node.body, node.orelse))
    if isinstance(node, ast.BoolOp):
        return all(_is_none(v) or _is_provably_local(v, owned, types) for v in node.values)
    if isinstance(node, ast.NamedExpr):
        return _is_provably_local(node.value, owned, types)
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    if isinstance(func, ast.Name):
        if func.id in types.classes or func.id in types.functions:
            return True
        return func.id == "type" and len(node.args) == 1 and _is_provably_local(node.args[0], owned, types)
    if isinstance(func, ast.Attribute) and (func.attr in types.methods or func.attr in _ELEMENT_METHODS):
        return _is_provably_local(func.value, owned, types)
    return False


def _scope_nodes(scope: ast.AST) -> Iterator[ast.AST]:
    """The nodes of one scope: its body, not the bodies of the functions and classes defined in it."""
    todo = list(ast.iter_child_nodes(scope))
    while todo:
        node = todo.pop()
        yield node
        if not isinstance(node, _FunctionNode | ast.ClassDef):
            todo.extend(ast.iter_child_nodes(node))


_Binding = tuple[ast.expr | None, ast.expr | None]  # (value, annotation); neither: a binding nothing is known of


def _bind(target: ast.expr, value: ast.expr | None, bindings: dict[str, list[_Binding]]) -> None:
    if isinstance(target, ast.Name):
        bindings.setdefault(target.id, []).append((value, None))
    elif isinstance(target, ast.Tuple | ast.List):
        pairs = isinstance(value, ast.Tuple | ast.List) and len(value.elts) == len(target.elts)
        for i, element in enumerate(target.elts):
            _bind(element, value.elts[i] if pairs else None, bindings)  # type: ignore[union-attr]
    elif isinstance(target, ast.Starred):
        _bind(target.value, None, bindings)


def _bindings(scope: ast.AST) -> dict[str, list[_Binding]]:
    """name -> every binding of it in ``scope`` (``for x in c`` binds ``x`` to an element of ``c``)."""
    bindings: dict[str, list[_Binding]] = {}
    if isinstance(scope, _FunctionNode):
        for parameter in _parameters(scope):
            bindings.setdefault(parameter.arg, []).append((None, parameter.annotation or ast.Constant(None)))
    for node in _scope_nodes(scope):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                _bind(target, node.value, bindings)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            bindings.setdefault(node.target.id, []).append((None, node.annotation))
        elif isinstance(node, ast.NamedExpr):
            _bind(node.target, node.value, bindings)
        elif isinstance(node, ast.For | ast.AsyncFor | ast.comprehension):
            element = ast.Subscript(node.iter, ast.Constant(0))  # an element of what is iterated
            _bind(node.target, element, bindings)
        elif isinstance(node, ast.AugAssign):
            _bind(node.target, None, bindings)
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            _bind(node.optional_vars, None, bindings)  # what __enter__ returns: unknown
        else:
            # Names bound to something nothing is known of: handlers, imports, definitions, match captures.
            unknown: list[str | None] = []
            if isinstance(node, ast.ExceptHandler | ast.MatchAs | ast.MatchStar):
                unknown = [node.name]
            elif isinstance(node, ast.MatchMapping):
                unknown = [node.rest]
            elif isinstance(node, ast.Import | ast.ImportFrom):
                unknown = [(alias.asname or alias.name).partition(".")[0] for alias in node.names]
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                unknown = [node.name]
            for name in unknown:
                if name is not None:
                    bindings.setdefault(name, []).append((None, None))
    return bindings


def _owned_names(scope: ast.AST, inherited: frozenset[str], types: LocalTypes) -> frozenset[str]:
    """The names of ``scope`` provably bound to the module's own objects: every binding of each is one."""
    bindings = _bindings(scope)
    owned = frozenset(name for name in inherited if name not in bindings)
    while True:
        found = owned | {
            name
            for name, ways in bindings.items()
            if all(
                _denotes_local(annotation, types.classes)
                if annotation is not None
                else value is not None and _is_provably_local(value, owned, types)
                for value, annotation in ways
            )
        }
        if found == owned:
            return owned
        owned = found


def _private_reads(module: Module) -> list[tuple[int, str]]:
    """``(line, expression)`` for each access to a private name of an object not provably the module's own.

    Attribute access (``x._name``), access by string (``getattr(x, "_name")`` and kin) and importing a private
    name (``from .ref import _CURRENT``; a private *module*, ``from . import _gate``, is the package's own).
    ``self``/``cls``/``super()`` may read any private name (a base's too: inheriting is the base's invitation);
    any other object only a private name the module defines, and only when it is provably of a class the
    module defines (see :func:`_is_provably_local`).
    """
    own = _own_private_names(module.tree)
    types = _local_types(module.tree)
    found: set[tuple[int, str]] = set()

    def check(obj: ast.expr, name: str, text: str, line: int, owned: frozenset[str]) -> None:
        if not _is_private(name) or _is_own(obj):
            return
        if name not in own or not _is_provably_local(obj, owned, types):
            found.add((line, text))

    def visit(node: ast.AST, owned: frozenset[str]) -> None:
        if isinstance(node, _FunctionNode):
            owned = _owned_names(node, owned, types)
        if isinstance(node, ast.ImportFrom):
            base = _resolve_relative(module, node.level, node.module) if node.level else (node.module or "")
            for alias in node.names:
                if _is_private(alias.name) and f"{base}.{alias.name}" not in MODULES:
                    found.add((node.lineno, f"from {base} import {alias.name}"))
        elif isinstance(node, ast.Attribute):
            check(node.value, node.attr, ast.unparse(node), node.lineno, owned)
        elif isinstance(node, ast.Call) and (by_string := _string_attribute(node)) is not None:
            obj, name = by_string
            check(obj, name, f"{ast.unparse(node.func)}({ast.unparse(obj)}, {name!r}, ...)", node.lineno, owned)
        for child in ast.iter_child_nodes(node):
            visit(child, owned)

    visit(module.tree, _owned_names(module.tree, frozenset(), types))
    return sorted(found)


@functools.cache
def _package_private_reads() -> Mapping[str, list[tuple[int, str]]]:
    """Every module's private reads, found once (the slowest walk here, and two tests need it)."""
    return {name: _private_reads(module) for name, module in MODULES.items()}


def test_no_module_reads_private_attributes_of_another_modules_objects() -> None:
    """``x._name`` where ``x`` is not ``self``/``cls``/``super()``, unless the module defines ``_name`` and ``x`` is
    provably of one of its classes — otherwise the reader may reach into state another module owns (modules
    included: ``othermodule._private`` counts too).  A static proof, not a type checker's: a read it cannot
    prove is reported, and goes in ALLOWED_PRIVATE_READS with its reason if it is the module's own after all."""
    offenders = [
        f"{module.where}:{line}: {text}"
        for module in MODULES.values()
        for line, text in _package_private_reads()[module.name]
        if (module.where, text) not in ALLOWED_PRIVATE_READS
    ]
    assert not offenders, f"{len(offenders)} reads of another module's private attributes:\n" + "\n".join(offenders)


def test_the_allow_list_has_no_stale_entries() -> None:
    """An exception nobody needs any more is a hole for the next violation: remove it."""
    used = {(MODULES[name].where, text) for name, reads in _package_private_reads().items() for _, text in reads}
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


def _named(module: Module) -> set[tuple[str, str]]:
    """``module``'s edges as (target, via) pairs."""
    return {(edge.target, edge.via) for edge in _edges(module)}


def test_every_kind_of_import_is_an_edge() -> None:
    module = _made_up(
        f"{PACKAGE}.actors.runtime",
        "from typing import TYPE_CHECKING\n"
        "import importlib\n"
        "from .ref import ActorRef\n"  # relative, module level
        "import agentactors.events\n"  # absolute
        "if TYPE_CHECKING:\n"
        "    from ..agent import Agent\n"  # type checking only: a name of the package's __init__
        "def later():\n"
        "    import agentactors.loop.controller\n"  # function level
        "    importlib.import_module('agentactors.tools')\n",  # by name
    )
    assert _named(module) == {
        (f"{PACKAGE}.actors.ref", ""),
        (f"{PACKAGE}.events", ""),
        (f"{PACKAGE}.agent", ""),
        (f"{PACKAGE}.loop.controller", ""),
        (f"{PACKAGE}.loop", f"{PACKAGE}.loop.controller"),  # its package's __init__ runs first
        (f"{PACKAGE}.tools", ""),
    }


def test_an_import_by_name_is_an_edge_however_the_name_is_given() -> None:
    module = _made_up(
        f"{PACKAGE}.made_up",
        "import importlib\n"
        "_HOME = 'agentactors.providers.errors'\n"
        "def constant():\n"
        "    return importlib.import_module(_HOME)\n"  # a module-level constant
        "def table(name):\n"
        "    return importlib.import_module({'a': 'agentactors.events', 'b': 'not.a.module'}[name])\n",  # computed
    )
    assert _named(module) == {
        (f"{PACKAGE}.providers.errors", ""),
        (f"{PACKAGE}.providers", f"{PACKAGE}.providers.errors"),
        (f"{PACKAGE}.events", ""),
    }


def test_a_module_runs_the_packages_it_imports_through_but_not_its_own() -> None:
    module = _made_up(
        f"{PACKAGE}.loop.made_up",
        "import agentactors.loop.result as result\n"  # a sibling: its package is already running
        "from agentactors.tools.results import ToolResult\n"  # runs tools/__init__ on the way
        "from . import controller\n",  # a sibling read from its package's namespace: an edge to the package
    )
    assert _named(module) == {
        (f"{PACKAGE}.loop.result", ""),
        (f"{PACKAGE}.tools.results", ""),
        (f"{PACKAGE}.tools", f"{PACKAGE}.tools.results"),
        (f"{PACKAGE}.loop.controller", ""),
        (f"{PACKAGE}.loop", ""),
    }


def test_modules_collapse_to_their_package_and_the_root_to_two_layers() -> None:
    assert _package_of(f"{PACKAGE}.providers.openai.decode") == f"{PACKAGE}.providers"
    assert _package_of(f"{PACKAGE}.tools") == f"{PACKAGE}.tools"
    assert _package_of(f"{PACKAGE}.messages") == _package_of(f"{PACKAGE}._scrub") == DATA_MODEL_LAYER
    assert _package_of(PACKAGE) == PACKAGE and _package_of(f"{PACKAGE}.explain") == f"{PACKAGE}.explain"
    assert _kernel_may_import(f"{PACKAGE}.errors") and _kernel_may_import(f"{PACKAGE}.actors._cell")
    assert not _kernel_may_import(f"{PACKAGE}.tools") and not _kernel_may_import(PACKAGE)
    executor, ref, tools = f"{PACKAGE}.tools.executor", f"{PACKAGE}.actors.ref", f"{PACKAGE}.tools"
    graph = {  # no module cycle, a package cycle all the same
        executor: {ref: Edge(executor, ref, 1)},
        ref: {tools: Edge(ref, tools, 2)},
        tools: {},
    }
    assert [c for c in _strongly_connected(graph) if len(c) > 1] == []
    assert [c for c in _strongly_connected(_package_graph(graph)) if len(c) > 1] == [[f"{PACKAGE}.actors", tools]]


def test_a_private_module_is_its_packages_and_its_subpackages() -> None:
    assert _private_owner(f"{PACKAGE}.testing._fake_script") == f"{PACKAGE}.testing"
    assert _private_owner(f"{PACKAGE}._demo.main") == PACKAGE
    assert _private_owner(f"{PACKAGE}.__main__") is _private_owner(f"{PACKAGE}.testing") is None
    outsider = _made_up(
        f"{PACKAGE}._demo.made_up",
        "from ..testing._fake_script import Script\n"  # another package's private module
        "from agentactors import _scrub\n"  # the root's: the whole package's
        "from . import chain\n",
    )
    assert [edge.target for edge in _private_imports(outsider)] == [f"{PACKAGE}.testing._fake_script"]
    inside = _made_up(f"{PACKAGE}.providers.openai.made_up", "from .. import _media\n")  # a subpackage's
    assert list(_private_imports(inside)) == []


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
        "from . import _deprecate\n"  # a private module of the package: fine
        "class Mine:\n"
        "    __slots__ = ('_slot',)\n"
        "    _level = 1\n"
        "    def __init__(self, other):\n"
        "        self._state = 0\n"
        "        object.__setattr__(self, '_frozen', 1)\n"
        "        super()._setup()\n"  # the base's, through super(): fine
        "    def _helper(self):\n"
        "        return self._state\n"
        "    def read(self, other: Mine, ref, mod):\n"
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


def test_a_private_name_of_the_modules_own_is_read_only_from_objects_provably_of_its_classes() -> None:
    """The module defining ``_state`` does not make every ``x._state`` its own: ``x`` must be provably of one of
    its classes — the blind spot of a rule by name alone."""
    module = _made_up(
        f"{PACKAGE}.made_up",
        "from .ref import ActorRef\n"
        "class Mine:\n"
        "    _peers: dict[str, Mine]\n"
        "    def __init__(self, peer: Mine | None, ref: ActorRef) -> None:\n"
        "        self._state = 0\n"
        "        self._peer = peer\n"
        "        self._ref = ref\n"
        "    def _twin(self) -> Mine:\n"
        "        return Mine(None, self._ref)\n"
        "    def read(self, other, ref: ActorRef, mine: Mine, many: list[Mine], either: Mine | ActorRef):\n"
        "        other._state\n"  # unknown: not provably the module's own
        "        ref._state\n"  # annotated with another module's class
        "        either._state\n"  # a union with a foreign class
        "        self._ref._state\n"  # an attribute declared with a foreign class
        "        mine._state, self._peer._state, self._twin()._state, self._peers['a']._state\n"  # the module's own
        "        local = Mine(None, ref)\n"
        "        local._state, type(mine)._state, Mine._state\n"  # the module's own
        "        for item in many:\n"
        "            item._state\n"  # an element of a list of its own: its own
        "        shifty = Mine(None, ref)\n"
        "        shifty = ref\n"
        "        shifty._state\n"  # bound to its own once, to a foreign object once: not provably its own
        "        if isinstance(other, Mine):\n"
        "            other._state\n"  # narrowing is not followed
        "        def inner():\n"
        "            return mine._state, other._state\n",  # a closure sees the enclosing scope's proofs
    )
    assert [text for _, text in _private_reads(module)] == [
        "other._state",
        "ref._state",
        "either._state",
        "self._ref._state",
        "shifty._state",
        "other._state",
        "other._state",
    ]
