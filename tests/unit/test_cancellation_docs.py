"""Every public blocking call documents its cancellation (trio's rule).

For every async callable the public API exports — a coroutine function, an async generator function, an
``@asynccontextmanager`` function, and the async methods of exported classes (``__aenter__``, ``__aexit__``,
``__anext__`` and an async ``__call__`` included) — the docstring :func:`inspect.getdoc` gives has a paragraph
starting ``Cancellation:``: what a cancelled caller leaves behind (kept, rolled back, closed).  ``getdoc`` follows a
class's bases, so a base class (or a protocol the class subclasses) may say it once for the implementations
without a docstring of their own.

The public API is the ``__all__`` of ``agentactors`` and of every public module under it: a module path with no
component starting with ``_`` (``agentactors.providers.http.anthropic``, not ``agentactors.journal._sql``).
Members a class inherits from outside ``agentactors`` (asyncio's loop under
:class:`~agentactors.testing.VirtualTimeLoop`) are the standard library's to document, not ours.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import pkgutil
from collections.abc import Callable
from types import ModuleType

import anyio
import attrs
import pytest

import agentactors
from agentactors import LLMRequest, Message, ScriptedProvider

# Dunder methods that are public blocking calls (``async with``, ``async for``, an ASGI app's call).
_DUNDERS = frozenset({"__aenter__", "__aexit__", "__anext__", "__aiter__", "__call__"})


@attrs.frozen
class _Callable:
    public_name: str  # how a user reaches it, e.g. "agentactors.SqliteJournal.claim"
    where: str  # where it is defined, "journal/_sql.py:206", to find it
    doc: str


def _public_modules() -> tuple[list[ModuleType], list[str]]:
    """``agentactors`` and every public module under it; and those whose extra is missing."""
    names = ["agentactors"]
    for info in pkgutil.walk_packages(agentactors.__path__, "agentactors."):
        parts = info.name.split(".")
        if not any(part.startswith("_") for part in parts[1:]):
            names.append(info.name)
    modules: list[ModuleType] = []
    missing_extras: list[str] = []
    for name in names:
        try:
            modules.append(importlib.import_module(name))
        except ModuleNotFoundError as exc:
            # Skipped only when a third-party extra really is not installed; any other import error fails.
            top = (exc.name or "").partition(".")[0]
            if not top or top == "agentactors" or importlib.util.find_spec(top) is not None:
                raise
            missing_extras.append(f"{name} (needs {top})")
    return modules, missing_extras


def _is_async(obj: object) -> bool:
    if not callable(obj):
        return False
    inner = inspect.unwrap(obj)
    return any(
        inspect.iscoroutinefunction(f) or inspect.isasyncgenfunction(f) for f in (obj, inner)
    )


def _ours(obj: object) -> bool:
    return str(getattr(obj, "__module__", "") or "").startswith("agentactors")


def _where(fn: Callable[..., object]) -> str:
    inner = inspect.unwrap(fn)
    try:
        path = inspect.getsourcefile(inner) or "?"
        line = inspect.getsourcelines(inner)[1]
    except (OSError, TypeError):
        return "?"
    return f"{path.rpartition('agentactors/')[2]}:{line}"


def _defining_class(cls: type, name: str) -> type | None:
    return next((klass for klass in cls.__mro__ if name in vars(klass)), None)


def _public_async_callables() -> list[_Callable]:
    """One entry per function object (a method shared by many exported classes is listed once)."""
    modules, _ = _public_modules()
    found: dict[object, _Callable] = {}
    for module in modules:
        for export in getattr(module, "__all__", ()):
            obj = getattr(module, export)
            public = f"{module.__name__}.{export}"
            if inspect.isclass(obj):
                if not _ours(obj):
                    continue
                for attr in dir(obj):
                    if attr.startswith("_") and attr not in _DUNDERS:
                        continue
                    owner = _defining_class(obj, attr)
                    if owner is None or not _ours(owner) or isinstance(vars(owner)[attr], property):
                        continue  # inherited from the standard library or a third party: theirs to document
                    member = getattr(obj, attr)
                    if _is_async(member):
                        key = (owner.__module__, owner.__qualname__, attr)
                        doc = inspect.getdoc(member) or ""
                        found.setdefault(key, _Callable(f"{public}.{attr}", _where(member), doc))
            elif _ours(obj) and _is_async(obj):
                key = (obj.__module__, obj.__qualname__, "")
                found.setdefault(key, _Callable(public, _where(obj), inspect.getdoc(obj) or ""))
    return sorted(found.values(), key=lambda c: c.public_name)


def _has_cancellation_paragraph(doc: str) -> bool:
    return any(paragraph.lstrip().startswith("Cancellation:") for paragraph in doc.split("\n\n"))


def test_every_public_async_callable_documents_its_cancellation() -> None:
    offenders = [c for c in _public_async_callables() if not _has_cancellation_paragraph(c.doc)]
    listing = "\n".join(f"  {c.public_name}  ({c.where})" for c in offenders)
    if offenders:
        pytest.fail(
            f"{len(offenders)} public async callables have no paragraph starting 'Cancellation:' in their "
            f"docstring (say what a cancelled caller leaves behind; an implementation without a docstring "
            f"inherits its protocol's):\n{listing}",
            pytrace=False,
        )


def test_the_walk_finds_the_public_api_and_only_ours() -> None:
    modules, missing_extras = _public_modules()
    assert not missing_extras, f"every extra is installed in the test environment: {missing_extras}"
    walked = {module.__name__ for module in modules}
    assert {"agentactors.providers.http.transport", "agentactors.ray.ledger", "agentactors.serve.agui"} <= walked
    assert not {name for name in walked if any(part.startswith("_") for part in name.split("."))}  # private: not API
    names = {c.public_name for c in _public_async_callables()}
    for expected in (
        "agentactors.Runtime.__aexit__",  # a dunder of a root export
        "agentactors.SqliteJournal.claim",  # inherited from a private base class
        "agentactors.journal.load_run",  # a subpackage's function
        "agentactors.testing.FakeVendor.wait_for",  # an optional subpackage
        "agentactors.ray.RayCluster.__aenter__",
        "agentactors.mcp.MCPServerHTTP.__aenter__",
        # a public module's, not only a package's: a deeper module and what its protocol declares
        "agentactors.providers.http.transport.Sender.send",
        "agentactors.providers.http.h11_transport.H11Sender.aclose",
        "agentactors.sessions.actor.SessionActor.turn",
        "agentactors.serve.openai.OpenAIApp.__call__",  # an ASGI app's call
    ):
        assert expected in names, expected
    # asyncio's own coroutine methods under the virtual-time loop are the standard library's.
    assert not any(name.startswith("agentactors.testing.VirtualTimeLoop.") for name in names)
    assert len(names) > 200


def test_a_paragraph_must_start_with_the_word() -> None:
    assert _has_cancellation_paragraph("Do it.\n\nCancellation: the write is not applied.")
    assert _has_cancellation_paragraph("Cancellation: as :meth:`LLMProvider.complete`.")
    assert not _has_cancellation_paragraph("Do it.  Cancellation: mid-paragraph is easy to miss.")
    assert not _has_cancellation_paragraph("Cancelled callers leave.")


# --- what a few of the paragraphs promise, checked ---------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.virtual_time
async def test_a_cancelled_scripted_call_has_used_its_item_up() -> None:
    """ScriptedProvider.complete: "the item is taken ... before anything is awaited, so a cancelled call has used it
    up" — a test that cancels a call and scripts the next answer relies on it."""
    provider = ScriptedProvider(["first", "second"], latency=1.0)
    request = LLMRequest(messages=(Message.user("hi"),))
    with anyio.move_on_after(0.5) as scope:
        await provider.complete(request)
    assert scope.cancelled_caught
    assert (provider.calls, provider.remaining) == (1, 1)
    assert (await provider.complete(request)).content == "second"


