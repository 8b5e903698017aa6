"""What the journal tests share: :data:`Make`, the type of the ``make`` fixture (``tests/unit/journal/conftest.py``)."""

from __future__ import annotations

from collections.abc import Callable

from agentactors.journal import JournalStore

__all__ = ["Make"]

#: A factory of journal objects on one database: each call a new object (a new connection, as another process or a
#: restart would make).
Make = Callable[[], JournalStore]
