"""The GenAI semantic conventions this package follows (OpenTelemetry semantic conventions, GenAI, development).

Names are spelled here once.  Messages become the conventions' ``gen_ai.input.messages`` /
``gen_ai.output.messages`` JSON (role + parts: ``text``, ``tool_call``, ``tool_call_response``), recorded
only when the recorder was asked to capture content.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

OPERATION = "gen_ai.operation.name"
PROVIDER = "gen_ai.provider.name"
AGENT_NAME = "gen_ai.agent.name"
REQUEST_MODEL = "gen_ai.request.model"
REQUEST_MAX_TOKENS = "gen_ai.request.max_tokens"
REQUEST_TEMPERATURE = "gen_ai.request.temperature"
REQUEST_STOP = "gen_ai.request.stop_sequences"
REQUEST_STREAM = "gen_ai.request.stream"
RESPONSE_MODEL = "gen_ai.response.model"
RESPONSE_ID = "gen_ai.response.id"
FINISH_REASONS = "gen_ai.response.finish_reasons"
INPUT_TOKENS = "gen_ai.usage.input_tokens"
OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
CACHE_READ_TOKENS = "gen_ai.usage.cache_read.input_tokens"
CACHE_WRITE_TOKENS = "gen_ai.usage.cache_creation.input_tokens"
REASONING_TOKENS = "gen_ai.usage.reasoning.output_tokens"
INPUT_MESSAGES = "gen_ai.input.messages"
OUTPUT_MESSAGES = "gen_ai.output.messages"
TOOL_NAME = "gen_ai.tool.name"
TOOL_CALL_ID = "gen_ai.tool.call.id"
TOOL_TYPE = "gen_ai.tool.type"
TOKEN_TYPE = "gen_ai.token.type"
SERVER_ADDRESS = "server.address"
SERVER_PORT = "server.port"
ERROR_TYPE = "error.type"

TOKEN_USAGE = "gen_ai.client.token.usage"
OPERATION_DURATION = "gen_ai.client.operation.duration"
# The bucket boundaries the conventions give for the two histograms.
TOKEN_BUCKETS = (1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864)
DURATION_BUCKETS = (0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92)

# Ours (no convention covers them): the member of a chain that served, a run's id, a tool call's status.
SERVED_BY = "agentactors.served_by"
RUN_ID = "agentactors.run_id"
TOOL_STATUS = "agentactors.tool.status"
# A handoff (no convention covers one): a span event on the run's invoke_agent span, and the run's last
# agent on that span when it ended with another agent than it started with.  gen_ai.agent.name stays the
# agent invoked: the conventions want it at span creation (sampling) and the span's name is made of it.
HANDOFF_EVENT = "agentactors.handoff"
HANDOFF_FROM = "agentactors.handoff.from_agent"
HANDOFF_TO = "agentactors.handoff.to_agent"
FINAL_AGENT = "agentactors.final_agent"
HANDOFFS = "agentactors.agent.handoffs"
# What a model call (on its chat span) or a whole run (on invoke_agent, its delegated runs' included) cost in
# money (agentactors.pricing): left out when a call had no price — never a zero that was not spent.
COST_TOTAL = "agentactors.cost.total"
COST_INPUT = "agentactors.cost.input"
COST_OUTPUT = "agentactors.cost.output"
COST_CURRENCY = "agentactors.cost.currency"

# The package's wire names -> the conventions' well-known provider names.
_PROVIDERS = {"openai": "openai", "anthropic": "anthropic", "gemini": "gcp.gemini"}

# StopReason values -> the conventions' finish reasons (the output-messages schema's enum).
_FINISH = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_call",
    "max_tokens": "length",
    "content_filter": "content_filter",
}


def provider_name(wire: str | None, member: str | None) -> str:
    """The ``gen_ai.provider.name`` of a member: the convention's name for its wire, else its own name."""
    if wire is not None and wire in _PROVIDERS:
        return _PROVIDERS[wire]
    return member or "agentactors"


def finish_reason(stop_reason: Any) -> str:
    return _FINISH.get(str(stop_reason), str(stop_reason) if stop_reason else "stop")


def _parts(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    role = message.get("role")
    content = message.get("content") or ""
    if role == "tool":
        return [{"type": "tool_call_response", "id": message.get("tool_call_id"), "response": content}]
    if content:
        parts.append({"type": "text", "content": content})
    for call in message.get("tool_calls") or ():
        parts.append({"type": "tool_call", "id": call.get("id"), "name": call.get("name"),
                      "arguments": call.get("arguments")})
    return parts


def input_messages(messages: Iterable[Mapping[str, Any]]) -> str:
    """``gen_ai.input.messages`` as a JSON string (span attributes hold no structures)."""
    return json.dumps([{"role": m.get("role"), "parts": _parts(m)} for m in messages], ensure_ascii=False)


def output_messages(response: Mapping[str, Any]) -> str:
    """``gen_ai.output.messages``: the one choice a response holds."""
    message = {"role": "assistant", "content": response.get("content"), "tool_calls": response.get("tool_calls")}
    out = {"role": "assistant", "parts": _parts(message), "finish_reason": finish_reason(response.get("stop_reason"))}
    return json.dumps([out], ensure_ascii=False)


def cost_attributes(cost: Any) -> dict[str, Any]:
    """A cost (a :class:`~agentactors.pricing.Cost`, or its JSON form) as span attributes; ``{}`` for none."""
    if cost is None:
        return {}
    if not isinstance(cost, Mapping):
        cost = {k: getattr(cost, k, None) for k in ("input", "output", "total", "currency")}
    out: dict[str, Any] = {}
    for key, name in (("total", COST_TOTAL), ("input", COST_INPUT), ("output", COST_OUTPUT)):
        value = cost.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            out[name] = float(value)
    currency = cost.get("currency")
    if out and isinstance(currency, str):
        out[COST_CURRENCY] = currency
    return out
