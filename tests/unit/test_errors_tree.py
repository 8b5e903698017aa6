"""The exception tree drawn in ``agentactors.errors``'s docstring is the package's real one.

Every exception class the package defines must appear in the drawing, under one of its
real bases, and every other base it has must be named on its line ("also a ValueError"),
so the drawing can neither leave a class out nor lie about what catches it.

Classes are found by importing every module of the package and looking at what each
module holds, not by trusting ``__module__`` to name the defining module (public classes
may say ``__module__ = "agentactors"``, httpx-style).  A module that cannot be imported
only because an optional extra is not installed is skipped: its import raised
``ModuleNotFoundError`` for a top-level package outside agentactors that is not installed.
Private classes (a leading underscore) are control flow caught inside their module; they
are not library errors and are not drawn.
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
import re
from types import ModuleType

import attrs

import agentactors
import agentactors.errors
from agentactors.errors import AgentActorsError

_BRANCH = re.compile(r"^(?P<indent>(?:│   |    )*)(?:├── |└── )(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?P<note>.*)$")


@attrs.frozen
class Drawn:
    name: str
    parent: str | None
    note: str


def parse_tree(doc: str, root: str = "AgentActorsError") -> dict[str, Drawn]:
    """The drawn tree below the line that is just ``root``: each name with its drawn parent and its note."""
    lines = [line.strip("\n") for line in doc.splitlines()]
    start = next(i for i, line in enumerate(lines) if line.strip() == root)
    margin = len(lines[start]) - len(lines[start].lstrip())
    drawn = {root: Drawn(root, None, "")}
    path = [root]
    for raw in lines[start + 1 :]:
        line = raw[margin:].rstrip()
        match = _BRANCH.match(line)
        if match is None:
            break  # the drawing ends at the first line that is not a branch
        depth = len(match["indent"]) // 4 + 1
        assert depth <= len(path), f"the drawing skips a level at {line!r}"
        name = match["name"]
        assert name not in drawn, f"{name} is drawn twice"
        del path[depth:]
        drawn[name] = Drawn(name, path[-1], match["note"].strip())
        path.append(name)
    return drawn


def import_every_module() -> tuple[list[ModuleType], list[tuple[str, str]]]:
    """Every module of the package, imported; and the (module, missing extra) pairs skipped."""
    modules: list[ModuleType] = [agentactors]
    skipped: list[tuple[str, str]] = []
    for info in pkgutil.walk_packages(agentactors.__path__, "agentactors.", onerror=lambda name: None):
        try:
            modules.append(importlib.import_module(info.name))
        except ModuleNotFoundError as exc:
            missing = (exc.name or "").partition(".")[0]
            if not missing or missing == "agentactors" or importlib.util.find_spec(missing) is not None:
                raise  # a real import failure, not an extra that is not installed
            skipped.append((info.name, missing))
    return modules, skipped


def package_exceptions(modules: list[ModuleType]) -> set[type[BaseException]]:
    found: set[type[BaseException]] = set()
    for module in modules:
        for value in vars(module).values():
            if (
                isinstance(value, type)
                and issubclass(value, BaseException)
                and value.__module__.partition(".")[0] == "agentactors"
                and not value.__name__.startswith("_")
            ):
                found.add(value)
    return found


def tree_problems(drawn: dict[str, Drawn], classes: set[type[BaseException]]) -> list[str]:
    """What is wrong with ``drawn`` as a picture of ``classes`` (nothing, for an honest drawing)."""
    problems: list[str] = []
    by_name: dict[str, type[BaseException]] = {}
    for cls in sorted(classes, key=lambda c: (c.__name__, c.__qualname__)):
        if cls.__name__ in by_name:
            problems.append(f"two exception classes are called {cls.__name__}: the drawing cannot tell them apart")
        by_name[cls.__name__] = cls
    for name, cls in by_name.items():
        if name not in drawn:
            problems.append(f"{name} ({cls.__module__}) is not in the drawn tree")
        elif not issubclass(cls, AgentActorsError):
            problems.append(f"{name} is not an AgentActorsError")
    for name, node in drawn.items():
        cls = by_name.get(name)
        if cls is None:
            problems.append(f"{name} is drawn but the package defines no such exception")
            continue
        if node.parent is None:
            continue
        parent = by_name.get(node.parent)
        if parent is None or parent not in cls.__bases__:
            bases = ", ".join(b.__name__ for b in cls.__bases__)
            problems.append(f"{name} is drawn under {node.parent}, which is not one of its bases ({bases})")
        for base in cls.__bases__:
            if base is not parent and not re.search(rf"\balso an? {re.escape(base.__name__)}\b", node.note):
                problems.append(f"{name} is also a {base.__name__}, and its line does not say so")
    return problems


def test_every_package_exception_is_drawn_under_its_real_base() -> None:
    modules, skipped = import_every_module()
    classes = package_exceptions(modules)
    assert AgentActorsError in classes and len(classes) > 10  # the walk found the package
    assert agentactors.errors.__doc__ is not None
    problems = tree_problems(parse_tree(agentactors.errors.__doc__), classes)
    assert not problems, "\n".join(problems) + (f"\n(skipped, extra not installed: {skipped})" if skipped else "")


def test_the_check_catches_a_drawing_that_lies() -> None:
    class Stray(Exception):
        pass

    class Picky(AgentActorsError, ValueError):
        pass

    classes: set[type[BaseException]] = {AgentActorsError, Picky}
    honest = parse_tree("AgentActorsError\n└── Picky   also a ValueError\n")
    assert tree_problems(honest, classes) == []
    assert tree_problems(parse_tree("AgentActorsError\n└── Picky\n"), classes) == [
        "Picky is also a ValueError, and its line does not say so"
    ]
    missing = tree_problems(parse_tree("AgentActorsError\n"), classes | {Stray})
    assert any(p.startswith("Picky (") and p.endswith("is not in the drawn tree") for p in missing)
    assert any(p.startswith("Stray (") and p.endswith("is not in the drawn tree") for p in missing)
    outside = tree_problems(parse_tree("AgentActorsError\n└── Stray\n"), classes | {Stray})
    assert "Stray is not an AgentActorsError" in outside
    assert any(p.startswith("Stray is drawn under AgentActorsError, which is not one of its bases") for p in outside)
    wrong_parent = parse_tree("AgentActorsError\n├── Picky   also a ValueError\n│   └── Other\n")
    assert "Other is drawn but the package defines no such exception" in tree_problems(wrong_parent, classes)

    class Child(AgentActorsError):
        pass

    misplaced = parse_tree("AgentActorsError\n├── Picky   also a ValueError\n│   └── Child\n")
    assert any("Child is drawn under Picky" in p for p in tree_problems(misplaced, classes | {Child}))


def test_the_drawing_parses_into_the_expected_shape() -> None:
    assert agentactors.errors.__doc__ is not None
    drawn = parse_tree(agentactors.errors.__doc__)
    assert drawn["ProviderError"].parent == "AgentActorsError"
    assert drawn["MalformedResponseError"].parent == "ProviderError"
    assert drawn["ScriptExhaustedError"].parent == "ProviderError"
    assert drawn["AskTimeout"].parent == "AgentActorsError"
