"""The actor kernel knows no domain and has no import cycle (TYPE_CHECKING and function-level imports count).

Read from the source, not from ``sys.modules``: an import under ``if TYPE_CHECKING:`` or inside a function
never runs in a test, yet it is a dependency all the same.  ``importlib.import_module`` by name is caught
too: the kernel makes none.
"""

from __future__ import annotations

import ast
from pathlib import Path

import agentactors.actors

ACTORS = Path(agentactors.actors.__file__).parent
KERNEL = ("_cell", "runtime", "ref", "frame", "worker", "supervision", "mailbox")
DOMAIN = (
    "agentactors.agent",
    "agentactors.gateway",
    "agentactors.loop",
    "agentactors.providers",
    "agentactors.resilience",
    "agentactors.sessions",
    "agentactors.tools",
)
SHIMS: set[tuple[str, str]] = set()  # (module, import) pairs allowed to cross: none


def _imports(module: str) -> set[str]:
    """Every module ``agentactors.actors.<module>`` imports, anywhere in its source, as absolute names."""
    tree = ast.parse((ACTORS / f"{module}.py").read_text())
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = ["agentactors", "actors"][: 3 - node.level]
                prefix = ".".join(base + ([node.module] if node.module else []))
            else:
                prefix = node.module or ""
            found.add(prefix)
            # `from . import supervision` imports a module, not a name.
            found.update(f"{prefix}.{alias.name}" for alias in node.names)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
        ):
            found.add(str(node.args[0].value))
    return found


def _kernel_deps(module: str) -> set[str]:
    return {
        name
        for name in KERNEL
        if name != module and any(i == f"agentactors.actors.{name}" for i in _imports(module))
    }


def test_the_kernel_imports_nothing_of_the_domain() -> None:
    for module in KERNEL:
        bad = {
            i
            for i in _imports(module)
            for domain in DOMAIN
            if (i == domain or i.startswith(domain + ".")) and (module, i) not in SHIMS
        }
        assert not bad, f"agentactors.actors.{module} imports {sorted(bad)}"


def test_the_cell_imports_no_other_kernel_module() -> None:
    assert not {i for i in _imports("_cell") if i.startswith("agentactors")}


def test_the_kernel_has_no_import_cycle() -> None:
    graph = {module: _kernel_deps(module) for module in KERNEL}
    assert graph["_cell"] == set()
    done: set[str] = set()

    def visit(module: str, path: tuple[str, ...]) -> None:
        assert module not in path, f"import cycle: {' -> '.join((*path, module))}"
        if module in done:
            return
        for dep in graph[module]:
            visit(dep, (*path, module))
        done.add(module)

    for module in KERNEL:
        visit(module, ())


def test_the_kernel_looks_up_no_module_by_name() -> None:
    """An ``importlib.import_module`` by name is an import the graph cannot see: the kernel makes none."""
    for path in ACTORS.glob("*.py"):
        assert "import_module(" not in path.read_text(), path.name
