"""Leases on runs: which journal object runs a run, until when, and whether a holder is gone.

Several processes (hosts) may share one journal and call ``rt.recover()`` at once — each replica of a service
on its start.  Without leases each would finish every unfinished run, running its tools again.  So every run a
journal object runs, live or recovered, is *leased* to it: the run's row carries the object's owner id and an
expiry.  A :class:`Keeper` thread renews the expiry of all the runs its journal holds while the process lives
(a thread, not a task: the journal owns no task group, and a busy or blocked event loop must not lose a lease
its process still holds); every commit of a run also checks — and renews — its lease, so an owner whose lease
was taken over learns it at its next commit (:class:`~agentactors.journal.LeaseLostError`) and goes no further.

A lease is free when it expired, or when its holder is a process of this machine — same host name and same PID
namespace, read from ``/proc/self/ns/pid`` — that no longer exists: the usual case of a crash and a restart
recovers at once instead of waiting out the expiry.  Anywhere else (another host, another container, no
``/proc``) only the expiry frees a lease: waiting is safe; taking a live holder's run is not.

A holder naming *this* process's PID is a live holder only while a journal object of this process has that owner
id (:func:`new_owner` registers each; the nonce is per object).  Any other is gone: a journal object collected
since (nothing can run through it any more), or an earlier process that had this PID — a container restarted
keeps its host name, very often its PIDs (1, or 7 under an init) and its PID namespace's number (the kernel gives the
lowest free number out again), and its crashed predecessor's runs must be recovered at once, not after their
leases expired.  A journal object of this process that was closed but still exists keeps its runs until their
leases expire: one of its runs may still be running (its commits renew its lease).
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import uuid
import weakref
from collections.abc import Callable
from typing import Final

__all__ = ["Keeper", "check_lease", "is_free", "new_owner"]

log = logging.getLogger("agentactors.journal")

_SEP: Final = "|"

#: This process's journal objects by owner id, while they exist (see the module): the only live holders of a lease
#: naming this process's PID.  Read from worker threads (a claim), written on the event loop's: under a lock.
_LIVE: Final[weakref.WeakValueDictionary[str, object]] = weakref.WeakValueDictionary()
_LIVE_LOCK: Final = threading.Lock()


def check_lease(lease: float) -> float:
    """``lease`` if it is a finite number of seconds >= 1.  :raises ValueError: not."""
    if isinstance(lease, bool) or not isinstance(lease, int | float) or not 1.0 <= lease < float("inf"):
        raise ValueError(f"lease must be a finite number of seconds >= 1, not {lease!r}")
    return float(lease)


def _pid_namespace() -> str:
    try:
        return os.readlink("/proc/self/ns/pid")
    except OSError:
        return ""


def new_owner(holder: object) -> str:
    """A new owner id for the journal object ``holder``: ``host|pid namespace|pid|nonce`` (unique per journal
    object), registered as one of this process's live holders for as long as ``holder`` exists."""
    host = socket.gethostname().replace(_SEP, "_")
    owner = _SEP.join((host, _pid_namespace(), str(os.getpid()), uuid.uuid4().hex[:12]))
    with _LIVE_LOCK:
        _LIVE[owner] = holder
    return owner


def _gone(owner: str) -> bool:
    """Whether ``owner`` is a process of this machine's PID namespace that no longer exists."""
    parts = owner.split(_SEP)
    if len(parts) != 4:
        return False
    host, namespace, pid, _ = parts
    here = _pid_namespace()
    if not here or namespace != here or host != socket.gethostname().replace(_SEP, "_") or not pid.isdigit():
        return False
    if int(pid) == os.getpid():
        # Ours only while a journal object of this process has it; any other is an earlier process that had this
        # PID (a container restarted), or a journal object collected since (see the module).
        with _LIVE_LOCK:
            return owner not in _LIVE
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except OSError:  # EPERM: it exists (another user's)
        return False
    return False


def is_free(owner: str | None, expired: bool, me: str) -> bool:
    """Whether a run leased to ``owner`` (``None``: never leased) may be taken by ``me``."""
    return owner is None or owner == me or expired or _gone(owner)


class Keeper:
    """A daemon thread calling ``renew()`` every ``interval`` seconds until :meth:`stop` (see the module), or until
    ``renew()`` returns ``False``: its journal is gone (it holds it weakly), so nothing is left to renew."""

    __slots__ = ("_stop", "_thread", "interval", "renew")

    def __init__(self, renew: Callable[[], bool], interval: float) -> None:
        self.renew = renew
        self.interval = interval
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Start the thread if it is not running (idempotent)."""
        if self._thread is not None and self._thread.is_alive():
            return
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(self._stop,), name="agentactors-lease", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop the thread, waiting for a renewal in progress to end."""
        thread, self._thread = self._thread, None
        self._stop.set()
        if thread is not None and thread is not threading.current_thread():
            thread.join()

    def _run(self, stop: threading.Event) -> None:
        while not stop.wait(self.interval):
            try:
                if not self.renew():
                    return
            except Exception as exc:  # the database may be down a moment: the next renewal tries again
                log.warning("could not renew the journal's leases: %s", type(exc).__name__)
