"""Names a package serves on first use (PEP 562) rather than imports with itself.

A package lists such names with the module that defines each (``{"SqliteStore": "agentactors.sessions.sqlite"}``)
and sets its module-level ``__getattr__`` and ``__dir__`` from :func:`on_first_use`: the first read of a name
imports its module and binds the name in the package, so the next read is a plain lookup.  ``from package import
X``, ``dir(package)`` and ``__all__`` star-imports see the names as if they had been imported; type checkers see
them through the package's ``if TYPE_CHECKING:`` imports.  Why: a program pays at import for what it uses — a
vendor's wire, a database driver's glue — not for every corner of the library (``tests/unit/test_import_cost.py``).
The package root does the same with one more step (it relabels what it serves: :mod:`agentactors._reexport`).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, MutableMapping

__all__ = ["on_first_use"]


def on_first_use(
    namespace: MutableMapping[str, object], homes: Mapping[str, str]
) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of the package whose ``globals()`` is ``namespace``, serving ``homes``
    (a name -> the absolute name of the module that defines it).

    :raises AttributeError: (from ``__getattr__``) a name neither bound nor served, as a module's own lookup would.
    """
    package = namespace["__name__"]

    def __getattr__(name: str) -> object:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(home), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *homes})

    return __getattr__, __dir__
