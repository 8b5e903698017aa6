"""``MultiProvider``: the public base of a provider over several members (a fallback chain, a pool).

What such a provider shares, whatever it does per call: its members, a name made of theirs, the
primary's default model, the model each member calls, what a model can do through it (what every
member can do for the model it would call: any member may serve any call), the two reason-giving
questions asked of every member, and closing every member once.  Subclasses write ``complete`` and
``stream`` — the order they try members in, when a call moves — and may answer capabilities
differently (a fallback chain that skips incapable members needs only one capable member).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator
from typing import Any, ClassVar, Final, Self

import anyio
import anyio.lowlevel

from ..errors import ProviderError
from ..events import emit
from ..messages import LLMRequest, LLMResponse, ResponseFormat
from ..providers.port import (
    Capabilities,
    CapabilityMembersMixin,
    LLMProvider,
    StreamContext,
    capabilities_of,
    default_model_of,
    forced_tool_choice_refusal,
    name_of,
    response_format_refusal,
)
from ..settings import ModelSettings
from ._checks import check_name, check_provider
from .decorator import streaming_adapted

__all__ = ["MultiProvider"]


#: Seconds :meth:`MultiProvider.aclose` gives its members' closes, shielded from a cancellation of its caller.
CLOSE_TIMEOUT: Final = 10.0

class MultiProvider(CapabilityMembersMixin):
    """The base of a provider that serves each call with one of several ``members``.

    * :attr:`members`, in the order given; :attr:`name` is ``"<label>(a, b, ...)"`` from their names
      (:attr:`label` is the class's) unless a name is given; :attr:`default_model` is the first member's.
    * :meth:`model_for`: the model a member calls when asked for a model — its own default when it has
      one (equivalent deployments may name a model differently), else the one asked for.
    * :meth:`capabilities`: :meth:`Capabilities.common <agentactors.providers.port.Capabilities.common>`
      of the members' values, each for the model it would call, with streaming always yes (a member
      that cannot stream is adapted).  :meth:`member_capabilities` gives them one by one.
    * :meth:`response_format_refusal` / :meth:`forced_tool_choice_refusal`: the first member's reason
      (any member may serve any call), named ``member 'x': ...``.
    * :meth:`aclose` closes every member once, even if closing one fails; it is an async context manager.

    The members of the first protocol come from :meth:`capabilities`
    (:class:`~agentactors.providers.port.CapabilityMembersMixin`);
    :func:`~agentactors.resilience.describe_chain` follows :attr:`members`.

    :raises ValueError: no members.  A lone provider, or anything not an iterable of providers, is a ``TypeError``.
    :raises TypeError: a member that is not a provider instance with a callable ``complete`` (a provider
        class is refused); a ``name`` that is not a string.
    """

    #: The word the default name starts with: ``fallback(a, b)``, ``pool(a, b)``.
    label: ClassVar[str] = "multi"

    def __init__(self, members: Iterable[LLMProvider | Any], *, name: str | None = None) -> None:
        # Taken once, as a tuple: an iterator was emptied by the checks below and left a provider without members
        # (``members`` then ``()``, every call an IndexError); a lone provider, not iterable, a raw TypeError.
        if isinstance(members, str | bytes) or not isinstance(members, Iterable) or hasattr(members, "complete"):
            raise TypeError(f"{type(self).__name__} takes a sequence of providers, not {type(members).__name__}")
        members = tuple(members)
        if not members:
            raise ValueError(f"{type(self).__name__} needs at least one provider")
        for i, m in enumerate(members):
            check_provider(m, f"member {i}")
        check_name(name)
        self.members: tuple[Any, ...] = members
        self._name = name or f"{self.label}(" + ", ".join(name_of(m) for m in self.members) + ")"

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(repr(m) for m in self.members)})"

    # -- identity and capabilities ----------------------------------------------------------------

    @property
    def name(self) -> str:
        """``<label>(a, b, ...)`` from the members' names, unless a name was given."""
        return self._name

    @property
    def default_model(self) -> str | None:
        """The first member's default model."""
        return default_model_of(self.members[0])

    def model_for(self, index: int, requested: str | None) -> str | None:
        """The model member ``index`` calls when ``requested`` is asked for: its own default, else ``requested``."""
        model = default_model_of(self.members[index]) or requested
        return str(model) if model else None

    def member_models(self, requested: str | None) -> Iterator[tuple[Any, str | None]]:
        """Each member with the model it would call for ``requested``, in member order."""
        for i, member in enumerate(self.members):
            yield member, self.model_for(i, requested)

    def member_capabilities(self, model: str | None) -> list[Capabilities]:
        """Each member's :func:`~agentactors.providers.port.capabilities_of` for the model it would call."""
        return [capabilities_of(member, own) for member, own in self.member_models(model)]

    def capabilities(self, model: str | None) -> Capabilities:
        """What every member can do for the model it would call (streaming always: see the class)."""
        return streaming_adapted(Capabilities.common(self.member_capabilities(model)))

    def response_format_refusal(
        self, fmt: ResponseFormat, model: str | None, *, tools: bool = False, members: Collection[str] | None = None
    ) -> str | None:
        """The first member's reason not to carry ``fmt`` for the model it would call, or ``None``.

        ``members`` (names a fallback chain skipped) is ignored: any member may serve any call.
        """
        for member, own in self.member_models(model):
            reason = response_format_refusal(member, own, fmt, tools=tools)
            if reason is not None:
                return f"member {name_of(member)!r}: {reason}"
        return None

    def forced_tool_choice_refusal(self, model: str | None, settings: ModelSettings | None) -> str | None:
        """The first member's reason why ``settings`` rule out a forced choice for the model it would call."""
        for member, own in self.member_models(model):
            reason = forced_tool_choice_refusal(member, own, settings)
            if reason is not None:
                return f"member {name_of(member)!r}: {reason}"
        return None

    # -- calls and lifetime -----------------------------------------------------------------------

    async def complete(self, request: LLMRequest) -> LLMResponse:  # pragma: no cover - overridden
        """The call, served by one of the members: what a subclass writes.

        Cancellation: an override lets it through unchanged and tries no member after it.
        """
        raise NotImplementedError

    def shut_out(self, errors: list[ProviderError], to: str, why: str, *, event: str, label: str) -> ProviderError:
        """The last member's error, to raise unwrapped when a circuit breaker above forbids moving the call on to
        member ``to`` (``why``: the breaker's refusal).

        Its kind is the member's: a chain above moves on as after any failure of this one, and the breaker above,
        whose circuit changed state since it admitted the call, does not count it.  Noted (the members tried, why no
        further one was called) and recorded as ``event`` (``"fallback.exhausted"``, ``"pool.exhausted"``) with
        ``reason="circuit_open"`` and the ``detail``; ``label`` names this chain in the notes.
        """
        error = errors[-1]
        if len(errors) > 1:
            error.add_note(f"{label}: tried before: " + "; ".join(str(e) for e in errors[:-1]))
        error.add_note(f"{label}: not moved to {to!r}: {why} (no further member called)")
        emit(event, errors=tuple(errors), reason="circuit_open", detail=why)
        return error

    def stream(self, request: LLMRequest) -> StreamContext:  # pragma: no cover - overridden
        raise NotImplementedError

    async def aclose(self) -> None:
        """Close every member (each once), even if closing one fails; the first failure is raised.

        Cancellation: shielded and bounded — a caller cancelled before or during the close (``async with`` left
        by a cancellation) still closes every member, then the cancellation propagates.  The members' closes
        together get :data:`CLOSE_TIMEOUT` seconds: a member whose close hangs past it is left (with the members
        after it), rather than hold the caller.
        """
        first: BaseException | None = None
        seen: set[int] = set()
        # Shielded: a cancellation at the first member's checkpoint left every member after it open (its pool, its
        # connections) until garbage collection.
        with anyio.move_on_after(CLOSE_TIMEOUT, shield=True):
            for m in self.members:
                if id(m) in seen:
                    continue
                seen.add(id(m))
                try:
                    await m.aclose()
                except Exception as exc:
                    first = first or exc
        await anyio.lowlevel.checkpoint_if_cancelled()  # the caller's cancellation, now that every member is closed
        if first is not None:
            raise first

    async def __aenter__(self) -> Self:
        """``async with chain:`` — the chain itself.

        Cancellation: not a cancellation point (it awaits nothing).
        """
        return self

    async def __aexit__(self, *exc: object) -> None:
        """Leaving the block closes every member (:meth:`aclose`).

        Cancellation: as :meth:`aclose`: a block left by a cancellation still closes every member.
        """
        await self.aclose()
