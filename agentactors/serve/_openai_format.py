"""A Chat Completions ``response_format`` honoured: the served agent, for that run, answers the client's schema.

``{"type": "json_schema", ...}`` and ``{"type": "json_object"}`` (read by
:func:`~._openai_input.read_chat_request`, bounds and all) become the run's output type: the agent, evolved for
that schema (once: kept for the next request with the same one, a bounded number per agent), answers a value
its loop validated against the client's schema (``docs/output.md``: auto asks for it by the output tool, the
vendor's response format or the prompt, per model, and re-asks an answer that does not validate).  A client
reads JSON of that schema or an error — never free text where it asked for JSON.

The type is a class read as a pydantic model is (:func:`agentactors.tools.schema.is_pydantic_model`: by its
``model_json_schema`` and ``model_validate``, pydantic never imported): its schema is the client's, its
validation the identity — the loop's schema check is the whole validation, and the value is the JSON it read.
"""

from __future__ import annotations

import json
import re
import threading
import weakref
from collections import OrderedDict
from typing import Any, ClassVar

import attrs

from ..agent.core import Agent
from ..errors import redact
from ._openai_input import BadRequest, JsonFormat

__all__ = ["for_format"]

#: How the output's validator names the tool it checks: the output tool, which is no concern of the client's.
_OUTPUT_TOOL = re.compile(r"^tool '[^']*': its parameters are ")

#: The agents answering a client's schema, per served agent (held weakly: they go with it), by (name, schema):
#: made once, not per request — an agent made per request builds its output anew, and binds anew in the runtime
#: (its own tool executor, spawned, then stopped once the agent is dropped).  At most ``_KEPT`` per served agent,
#: the least recently used dropped first: a client sending a new schema each time keeps no more.
_evolved: weakref.WeakKeyDictionary[Agent[Any], OrderedDict[str, Agent[Any]]] = weakref.WeakKeyDictionary()
_evolved_lock = threading.Lock()  # (an app may serve from more than one thread's loop)
_KEPT = 16


def for_format(agent: Agent[Any], wanted: JsonFormat) -> Agent[Any]:
    """``agent`` answering ``wanted``: the same configuration, with the client's schema as its output (made once
    per agent and schema: see ``_evolved``).

    Every check the agent makes of an output type is made here, before any run: a schema the output's validator
    cannot compile (not Draft 2020-12, a regex no bounded matcher takes) is the client's 400.

    :raises BadRequest: ``code`` ``unsupported_response_format`` when this agent cannot answer in the client's
        shape — it has an output type (or an output validator) of its own, whose answers are not the client's
        schema, or it hands off to agents whose answers are theirs; else a schema no output can be built from.
    """
    reason = _cannot_honour(agent)
    if reason is not None:
        raise BadRequest(
            f"this model cannot answer in a JSON response_format: {reason}; send response_format 'text' or none",
            "response_format",
            code="unsupported_response_format",
        )
    # Equal schemas are one, however their keys are ordered.  (Read from JSON, a schema dumps; one that would not
    # is only not kept.)
    try:
        key: str | None = json.dumps([wanted.name, wanted.schema], sort_keys=True, separators=(",", ":"))
    except (TypeError, ValueError):
        key = None
    with _evolved_lock:
        kept = _evolved.get(agent)
        if kept is not None and key is not None:
            found = kept.get(key)
            if found is not None:
                kept.move_to_end(key)
                return found
    answer_type = type(wanted.name, (_ClientSchema,), {"schema": wanted.schema, "__slots__": ()})
    try:
        evolved = attrs.evolve(agent, output_type=answer_type)
    except (TypeError, ValueError) as exc:  # the schema (the only change): the client's to fix
        detail = _OUTPUT_TOOL.sub("", redact(str(exc)).replace(f"output_type {wanted.name}: ", "", 1))[:300]
        raise BadRequest(
            f"the response_format's schema cannot be answered: {detail}", wanted.param, code="invalid_json_schema"
        ) from None
    if key is None:
        return evolved
    with _evolved_lock:
        kept = _evolved.get(agent)
        if kept is None:
            kept = _evolved[agent] = OrderedDict()
        kept[key] = evolved
        if len(kept) > _KEPT:
            kept.popitem(last=False)
    return evolved


def _cannot_honour(agent: Agent[Any]) -> str | None:
    if agent.output_type is not str:
        return "it answers with a typed output of its own, as JSON of its own schema"
    if agent.output_validator is not None:
        return "an output validator of its own checks its answers, as text"
    if agent.handoffs:
        return "it may hand the conversation to other agents, whose answers are theirs"
    return None


class _ClientSchema:
    """An output type whose schema is the client's (see the module's docstring): the loop validates the answer
    against it, and the value is the JSON it read."""

    __slots__ = ()
    schema: ClassVar[dict[str, Any]] = {}

    @classmethod
    def model_json_schema(cls) -> dict[str, Any]:
        return cls.schema

    @classmethod
    def model_validate(cls, value: Any) -> Any:
        return value
