"""Toolsets: sources of tools an agent asks for its tools when a run starts, not when it is built.

A plain ``@tool`` is known when the agent is constructed.  A :class:`Toolset`'s tools are not: an MCP
server's list needs a connection, and can change while the connection lives.  So an agent given
``toolsets=[...]`` asks each toolset for its tools at the start of every run, with the
:class:`ToolsetHost` (the runtime) the run lives in; a toolset answers from what it holds and returns
the *same* sequence object for as long as its tools have not changed.  That identity is the whole
change protocol: :class:`ToolsetView` rebuilds an agent's tool table only when some toolset answers
with another object.

Lifecycle is the host's.  A toolset that holds a connection opens it at its first
:meth:`Toolset.list_tools` in a host and keeps it in ``host.service(key, build, cleanup=...)``: one per
host, shared by every run there, closed when the host (the runtime) exits.  A task that owns the
connection runs as ``host.spawn_task(..., background=True)``, so the runtime's drain does not wait for it.

The core knows no MCP: :mod:`agentactors.mcp` is one implementation of this protocol.
"""

from __future__ import annotations

import collections
import re
from collections.abc import Awaitable, Callable, Hashable, Mapping, Sequence
from typing import Any, Protocol, TypeVar, runtime_checkable

import anyio

from ..errors import AgentActorsError, redact
from .registry import Tool

__all__ = [
    "ToolNameClashError",
    "Toolset",
    "ToolsetError",
    "ToolsetHost",
    "ToolsetView",
    "check_toolsets",
    "merge_tools",
]

T = TypeVar("T")


class ToolsetHost(Protocol):
    """What a toolset may use of the runtime a run lives in (a :class:`~agentactors.Runtime` is one)."""

    def service(
        self, key: Hashable, build: Callable[[], T], *, cleanup: Callable[[T], Awaitable[object]] | None = None
    ) -> T:
        """The host's one value for ``key``, built on first use; ``cleanup(value)`` runs when the host exits."""
        ...

    def spawn_task(
        self, fn: Callable[..., Awaitable[Any]], *args: Any, name: str | None = None, background: bool = False
    ) -> None:
        """Run ``fn(*args)`` in the host's task group (``background``: not waited for when the host drains)."""
        ...

    def emit(self, type: str, /, **data: Any) -> None:
        """Emit an event to the current run's recorders, else to the host's."""
        ...


@runtime_checkable
class Toolset(Protocol):
    """A source of tools: ``Agent(..., toolsets=[toolset])``.

    ``name`` identifies the toolset in errors and events.  :meth:`list_tools` is awaited at the start of
    every run of an agent that has the toolset, so it must be cheap when nothing changed: it returns the
    same sequence object until its tools change (then a new one, which the agent picks up at its next run).
    """

    @property
    def name(self) -> str:
        """The toolset's name (in errors and events)."""
        ...

    async def list_tools(self, host: ToolsetHost) -> Sequence[Tool[Any, Any]]:
        """The toolset's tools now, for runs in ``host``.

        :raises Exception: the tools cannot be had (the agent reports it as a :class:`ToolsetError`).

        Cancellation: a cancelled caller stops waiting; what the toolset was opening for the host
        (a connection) is the host's, and the next caller finds it.
        """
        ...


class ToolsetError(AgentActorsError):
    """A toolset could not provide its tools (listing failed), so a run could not start with them."""


class ToolNameClashError(ToolsetError, ValueError):
    """Two tools of one agent share a name: any two of a plain tool, a delegation (``as_tool``), a
    handoff, an output tool (``final_result``), the built-in ``suggest_followups`` and a toolset's tool.

    The message names both sources.  Between the tools an agent is built with it is raised by ``Agent(...)``;
    with a toolset's, when a run starts (the toolset is listed then).  A ``tool_prefix`` on a toolset
    (``tool_prefix="github_"``) avoids it.
    """


def merge_tools(
    plain: Sequence[Tool[Any, Any]],
    listed: Sequence[tuple[str, Sequence[Tool[Any, Any]]]],
    owners: Mapping[str, str] | None = None,
) -> tuple[Tool[Any, Any], ...]:
    """The agent's tools: ``plain`` ones, then each toolset's (``(toolset name, its tools)``), in order.

    ``owners`` says who holds a name already, in words (``"the handoff to agent 'billing'"``): the
    agent's plain tools when it knows better than "a plain tool of the agent", and the names the loop
    answers itself (handoffs, output tools), which no toolset may take either.

    :raises ToolNameClashError: a name offered twice, naming both sources.
    """
    known = dict(owners or {})
    taken = {t.name: known.get(t.name, "a plain tool of the agent") for t in plain}
    taken.update((name, owner) for name, owner in known.items() if name not in taken)
    merged = list(plain)
    for toolset_name, tools in listed:
        for t in tools:
            owner = f"toolset {toolset_name!r}"
            clash = taken.get(t.name)
            if clash is not None:
                hint = "give one of the toolsets" if clash.startswith("toolset") else "give the toolset"
                raise ToolNameClashError(
                    f"two tools are named {t.name!r}: one from {clash}, one from {owner}; {hint} a tool_prefix "
                    f"(e.g. tool_prefix={_suggested_prefix(toolset_name)!r}) or filter one out"
                )
            taken[t.name] = owner
            merged.append(t)
    return tuple(merged)


