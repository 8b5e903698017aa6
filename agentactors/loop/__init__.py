"""The tool loop: one run = generate → execute the tool calls → feed the results back → repeat.

``controller``
    :class:`LoopController`, one per run, whole when made: the run and its layers (generate → answer step |
    tool step).
``state``
    ``LoopState``, where one run stands (made with its controller), and the step API every kind of step
    uses on it.
``request``
    a step's request: the system message, then the conversation as the step sends it.
``recorded``
    ``run.started`` / ``run.finished`` around a run someone records.
``config``
    :class:`LoopConfig`, one per agent: what a run takes from it, and the request skeletons built from it.
``output_steps``
    a typed run's requests and steps (its answer checked, its output calls), called with the run's state.
``streamed``
    the stream path of a model call (answer text delivered as it arrives).
``call_ids``
    the call-id rule: every call of a run has an id of its own.
``lineage``, ``seats``, ``pause``
    runs started by runs; the agent answering changed inside a run; a run paused for approval.
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

from .config import LoopConfig
from .controller import LoopController
from .result import RunResult

__all__ = ["LoopConfig", "LoopController", "RunResult"]