@pytest.mark.anyio
@pytest.mark.virtual_time
async def test_a_resolve_cancelled_after_its_claim_has_consumed_the_pause() -> None:
    """SessionActor.resolve: "once [the claim] started, the pause is consumed — a resume then cancelled commits
    nothing, the history stays what it was before the paused turn, and the decided calls are not offered again"."""
    from agentactors import Agent, Runtime, ToolCall
    from agentactors.errors import SessionConflictError
    from agentactors.tools.registry import tool

    refunds: list[int] = []
    resumed = anyio.Event()

    @tool(requires_approval=True)
    async def refund(amount: int) -> str:
        """Refund an amount."""
        refunds.append(amount)
        resumed.set()
        await anyio.sleep_forever()  # the resumed run is cancelled here
        return "refunded"

    provider = ScriptedProvider(["hi back", [ToolCall("c1", "refund", {"amount": 5})]])
    async with Runtime() as rt:
        session = rt.session(Agent(provider, tools=[refund]), "k")
        await session.send("hi")
        before = session.history
        assert (await session.send("refund please")).paused
        async with anyio.create_task_group() as tg:
            tg.start_soon(session.resolve, {"c1": True})
            await resumed.wait()
            tg.cancel_scope.cancel()
        assert refunds == [5]
        assert not session.paused and session.history == before and session.version == 3  # pause, then its claim
        with pytest.raises(SessionConflictError):
            await session.resolve({"c1": True})  # the decided call is not offered again
