"""The exception tree drawn in ``agentactors.errors``'s docstring is the package's real one.

The docstring draws three trees: the library's errors (under ``AgentActorsError``), the signals user code
raises (under ``Signal``, outside the errors), and what is neither (under ``Exception``: a stand-in that is
never raised, a test double's and the demo's errors).  Every exception class the package defines must appear
in exactly one drawing — the one of its kind — under one of its real bases, and every other base it has must
be named on its line ("also a ValueError"), so the drawings can neither leave a class out nor lie about what
catches it.

Classes are found by importing every module of the package and looking at what each
module holds, not by trusting ``__module__`` to name the defining module (public classes
may say ``__module__ = "agentactors"``, httpx-style).  A module that cannot be imported
only because an optional extra is not installed is skipped: its import raised
``ModuleNotFoundError`` for a top-level package outside agentactors that is not installed.
Private classes (a leading underscore) are control flow caught inside their module; they
are not library errors and are not drawn.
"""

from __future__ import annotations

import builtins
import importlib
import importlib.util
import pkgutil
import re
from types import ModuleType

import attrs

import agentactors
import agentactors.errors
from agentactors.errors import AgentActorsError, Signal

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


#: The roots of the three drawings, in the order the docstring draws them.
ROOTS = ("AgentActorsError", "Signal", "Exception")


def parse_drawings(doc: str) -> dict[str, dict[str, Drawn]]:
    """Each drawing of the docstring, by its root."""
    return {root: parse_tree(doc, root) for root in ROOTS}


def _kind(cls: type[BaseException]) -> str:
    """The drawing a class belongs in."""
    if issubclass(cls, AgentActorsError):
        return "AgentActorsError"
    if issubclass(cls, Signal):
        return "Signal"
    return "Exception"


def _builtin_exception(name: str) -> type[BaseException] | None:
    """A builtin exception drawn as a base (``Exception``, ``RuntimeError``), else None."""
    value = getattr(builtins, name, None)
    return value if isinstance(value, type) and issubclass(value, BaseException) else None


def drawing_problems(drawings: dict[str, dict[str, Drawn]], classes: set[type[BaseException]]) -> list[str]:
    """What is wrong with the drawings as a picture of ``classes``: each class drawn once, in its kind's drawing."""
    problems: list[str] = []
    seen: dict[str, str] = {}
    for root, drawn in drawings.items():
        for name in drawn:
            if name != root and _builtin_exception(name) is None and name in seen:
                problems.append(f"{name} is drawn under both {seen[name]} and {root}")
            seen.setdefault(name, root)
        kind = {cls for cls in classes if _kind(cls) == root}
        problems += tree_problems(drawn, kind, root)
        strays = sorted(name for name in drawn if name != root and any(c.__name__ == name for c in classes - kind))
        problems += [f"{name} is drawn under {root}, which is not its kind" for name in strays]
    return problems


def tree_problems(
    drawn: dict[str, Drawn], classes: set[type[BaseException]], root: str = "AgentActorsError"
) -> list[str]:
    """What is wrong with ``drawn`` as a picture of ``classes`` (nothing, for an honest drawing)."""
    problems: list[str] = []
    by_name: dict[str, type[BaseException]] = {}
    for cls in sorted(classes, key=lambda c: (c.__name__, c.__qualname__)):
        if cls.__name__ in by_name:
            problems.append(f"two exception classes are called {cls.__name__}: the drawing cannot tell them apart")
        by_name[cls.__name__] = cls
    top = by_name.get(root) or _builtin_exception(root)
    for name, cls in by_name.items():
        if name not in drawn:
            problems.append(f"{name} ({cls.__module__}) is not in the drawn tree")
        elif top is None or not issubclass(cls, top):
            problems.append(f"{name} is not an {root}")
    for name, node in drawn.items():
        found = by_name.get(name) or _builtin_exception(name)
        if found is None:
            problems.append(f"{name} is drawn but the package defines no such exception")
            continue
        if node.parent is None:
            continue
        parent = by_name.get(node.parent) or _builtin_exception(node.parent)
        if parent is None or parent not in found.__bases__:
            bases = ", ".join(b.__name__ for b in found.__bases__)
            problems.append(f"{name} is drawn under {node.parent}, which is not one of its bases ({bases})")
        for base in found.__bases__:
            if base is not parent and not re.search(rf"\balso an? {re.escape(base.__name__)}\b", node.note):
                problems.append(f"{name} is also a {base.__name__}, and its line does not say so")
    return problems


def test_every_package_exception_is_drawn_under_its_real_base() -> None:
    modules, skipped = import_every_module()
    classes = package_exceptions(modules)
    assert AgentActorsError in classes and Signal in classes and len(classes) > 10  # the walk found the package
    assert agentactors.errors.__doc__ is not None
    problems = drawing_problems(parse_drawings(agentactors.errors.__doc__), classes)
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


def test_the_check_puts_each_class_in_the_drawing_of_its_kind() -> None:
    class Nudge(Signal):
        pass

    class Helper(RuntimeError):
        pass

    classes: set[type[BaseException]] = {AgentActorsError, Signal, Nudge, Helper}
    honest = parse_drawings(
        "AgentActorsError\n\nSignal\n└── Nudge\n\nException\n└── RuntimeError\n    └── Helper\n"
    )
    assert drawing_problems(honest, classes) == []
    swapped = parse_drawings("AgentActorsError\n└── Nudge\n\nSignal\n\nException\n└── RuntimeError\n    └── Helper\n")
    problems = drawing_problems(swapped, classes)
    assert "Nudge is drawn under AgentActorsError, which is not its kind" in problems
    assert any(p.startswith("Nudge (") and p.endswith("is not in the drawn tree") for p in problems)
    twice = parse_drawings("AgentActorsError\n\nSignal\n└── Nudge\n\nException\n├── Nudge\n└── RuntimeError\n")
    problems = drawing_problems(twice, {AgentActorsError, Signal, Nudge})
    assert "Nudge is drawn under both Signal and Exception" in problems


def test_the_drawing_parses_into_the_expected_shape() -> None:
    assert agentactors.errors.__doc__ is not None
    drawings = parse_drawings(agentactors.errors.__doc__)
    drawn = drawings["AgentActorsError"]
    assert drawn["ProviderError"].parent == "AgentActorsError"
    assert drawn["MalformedResponseError"].parent == "ProviderError"
    assert drawn["ScriptExhaustedError"].parent == "ProviderError"
    assert drawn["AskTimeoutError"].parent == "ActorError"
    assert drawn["ActorError"].parent == "AgentActorsError"
    assert {name for name, node in drawn.items() if node.parent == "RunError"} == {
        "RunDeadlineExceededError", "ToolStatusError", "OutputValidationError", "DelegationError",
        "CostLimitExceededError", "RunInterruptedError", "RunNotFoundError", "RunFinishedError", "CallNotPendingError",
        "PauseConsumedError",
    }
    signals = {name for name, node in drawings["Signal"].items() if node.parent == "Signal"}
    assert signals == {"ModelRetry", "ToolDenied"}
    assert {"RedactedException", "WireRejection", "LiveUnavailable"} <= set(drawings["Exception"])
    assert "ModelRetry" not in drawn and "WireRejection" not in drawn and "LiveUnavailable" not in drawn


def test_every_library_error_is_named_for_what_it_is() -> None:
    """One naming rule: a library error's name ends in ``Error`` (old names survive as aliases, not classes)."""
    assert agentactors.errors.__doc__ is not None
    drawn = parse_drawings(agentactors.errors.__doc__)["AgentActorsError"]
    assert sorted(name for name in drawn if not name.endswith("Error")) == []
