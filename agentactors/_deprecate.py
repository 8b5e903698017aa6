"""Deprecation aliases for module paths that moved: the old path imports the new module, with a warning.

A module path that moves keeps working for one release (``docs/architecture.md``, "The contract").
Rather than leave a stub file at every old place — which would put an import of the new layer back into
the old one (``agentactors.actors.loop`` importing ``agentactors.loop``) — one import hook, installed by
``agentactors/__init__.py``, answers for every old path in :data:`MOVED`: importing it imports the new
module, registers it under the old name too, and emits a :class:`DeprecationWarning` naming the new path.
The module object is the same, so ``from agentactors.actors.loop import LoopController`` gets the very
class ``agentactors.loop.controller`` defines.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings
from collections.abc import Sequence
from types import ModuleType

__all__ = ["MOVED", "install"]

#: Old module path -> new module path.  Remove an entry one release after its move.
MOVED: dict[str, str] = {
    "agentactors.actors.loop": "agentactors.loop.controller",
    "agentactors.actors.result": "agentactors.loop.result",
    "agentactors.actors.nudges": "agentactors.loop.nudges",
    "agentactors.actors.json_transport": "agentactors.loop.json_transport",
    "agentactors.actors.thinking": "agentactors.loop.thinking",
    "agentactors.actors.context_budget": "agentactors.loop.context_budget",
    "agentactors.providers.openai_stream": "agentactors.providers.openai.stream",
    "agentactors.providers.gemini_schema": "agentactors.providers.gemini.schema",
    "agentactors.demo": "agentactors._demo.main",
}


class _AliasLoader(importlib.abc.Loader):
    """Loads an old path by importing the new module and handing back that same module object."""

    def __init__(self, new: str) -> None:
        self._new = new
        self._spec: importlib.machinery.ModuleSpec | None = None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        warnings.warn(
            f"{spec.name} moved to {self._new}; the old path is kept for one release",
            DeprecationWarning,
            stacklevel=2,
        )
        module = importlib.import_module(self._new)
        self._spec = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        """Nothing to run (the new module ran when it was imported): give it back its own ``__spec__``,
        which the import system just replaced with the old path's."""
        if self._spec is not None:
            module.__spec__ = self._spec


class _AliasFinder(importlib.abc.MetaPathFinder):
    """Finds the old paths of :data:`MOVED` (and nothing else)."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        new = MOVED.get(fullname)
        if new is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, _AliasLoader(new))


_FINDER = _AliasFinder()


def install() -> None:
    """Put the alias finder on ``sys.meta_path`` (once)."""
    if _FINDER not in sys.meta_path:
        sys.meta_path.append(_FINDER)
