"""Children that get Ctrl-C as a terminal program does, whoever started the suite.

A shell without job control starts a background command (``make test &``, a CI step run that way) with SIGINT
and SIGQUIT ignored, and an ignored signal stays ignored across ``exec``: a Python child then never turns
SIGINT into ``KeyboardInterrupt`` and a test that interrupts it waits for its timeout.  ``preexec_fn=
default_sigint`` gives the child the default disposition, which Python replaces with its own handler.
"""

from __future__ import annotations

import signal

__all__ = ["default_sigint"]


def default_sigint() -> None:
    """In the child, before ``exec``: SIGINT back to its default (Python then raises KeyboardInterrupt on it)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
