"""``agentactors.__all__`` is the user API, the package's own; plumbing is not in it.

Like httpx's ``tests/test_exported_members.py``: every exported name exists, is public and is defined in the
package; nothing public at the root is left out of ``__all__``.  Names that left ``__all__`` stay importable
from the root for one release, with a DeprecationWarning naming their module.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import warnings
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import agentactors

PACKAGE_DIR = Path(agentactors.__file__).parent
EXPORTED = [name for name in agentactors.__all__ if name != "__version__"]
# Plumbing that left __all__, and the module each is imported from now (kept at the root for one release).
MOVED_OUT: dict[str, str] = {
    "EventSink": "agentactors.events",
    "FanOut": "agentactors.events",
    "emit": "agentactors.events",
    "classify_exception": "agentactors.errors",
    "classify_http_error": "agentactors.errors",
}


def _exported(kind: Callable[[object], bool]) -> list[str]:
    return sorted(name for name in EXPORTED if kind(getattr(agentactors, name)))


def _is_class_or_function(obj: object) -> bool:
    return isinstance(obj, type) or inspect.isfunction(obj)


# --- the shape of __all__ -------------------------------------------------------------------------


def test_all_has_no_duplicates() -> None:
    duplicates = sorted({name for name in agentactors.__all__ if agentactors.__all__.count(name) > 1})
    assert not duplicates


def test_every_exported_name_exists_and_is_public() -> None:
    for name in agentactors.__all__:
        assert name in vars(agentactors), f"{name} is in __all__ but not bound in the package"
        assert not name.startswith("_") or name == "__version__", f"{name} is private"


def _top_level_definitions() -> dict[str, list[str]]:
    """name -> the package modules that define it at top level (class, def or assignment), read with ast."""
    defined: dict[str, list[str]] = {}
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        module = ".".join(parts)
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            names: list[str] = []
            if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                names = [node.name]
            elif isinstance(node, ast.Assign):
                names = [t.id for t in node.targets if isinstance(t, ast.Name)]
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                names = [node.target.id]
            for name in names:
                defined.setdefault(name, []).append(module)
    return defined


def test_every_exported_member_is_defined_in_the_package() -> None:
    """Defined by one of the package's submodules (not re-exported from a dependency), and that very object."""
    defined = _top_level_definitions()
    for name in EXPORTED:
        obj = getattr(agentactors, name)
        homes = [m for m in defined.get(name, ()) if m != "agentactors" and m != "agentactors.__main__"]
        assert any(getattr(importlib.import_module(m), name, None) is obj for m in homes), (
            f"{name} is not defined by any agentactors submodule (candidates: {homes})"
        )


def test_no_public_root_name_is_missing_from_all() -> None:
    """Submodules aside (``agentactors.events`` is bound by importing it), every public root name is exported."""
    public = {
        name
        for name, value in vars(agentactors).items()
        if not name.startswith("_") and not isinstance(value, ModuleType)
    }
    assert public == set(EXPORTED)


# --- the plumbing that left __all__ ---------------------------------------------------------------


@pytest.mark.parametrize(("name", "home"), sorted(MOVED_OUT.items()))
def test_a_name_that_left_all_is_importable_from_the_root_with_a_warning(name: str, home: str) -> None:
    assert name not in agentactors.__all__
    assert name not in vars(agentactors), "bound at the root, so __getattr__ (and its warning) never runs"
    with pytest.warns(DeprecationWarning, match=rf"agentactors\.{name} is deprecated: import it from {home}") as w:
        obj = getattr(agentactors, name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # the home may itself be an alias after a move
        assert obj is getattr(importlib.import_module(home), name)
    assert obj.__module__ != "agentactors", "plumbing keeps the name of the module that defines it"
    assert w[0].filename == __file__, "the warning points at the importing line"


def test_the_from_import_form_warns_too() -> None:
    with pytest.warns(DeprecationWarning, match="import it from agentactors.events"):
        from agentactors import emit
    from agentactors.events import emit as home

    assert emit is home


def test_an_unknown_root_name_is_an_attribute_error_without_a_warning() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(AttributeError, match="module 'agentactors' has no attribute 'no_such_name'"):
            agentactors.no_such_name  # type: ignore[attr-defined]  # noqa: B018
        assert not hasattr(agentactors, "no_such_name")


def test_a_submodule_is_still_imported_by_from_import() -> None:
    """``from agentactors import testing`` asks the root first; its __getattr__ must let the import go on."""
    from agentactors import testing

    assert testing is importlib.import_module("agentactors.testing")


def test_star_import_is_the_user_api_and_does_not_warn() -> None:
    namespace: dict[str, Any] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        exec("from agentactors import *", namespace)
    assert set(namespace) - {"__builtins__"} == set(agentactors.__all__)
