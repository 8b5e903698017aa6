"""Sessions: conversations held by virtual actors, and the stores that keep them (``docs/sessions.md``).

``session = rt.session(agent, key, store=SqliteStore("chat.db"))``; ``await session.send(prompt)``
runs one turn on the session's history and commits it.  The modules, one idea each:

* :mod:`.session` — :class:`AgentSession`, the handle (``send``, ``resolve``, ``history``);
* :mod:`.actor` — what a session's actor does with a turn: the commit rule, pauses, conflicts;
* :mod:`.registry` — activation on demand and deactivation when idle (one sweeper per runtime);
* :mod:`.spending` — what a session's turns cost, and the budgets they run under;
* :mod:`.turns` — :class:`~.turns.TurnAgent`, a session's agent with a hook around its calls (a turn's budgets,
  its listing for ``steer``, a served turn's stream);
* :mod:`.store` — the :class:`SessionStore` port and :class:`SessionRecord`;
* :mod:`.memory`, :mod:`.sqlite` and :mod:`.postgres` — :class:`MemoryStore`, :class:`SqliteStore` and
  :class:`PostgresStore` (the ``[postgres]`` extra; psycopg is imported when it first connects);
* :mod:`.format` and :mod:`.codec` — the stored JSON document, its format versions and migrations.
"""

from .memory import MemoryStore
from .postgres import PostgresStore
from .session import AgentSession, open_session
from .sqlite import SqliteStore
from .store import SessionRecord, SessionStore

__all__ = [
    "AgentSession", "MemoryStore", "PostgresStore", "SessionRecord", "SessionStore", "SqliteStore", "open_session",
]
