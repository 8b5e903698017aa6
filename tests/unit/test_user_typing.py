"""A user's program type-checks under ``mypy --strict``: the public API as README.md and docs/*.md show it.

tests/typing/user_program.py is that program (tools, typed agents, chains, streams, a runtime's many runs,
sessions, explain, errors), its promises written as ``assert_type``.  ``make test`` checks it with the rest of
tests/; this test checks it alone, with the repository's mypy configuration, so a change to a public signature
that a user's checker would reject fails here, naming the line.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROGRAM = ROOT / "tests" / "typing" / "user_program.py"


def _warm_cache(cache: Path) -> None:
    """A copy of the repository's mypy cache, or none (see tests/unit/output/test_typing.py): mypy rechecks only
    what changed since, against the sources as they are; the repository's cache is never written."""
    try:
        shutil.copytree(ROOT / ".mypy_cache", cache)
    except (OSError, shutil.Error):
        shutil.rmtree(cache, ignore_errors=True)


def test_the_user_program_is_clean_under_mypy_strict(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    _warm_cache(cache)
    started = time.monotonic()
    done = subprocess.run(
        [
            sys.executable, "-m", "mypy", "--strict", "--config-file", str(ROOT / "pyproject.toml"),
            "--cache-dir", str(cache), "--no-error-summary", str(PROGRAM.relative_to(ROOT)),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    took = time.monotonic() - started
    assert done.returncode == 0, done.stdout + done.stderr
    # Seconds, cold (a fresh cache reads the package and its dependencies): a generous bound for a busy worker.
    assert took < 60, f"mypy took {took:.1f} s on one file"


#: A name misspelt in an import from each package that serves names on first use (a module ``__getattr__``): a
#: checker that saw that ``__getattr__`` would take any name from it as ``Any``, and the typo would surface only
#: when the line runs.
MISSPELT = {
    "agentactors": "Agnet",
    "agentactors.testing": "ScriptedProvider",  # (it lives in the root, not in testing)
    "agentactors.serve": "openai_server",
    "agentactors.journal": "SqlitJournal",
    "agentactors.providers.http": "DEFAULT_TIMEOUTS",
    "agentactors.providers.http.transport": "OWNED_LIMIT",
}


def test_a_misspelt_import_is_a_checker_error_not_any(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    _warm_cache(cache)
    program = tmp_path / "misspelt.py"
    lines = [f"from {module} import {name}" for module, name in MISSPELT.items()]
    # The names these packages do serve on first use still check: the lazy providers, a journal, FakeVendor.
    lines += [
        "from agentactors import AnthropicProvider, SqliteStore",
        "from agentactors.journal import SqliteJournal",
        "from agentactors.serve import openai_app",
        "from agentactors.testing import FakeVendor",
        "from agentactors.providers.http import DEFAULT_TIMEOUT",
    ]
    program.write_text("\n".join(lines) + "\n", encoding="utf-8")
    done = subprocess.run(
        [
            sys.executable, "-m", "mypy", "--strict", "--config-file", str(ROOT / "pyproject.toml"),
            "--cache-dir", str(cache), "--no-error-summary", str(program),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    flagged = {int(line.split(":")[1]) for line in done.stdout.splitlines() if ": error:" in line}
    assert flagged == set(range(1, len(MISSPELT) + 1)), done.stdout + done.stderr


def test_pytest_collects_nothing_from_tests_typing() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "tests/typing"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    # Exit status 5: no tests collected.
    assert done.returncode == 5, done.stdout + done.stderr


# --- bare generics: what `mypy --strict` cannot see -------------------------------------------------------
# OutputT has a default (str, PEP 696), so a bare `RunResult` in an annotation is no `disallow_any_generics`
# error: it is RunResult[str], and a typed agent's result (RunResult[Triage]) is refused where it is passed, or
# typed as str where it is returned.  The library means "any output" there: RunResult[Any].

#: The classes generic in OutputT.
DEFAULTED = frozenset(
    {"Agent", "AgentRun", "AgentSession", "RunResult", "ToolOutput", "NativeOutput", "PromptedOutput"}
)

#: Bare uses known and reported (file, enclosing def): each should become X[Any] (or X[OutputT]); delete its
#: entry then.  A new one fails the test below.
KNOWN_BARE: frozenset[tuple[str, str]] = frozenset()  # none left: each was RunResult[str] to a checker


def _bare_names(annotation: ast.expr) -> set[str]:
    """The DEFAULTED names in ``annotation`` used without ``[...]`` (a quoted annotation is parsed too)."""
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        try:
            annotation = ast.parse(annotation.value, mode="eval").body
        except SyntaxError:
            return set()
    subscripted = {id(node.value) for node in ast.walk(annotation) if isinstance(node, ast.Subscript)}
    return {
        node.id
        for node in ast.walk(annotation)
        if isinstance(node, ast.Name) and node.id in DEFAULTED and id(node) not in subscripted
    }


def _bare_uses(tree: ast.Module) -> set[str]:
    """The enclosing defs (``Class.method``) whose annotations hold a bare DEFAULTED name."""
    found: set[str] = set()

    def visit(node: ast.AST, scope: tuple[str, ...]) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                inner = (*scope, child.name)
                if not isinstance(child, ast.ClassDef):
                    arguments = child.args
                    annotations = [a.annotation for a in (*arguments.posonlyargs, *arguments.args,
                                                          *arguments.kwonlyargs, arguments.vararg, arguments.kwarg)
                                   if a is not None and a.annotation is not None]
                    if child.returns is not None:
                        annotations.append(child.returns)
                    if any(_bare_names(a) for a in annotations):
                        found.add(".".join(inner))
                visit(child, inner)
            elif isinstance(child, ast.AnnAssign):
                if _bare_names(child.annotation):
                    found.add(".".join(scope) or "<module>")
            else:
                visit(child, scope)

    visit(tree, ())
    return found


def test_no_new_bare_output_generics_in_annotations() -> None:
    uses = set()
    for path in sorted((ROOT / "agentactors").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        uses |= {(path.relative_to(ROOT).as_posix(), where) for where in _bare_uses(tree)}
    new = sorted(uses - KNOWN_BARE)
    assert not new, f"bare {sorted(DEFAULTED)} (read as X[str]) in annotations; write X[Any] or X[OutputT]: {new}"
