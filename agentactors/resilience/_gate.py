"""Send gates: a call a breaker admitted carries its permit down the stack, and a retry asks it before each resend.

A circuit breaker decides once per *call*; a retry below it may make several
*attempts* over seconds of backoff.  If other calls open the breaker meanwhile,
the retry must not send its next attempt to a vendor the breaker now declares
down.  So while a breaker's inner call runs, it pushes a :class:`SendGate` for
its permit onto a context variable, and :func:`refusal` — asked by
``with_retry`` before every attempt after the first — says whether any gate on
the way down has closed since the call was admitted.

A context variable (not an attribute of a decorator) because one decorated
provider is shared by many concurrent calls: each call's gates are its own, a
task it starts inherits them, and an actor ``ask`` carries them into the
handler along with the rest of the asker's context.  Gates nest: a retry under
two breakers stops when either one closes.

A fallback chain or a pool below a breaker asks :func:`refusal` before it moves
a call to its next member: that member's request is another one below the same
breaker.

A hedge below a breaker asks the gates too (:func:`hedgeable`): a breaker that
is not closed admitted this call as its probe, and a second copy would be a
second request to the vendor it is testing — or, sent elsewhere, would decide
the probe's outcome for it.

This module is private: the guarantee is documented on the decorators.
"""

from __future__ import annotations

import contextvars
from typing import Protocol

__all__ = ["SendGate", "enter", "hedgeable", "leave", "refusal"]


class SendGate(Protocol):
    """One admitted call's permit: may an attempt of it still be sent now?"""

    def refusal(self) -> str | None:
        """``None`` when an attempt may be sent now; else why not (for a note and an event)."""
        ...

    def hedgeable(self) -> bool:
        """Whether a second, concurrent copy of the call may be sent now (its breaker is closed or disabled)."""
        ...


_GATES: contextvars.ContextVar[tuple[SendGate, ...]] = contextvars.ContextVar("agentactors_send_gates", default=())


def enter(gate: SendGate) -> contextvars.Token[tuple[SendGate, ...]]:
    """Push ``gate`` for the code that runs until :func:`leave` is called with the returned token.

    :func:`leave` must run in the same context (the same task, and not across
    the ``yield`` of an async context manager whose exit may run elsewhere).
    """
    return _GATES.set((*_GATES.get(), gate))


def leave(token: contextvars.Token[tuple[SendGate, ...]]) -> None:
    """Pop the gate :func:`enter` pushed."""
    _GATES.reset(token)


def refusal() -> str | None:
    """Why the current call may not send another attempt (the outermost closed gate), or ``None``.

    With no breaker above the caller this is one context-variable lookup.
    """
    for gate in _GATES.get():
        why = gate.refusal()
        if why is not None:
            return why
    return None


def hedgeable() -> bool:
    """Whether every gate on the way down admits a second, concurrent copy of the current call (a hedge).

    With no breaker above the caller this is one context-variable lookup.
    """
    return all(gate.hedgeable() for gate in _GATES.get())
