"""The tool loop: one run = generate → execute the tool calls → feed the results back → repeat.

``controller``
    :class:`LoopController`, one per run, and :class:`LoopConfig`, one per agent.
``result``
    :class:`RunResult`, what a run comes back as.
``nudges``
    small, replaceable policies that add a note to a tool result (batching, repeats, acknowledgments).
``json_transport``
    tools for models without native tool calling: the contract in the system prompt, the reply parser,
    the stream filter that hides the JSON blocks.
``thinking``
    ``<think>`` blocks: what counts as a think-only step, and the stream filter that strips them.
``context_budget``
    trimming old tool results so a request stays under a size.

The rules are in ``docs/loop.md``.
"""

from __future__ import annotations

from .controller import LoopConfig, LoopController
from .result import RunResult

__all__ = ["LoopConfig", "LoopController", "RunResult"]
