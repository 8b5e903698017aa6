"""Typed results: an agent's answer as a value of a declared type, validated, re-asked until it is.

``Agent(provider, output_type=T)`` makes ``RunResult[T].output`` a ``T``.  The modules, one idea each:

``spec``
    what a user writes: a bare type (auto) or :class:`ToolOutput` / :class:`NativeOutput` /
    :class:`PromptedOutput`; ``OutputT``, the type variable everything typed by the output is generic in.
``target``
    ``T`` analysed once: its members and schemas, and the check of a JSON answer (schema, then conversion).
``choice``
    auto's choice of a strategy for the model about to be called.
``config``
    an agent's output configuration, built once (``None`` for a plain ``str`` agent: it pays nothing).
``run``
    one run's state: each call's strategy, the verdict on each answer, the re-asks and their events.
``prompt`` / ``feedback`` / ``partial`` / ``context``
    the prompted instruction and JSON extraction; what the model reads when refused; partial values
    while JSON streams (jiter); the output-validator hook.

The rules — how auto picks, what each strategy costs — are in ``docs/output.md``.
"""

from __future__ import annotations

from .context import OutputContext
from .spec import NativeOutput, OutputT, PromptedOutput, Strategy, ToolOutput

__all__ = ["NativeOutput", "OutputContext", "OutputT", "PromptedOutput", "Strategy", "ToolOutput"]
