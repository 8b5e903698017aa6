"""The optional dependencies ("extras"): one shape for the error a missing one raises, where it was asked for.

``pip install agentactors`` installs the core (anyio, httpx, attrs, tenacity, httpx-sse, jsonschema, h11, and
typing_extensions before 3.13); a feature that needs more names an extra of ``pyproject.toml``.  Used without it,
the feature raises — at the import or call the user wrote, never later and never from deep inside — a
:class:`ModuleNotFoundError` (an :class:`ImportError`) that says what needs what and how to install it::

    agentactors.mcp needs the mcp SDK (2.x): pip install 'agentactors[mcp]' (No module named 'mcp')

The error keeps the missing module's ``name`` (``exc.name == "mcp"``) and is raised ``from`` the original.  An
:class:`ImportError` that is not a missing module (an installed package of the wrong major version: ``cannot import
name ...``) is said the same way, as an :class:`ImportError`.  A failure to import a module of agentactors itself
is a bug, not a missing extra: it propagates as it is.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from types import ModuleType, TracebackType
from typing import Final

__all__ = ["EXTRAS", "import_extra", "missing_extra", "needs_extra"]

#: Each extra a feature may need, and what it installs (``[project.optional-dependencies]`` of pyproject.toml).
EXTRAS: Final[Mapping[str, str]] = {
    "aiohttp": "aiohttp",
    "asgi": "starlette",
    "bedrock": "botocore",
    "cli": "rich",
    "jiter": "jiter",
    "mcp": "the mcp SDK (2.x)",
    "otel": "opentelemetry-api",
    "postgres": "psycopg 3",
    "prices": "genai-prices",
    "pydantic": "pydantic",
    "ray": "ray",
    "testing": "trio",
    "trio": "trio",
    "vertex": "google-auth",
}


#: This package's own name (not spelled out: a string naming a package module is an edge of the import graph here).
_PACKAGE: Final = __name__.partition(".")[0]


def missing_extra(what: str, extra: str, exc: ImportError | None = None) -> ImportError:
    """The error for ``what`` (a module, a class, a call: what the user wrote) used without ``extra`` installed.

    A :class:`ModuleNotFoundError` unless ``exc`` is an :class:`ImportError` of another kind; it keeps ``exc``'s
    ``name`` and quotes its text.  Raise it ``from exc``.

    :raises KeyError: ``extra`` is not one of :data:`EXTRAS` (a typo in the library).
    """
    text = f"{what} needs {EXTRAS[extra]}: pip install 'agentactors[{extra}]'"
    if exc is None:
        return ModuleNotFoundError(text)
    text = f"{text} ({exc})"
    if isinstance(exc, ModuleNotFoundError):
        return ModuleNotFoundError(text, name=exc.name, path=exc.path)
    return ImportError(text, name=exc.name, path=exc.path)


def _outside(exc: ImportError) -> bool:
    """Whether ``exc`` is about a module outside agentactors (an extra's), not one of the package's own."""
    top = (exc.name or "").partition(".")[0]
    return bool(top) and top != _PACKAGE


def import_extra(module: str, extra: str, what: str) -> ModuleType:
    """``importlib.import_module(module)``, or :func:`missing_extra`'s error when it (or what it imports) is missing.

    :raises ImportError: ``module`` cannot be imported (a :class:`ModuleNotFoundError` when it is not installed).
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        if not _outside(exc):
            raise
        raise missing_extra(what, extra, exc) from exc


class needs_extra:  # lower case: it reads as a statement, ``with needs_extra("mcp", "agentactors.mcp"):``
    """Around the imports of an extra's modules: an :class:`ImportError` of a module outside agentactors leaves it as
    :func:`missing_extra`'s error; any other exception passes as it is.

    ::

        with needs_extra("mcp", "agentactors.mcp"):
            from ._server import MCPServerHTTP, MCPServerStdio
    """

    __slots__ = ("_extra", "_what")

    def __init__(self, extra: str, what: str) -> None:
        if extra not in EXTRAS:
            raise KeyError(f"no extra named {extra!r}")
        self._extra = extra
        self._what = what

    def __enter__(self) -> None:
        return None

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if isinstance(exc, ImportError) and _outside(exc):
            raise missing_extra(self._what, self._extra, exc) from exc
