"""Sessions: conversations held by virtual actors, and the stores that keep them (``docs/sessions.md``).

``session = rt.session(agent, key, store=SqliteStore("chat.db"))``; ``await session.send(prompt)``
runs one turn on the session's history and commits it.  The modules, one idea each:

* :mod:`.session` — :class:`AgentSession`, the handle (``send``, ``resolve``, ``history``);
* :mod:`.actor` — what a session's actor does with a turn: the commit rule, pauses, conflicts;
* :mod:`.registry` — activation on demand and deactivation when idle (one sweeper per runtime);
* :mod:`.spending` — what a session's turns cost, and the budgets they run under;
* :mod:`.turns` — :class:`~.turns.TurnAgent`, a session's agent with a hook around its calls (a served turn's
  stream);
* :mod:`.store` — the :class:`SessionStore` port and :class:`SessionRecord`;
* :mod:`.memory`, :mod:`.sqlite` and :mod:`.postgres` — :class:`MemoryStore`, :class:`SqliteStore` and
  :class:`PostgresStore` (the ``[postgres]`` extra; psycopg is imported when it first connects);
* :mod:`.format` and :mod:`.codec` — the stored JSON document, its format versions and migrations.
"""

import typing as _typing

from .._served import on_first_use
from .memory import MemoryStore
from .session import AgentSession, open_session
from .store import SessionRecord, SessionStore

__all__ = [
    "AgentSession", "MemoryStore", "PostgresStore", "SessionRecord", "SessionStore", "SqliteStore", "open_session",
]


if _typing.TYPE_CHECKING:
    from .postgres import PostgresStore
    from .sqlite import SqliteStore

# The stores over a database are served on first use (PEP 562): their drivers' modules (sqlite3, the socket and
# psycopg glue) are not imported by a program that keeps its sessions in memory (tests/unit/test_import_cost.py).
# Served through the package root, which imports the defining module and relabels the class as it relabels every
# name it exports (agentactors.X in reprs and tracebacks, whichever import reached it first).
_ON_FIRST_USE = {
    "PostgresStore": "agentactors",
    "SqliteStore": "agentactors",
}

__getattr__, __dir__ = on_first_use(globals(), _ON_FIRST_USE)
