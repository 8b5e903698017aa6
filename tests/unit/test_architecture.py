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
    for name in ("_cell", "runtime", "ref", "worker", "supervision", "mailbox", "frame", "crossing", "threads")
    if f"{PACKAGE}.actors.{name}" in MODULES
]

# What the kernel is the foundation of: it may know none of them (docs/architecture.md, "Layout").
ABOVE_THE_KERNEL = (
    f"{PACKAGE}.agent",
    f"{PACKAGE}.loop",
    f"{PACKAGE}.providers",
    f"{PACKAGE}.tools",
    f"{PACKAGE}.gateway",
    f"{PACKAGE}.resilience",
    f"{PACKAGE}.sessions",
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


def test_no_module_reads_private_attributes_of_another_modules_objects() -> None:
    """``x._name`` where ``x`` is not ``self``/``cls``/``super()``, unless the module defines ``_name`` and ``x`` is
    provably of one of its classes — otherwise the reader may reach into state another module owns (modules
    included: ``othermodule._private`` counts too).  A static proof, not a type checker's: a read it cannot
    prove is reported, and goes in ALLOWED_PRIVATE_READS with its reason if it is the module's own after all."""
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
