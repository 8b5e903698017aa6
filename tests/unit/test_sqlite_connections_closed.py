"""No code of the project uses a ``sqlite3`` connection's own ``with`` as if it closed the connection.

``with sqlite3.connect(path) as conn:`` ends a *transaction* (commit or rollback), not the connection: it stays
open until the garbage collector finds it.  From Python 3.13 that is a ``ResourceWarning`` ("unclosed database"),
which this suite makes an error — so on 3.13 every such block fails whichever test's garbage collection meets it,
while on 3.11 nothing shows.  This check finds them on any version: ``with closing(sqlite3.connect(...)) as conn``
(and ``, conn:`` after it where the block's commit is wanted) closes it.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TREES = ("agentactors", "tests", "examples", "benchmarks")


def _sqlite_connects_used_as_context(source: str) -> list[int]:
    """The lines of ``with sqlite3.connect(...)`` (a call of the module's ``connect`` itself as the context)."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.With | ast.AsyncWith):
            for item in node.items:
                call = item.context_expr
                if (
                    isinstance(call, ast.Call)
                    and isinstance(call.func, ast.Attribute)
                    and call.func.attr == "connect"
                    and isinstance(call.func.value, ast.Name)
                    and call.func.value.id == "sqlite3"
                ):
                    lines.append(call.lineno)
    return lines


def test_the_check_finds_a_connection_used_as_its_own_context() -> None:
    assert _sqlite_connects_used_as_context("import sqlite3\nwith sqlite3.connect('x') as c:\n    pass\n") == [2]
    closed = "import sqlite3\nfrom contextlib import closing\nwith closing(sqlite3.connect('x')) as c, c:\n    pass\n"
    assert _sqlite_connects_used_as_context(closed) == []


def test_no_sqlite_connection_is_left_to_the_garbage_collector_by_a_with_block() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{line}"
        for tree in TREES
        if (ROOT / tree).is_dir()
        for path in sorted((ROOT / tree).rglob("*.py"))
        if ".venv" not in path.parts
        for line in _sqlite_connects_used_as_context(path.read_text(encoding="utf-8"))
    ]
    assert found == [], "use `with closing(sqlite3.connect(...)) as conn` (see the module docstring):\n" + "\n".join(
        found
    )
