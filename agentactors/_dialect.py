"""What SQLite and PostgreSQL spell differently, for the statements the stores and journals share.

The SQLite and PostgreSQL session stores (:mod:`agentactors.sessions._sql`) and journals
(:mod:`agentactors.journal._sql`) keep the same tables and run the same statements; what differs is the
dialect.  So each statement is written once, with ``:name`` parameters and ``:now`` for the clock, and each
database brings a :class:`Dialect` (:data:`agentactors._sqlite.DIALECT`, :data:`agentactors._postgres.DIALECT`):

* ``:now`` is the database's clock where there is one to share (PostgreSQL's ``clock_timestamp()``: hosts'
  clocks may disagree, the server's is one), else this process's (SQLite: one machine), passed as the parameter
  ``now`` (:meth:`Dialect.params` adds it; a dialect that does not use it ignores it);
* a read that must lock the row it checks ends with ``row_lock``: PostgreSQL's ``FOR UPDATE``, nothing in SQLite,
  whose writing transaction (``BEGIN IMMEDIATE``) holds the whole database's write lock from its start;
* the transactions: several writing statements, one (SQLite takes its write lock first; PostgreSQL runs it
  alone, in autocommit: atomic by itself, one round trip), and a snapshot that several reads see alike.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

import attrs

__all__ = ["Dialect"]


@attrs.frozen
class Dialect:
    """One database's spelling of the shared statements (see the module docstring).

    :param sql: a shared statement (``:name`` parameters, ``:now`` the clock) in the database's SQL.
    :param row_lock: what a ``SELECT`` ends with to lock the rows it reads until its transaction ends.
    :param transaction: a context running several statements as one transaction that writes.
    :param single: the context of one writing statement.
    :param snapshot: a context in which several reads see one commit.
    """

    sql: Callable[[str], str]
    row_lock: str
    transaction: Callable[[Any], AbstractContextManager[Any]]
    single: Callable[[Any], AbstractContextManager[Any]]
    snapshot: Callable[[Any], AbstractContextManager[Any]]

    @staticmethod
    def params(**values: Any) -> dict[str, Any]:
        """A statement's parameters, and ``now``: this process's clock, for a dialect that takes it as one."""
        return {**values, "now": time.time()}
