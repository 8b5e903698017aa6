"""The actor kernel knows no domain and has no import cycle (TYPE_CHECKING and function-level imports count).

Read from the source, not from ``sys.modules``: an import under ``if TYPE_CHECKING:`` or inside a function
never runs in a test, yet it is a dependency all the same.  ``importlib.import_module`` by name is caught
too: the kernel makes none.  (tests/unit/test_architecture.py checks the same through every module the kernel
reaches; this file says it about the kernel's own source, module by module.)
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3] / "agentactors"
ACTORS = ROOT / "actors"
# Every module of the kernel's folder, its private ones and its __init__ included.
KERNEL = tuple(sorted(path.stem for path in ACTORS.glob("*.py")))
# Above the data model, at the root: the user API, the command line, explain() and the deprecation aliases.
ROOT_ABOVE = {"__init__", "__main__", "explain", "_deprecate"}
# The root's data model (messages, parts, settings, errors, events, redaction) and its private helpers.
DATA_MODEL = {f"agentactors.{path.stem}" for path in ROOT.glob("*.py") if path.stem not in ROOT_ABOVE}
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
                package = ["agentactors", "actors"]
                base = package[: len(package) - (node.level - 1)]
                prefix = ".".join(base + ([node.module] if node.module else []))
            else:
                prefix = node.module or ""
            for alias in node.names:
                # `from . import supervision` imports a module; `from ..errors import X` a name of one.
                name = f"{prefix}.{alias.name}"
                found.add(name if _is_module(name) else prefix)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
        ):
            found.add(str(node.args[0].value))
    return found


def _is_module(dotted: str) -> bool:
    path = ROOT.parent.joinpath(*dotted.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _kernel_deps(module: str) -> set[str]:
    return {
        name
        for name in KERNEL
        if name != module and any(i == f"agentactors.actors.{name}" for i in _imports(module))
    }


def _allowed(imported: str) -> bool:
    """The kernel itself, the root's data model, and anything outside the package (the standard library, anyio)."""
    if imported != "agentactors" and not imported.startswith("agentactors."):
        return True
    if imported == "agentactors.actors" or imported.startswith("agentactors.actors."):
        return True
    return any(imported == model or imported.startswith(model + ".") for model in DATA_MODEL)


def test_the_kernel_is_every_module_of_its_folder() -> None:
    assert {"_cell", "runtime", "ref", "frame", "worker", "supervision", "mailbox", "crossing", "threads"} <= set(
        KERNEL
    )
    assert {"agentactors.messages", "agentactors.errors", "agentactors.events"} <= DATA_MODEL
    assert "agentactors.explain" not in DATA_MODEL


def test_the_kernel_imports_only_itself_and_the_data_model() -> None:
    for module in KERNEL:
        bad = {i for i in _imports(module) if not _allowed(i) and (module, i) not in SHIMS}
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
        if module != "__init__":  # the package re-exports its modules: they run inside it, not the other way
            visit(module, ())


def test_the_kernel_looks_up_no_module_by_name() -> None:
    """An ``importlib.import_module`` by name is an import the graph cannot see: the kernel makes none."""
    for path in ACTORS.glob("*.py"):
        assert "import_module(" not in path.read_text(), path.name
