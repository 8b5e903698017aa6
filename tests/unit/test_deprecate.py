"""Module paths that moved keep working for one release, with a DeprecationWarning naming the new path."""

from __future__ import annotations

import importlib
import sys

import pytest

from agentactors._deprecate import MOVED


@pytest.mark.parametrize(("old", "new"), sorted(MOVED.items()))
def test_an_old_module_path_is_the_new_module_with_a_warning(old: str, new: str) -> None:
    sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning, match=new.replace(".", r"\.")):
        module = importlib.import_module(old)
    assert module is importlib.import_module(new)
    assert module.__spec__ is not None and module.__spec__.name == new  # the real module keeps its own spec


def test_names_imported_through_an_old_path_are_the_same_objects() -> None:
    sys.modules.pop("agentactors.actors.loop", None)
    with pytest.warns(DeprecationWarning, match="moved to agentactors.loop.controller"):
        from agentactors.actors.loop import LoopController as Old
    from agentactors.loop.controller import LoopController

    assert Old is LoopController


def test_unknown_paths_are_not_answered_by_the_alias_finder() -> None:
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("agentactors.actors.no_such_module")
