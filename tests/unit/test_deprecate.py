"""Every moved path and name keeps working for one release, with a DeprecationWarning naming its new home.

agentactors._deprecate holds both tables (old module paths, old names) and the one warning they give.
"""

from __future__ import annotations

import importlib
import sys
import warnings

import pytest

import agentactors
from agentactors import _deprecate
from agentactors._deprecate import MOVED, MOVED_NAMES, UNWARNED


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
        # an old module path, served by agentactors._deprecate's import hook: mypy finds no such file
        from agentactors.actors.loop import LoopController as Old  # type: ignore[import-not-found]
    from agentactors.loop.controller import LoopController

    assert Old is LoopController


@pytest.mark.parametrize(
    ("old", "name", "new"),
    [
        ("agentactors.actors.provider", "ProviderActor", "agentactors.gateway.provider"),
        ("agentactors.actors.tools", "ToolExecutorActor", "agentactors.tools.executor"),
        ("agentactors.providers.base", "LLMProvider", "agentactors.providers.port"),
        ("agentactors.providers._classify", "classify_http_error", "agentactors.providers.errors"),
        ("agentactors.streaming", "AgentRun", "agentactors.agent.run"),
        ("agentactors.run_ticket", "RunTicket", "agentactors.gateway.ticket"),
        ("agentactors.resilience._base", "ProviderDecorator", "agentactors.resilience.decorator"),
    ],
)
def test_a_name_imported_through_a_path_the_structure_issue_moved_is_the_same_object(
    old: str, name: str, new: str
) -> None:
    sys.modules.pop(old, None)
    namespace: dict[str, object] = {}
    with pytest.warns(DeprecationWarning, match=rf"{old} is deprecated: import it from {new}"):
        exec(f"from {old} import {name}", namespace)
    assert namespace[name] is getattr(importlib.import_module(new), name)


@pytest.mark.parametrize(
    ("package", "name"),
    [
        ("agentactors.agent", "Agent"),
        ("agentactors.providers.openai", "OpenAIProvider"),
        ("agentactors.providers.anthropic", "AnthropicWire"),
        ("agentactors.providers.gemini", "to_gemini_schema"),
        ("agentactors.providers.http", "HTTPProvider"),
    ],
)
def test_an_old_module_that_is_a_package_now_still_gives_its_names_without_a_warning(package: str, name: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert getattr(importlib.import_module(package), name) is not None


def test_unknown_paths_are_not_answered_by_the_alias_finder() -> None:
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("agentactors.actors.no_such_module")


# --- old names -------------------------------------------------------------------------------------------

WARNED = sorted(set(MOVED_NAMES) - UNWARNED)


@pytest.mark.parametrize("old", WARNED)
def test_an_old_name_is_its_new_homes_object_with_a_warning(old: str) -> None:
    module, _, name = old.rpartition(".")
    home = MOVED_NAMES[old]
    with pytest.warns(DeprecationWarning, match=rf"{old} is deprecated: import it from {home}\b") as caught:
        obj = getattr(importlib.import_module(module), name)
    assert obj is getattr(importlib.import_module(home), name)
    assert caught[0].filename == __file__, "the warning points at the line that asked for the name"
    assert name not in vars(importlib.import_module(module)), "bound there, so the warning would never fire"


def test_the_from_import_form_of_an_old_name_warns_too() -> None:
    with pytest.warns(DeprecationWarning, match=r"agentactors\.actors\.ProviderActor is deprecated"):
        # answered by the module __getattr__ agentactors._deprecate installs, unseen by mypy
        from agentactors.actors import ProviderActor  # type: ignore[attr-defined]
    from agentactors.gateway import ProviderActor as home

    assert ProviderActor is home


@pytest.mark.parametrize("old", WARNED)
def test_the_from_import_form_warns_once(old: str) -> None:
    """``from package import old_name``: Python looks the name up twice for a package (``hasattr`` in the import
    system's ``_handle_fromlist``, then the import itself), and each lookup warned — two warnings where a filter
    shows every one (``"always"``, as pytest records them)."""
    module, _, name = old.rpartition(".")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        exec(f"from {module} import {name}", {})
    moved = [w for w in caught if issubclass(w.category, DeprecationWarning) and old in str(w.message)]
    assert len(moved) == 1, [str(w.message) for w in moved]
    assert moved[0].filename == "<string>", "the warning points at the line that asked for the name"


@pytest.mark.parametrize("old", sorted(UNWARNED))
def test_a_name_served_from_another_module_comes_without_a_warning(old: str) -> None:
    module, _, name = old.rpartition(".")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        obj = getattr(importlib.import_module(module), name)
    assert obj is getattr(importlib.import_module(MOVED_NAMES[old]), name)


def test_a_module_that_lost_names_still_raises_attribute_error_for_unknown_ones() -> None:
    for module in sorted({old.rpartition(".")[0] for old in MOVED_NAMES}):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with pytest.raises(AttributeError, match=rf"module '{module}' has no attribute 'no_such_name'"):
                importlib.import_module(module).no_such_name  # noqa: B018


def test_the_one_warning_says_where_to_import_from() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _deprecate.warn_moved("agentactors.Old", "agentactors.home", "Old")
        _deprecate.warn_moved("agentactors.old_module", "agentactors.new.module")
    assert {w.category for w in caught} == {DeprecationWarning}
    assert [str(w.message) for w in caught] == [
        "agentactors.Old is deprecated: import it from agentactors.home (agentactors.Old moved to "
        "agentactors.home.Old; the old name is kept for one release)",
        "agentactors.old_module is deprecated: import it from agentactors.new.module (agentactors.old_module moved "
        "to agentactors.new.module; the old path is kept for one release)",
    ]
    assert {w.filename for w in caught} == {__file__}


def test_installing_twice_changes_nothing() -> None:
    finders = list(sys.meta_path)
    hook = vars(agentactors)["__getattr__"]
    _deprecate.install()
    assert sys.meta_path == finders and vars(agentactors)["__getattr__"] is hook