def _suggested_prefix(toolset_name: str) -> str:
    """A ``tool_prefix`` made of a toolset's name that every check takes: letters, digits and ``_`` only (a ``.`` or
    ``-`` is allowed in a prefix, but some vendors refuse it in tool names), starting with a letter, at most 24
    characters — ``"127.0.0.1:39913"`` (an HTTP server named by its address) gives ``"tools_127_0_0_1_39913_"``."""
    words = re.findall(r"[A-Za-z0-9]+", toolset_name)
    stem = "_".join(words)[:20] or "tools"
    return f"{stem}_" if stem[0].isalpha() else f"tools_{stem}_"


class ToolsetView:
    """One agent's tools in one host: its plain tools plus what its toolsets list now.

    :meth:`refresh` asks every toolset (one after the other, in order) and says whether the combined
    tools changed since the last refresh; :attr:`tools` is the combined tuple.  Refreshes are serialised
    so that an older listing can never replace a newer one.
    """

    __slots__ = ("_listed", "_lock", "_owners", "_plain", "_toolsets", "tools")

    def __init__(
        self, plain: Sequence[Tool[Any, Any]], toolsets: Sequence[Toolset], owners: Mapping[str, str] | None = None
    ) -> None:
        self._plain = tuple(plain)
        self._toolsets = tuple(toolsets)
        self._owners = dict(owners or {})  # see merge_tools
        self._listed: tuple[Sequence[Tool[Any, Any]], ...] | None = None
        self._lock: anyio.Lock | None = None
        self.tools: tuple[Tool[Any, Any], ...] = self._plain

    async def refresh(self, host: ToolsetHost) -> bool:
        """List every toolset's tools; ``True`` when the combined tools changed (always, the first time).

        :raises ToolsetError: a toolset failed to list (its reason, redacted, in the message).
        :raises ToolNameClashError: the listings clash (see :func:`merge_tools`).

        Cancellation: a cancelled caller leaves at once; the view keeps what it had.
        """
        if self._lock is None:
            self._lock = anyio.Lock()  # made inside the event loop that uses it
        async with self._lock:
            listed: list[Sequence[Tool[Any, Any]]] = []
            for toolset in self._toolsets:
                try:
                    tools = await toolset.list_tools(host)
                except ToolsetError:
                    raise
                except Exception as exc:
                    reason = redact(f"{type(exc).__name__}: {exc}".strip())
                    raise ToolsetError(f"toolset {toolset.name!r} could not list its tools: {reason}") from exc
                if self._listed is None or tools is not self._listed[len(listed)]:  # a listing seen before passed
                    _check_listing(toolset.name, tools)
                listed.append(tools)
            previous = self._listed
            if previous is not None and all(a is b for a, b in zip(listed, previous, strict=True)):
                return False
            named = [(ts.name, tools) for ts, tools in zip(self._toolsets, listed, strict=True)]
            self.tools = merge_tools(self._plain, named, self._owners)
            self._listed = tuple(listed)
            return True


def _check_listing(name: str, tools: object) -> None:
    """A toolset's listing is a sequence of :class:`Tool` (what the protocol says), else a :class:`ToolsetError`
    naming the toolset and what it gave, by type: merged unchecked, ``None`` or a name where a tool belongs
    would fail deep in the library as an ``AttributeError`` no one could trace to the toolset.  A generator is
    refused too: read once, it would be empty at the next look, and its identity says nothing of a change.

    :raises ToolsetError: not a sequence (a str or a mapping is not one here), or an item that is no tool.
    """
    if not isinstance(tools, Sequence) or isinstance(tools, str | bytes | bytearray):
        raise ToolsetError(
            f"toolset {name!r} listed {type(tools).__name__} where a sequence of tools (a list or a tuple of "
            "Tool objects) was expected"
        )
    for item in tools:
        if not isinstance(item, Tool):
            raise ToolsetError(
                f"toolset {name!r} listed a {type(tools).__name__} holding {type(item).__name__} where a sequence "
                "of Tool objects was expected"
            )


def check_toolsets(value: Sequence[Any]) -> tuple[Toolset, ...]:
    """``value`` as a tuple of toolsets, with distinct names.

    :raises TypeError: something that is not a :class:`Toolset`.
    :raises ValueError: two toolsets share a name (their events and errors could not be told apart).
    """
    toolsets = tuple(value)
    for ts in toolsets:
        if not isinstance(ts, Toolset):
            raise TypeError(
                f"toolsets must be Toolset objects (a name and an async list_tools(host)), not {type(ts).__name__}"
            )
    counts = collections.Counter(ts.name for ts in toolsets)
    twice = sorted(name for name, n in counts.items() if n > 1)
    if twice:
        raise ValueError(f"two toolsets are named {twice[0]!r}: give each toolset its own name")
    return toolsets
