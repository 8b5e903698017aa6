"""A secret registered *after* an agent's output type was analysed leaves every schema the output sends.

A typed output's schema goes to the vendor with every request — as the output tools' parameters, as the native
response format, as the JSON Schema written into the system prompt (prompted) — and into every ``llm.request``
event and record.  It is cleaned of credentials when built (``schema_for``), but an output type whose field
defaults to a value a provider registers later (the provider made after the agent, holding the same key) kept
it: every request went on carrying it.  Both backends; the wire body asserted on the FakeVendor.
"""

from __future__ import annotations

import dataclasses
import json
import secrets
from pathlib import Path
from typing import Any

import pydantic
import pytest

from agentactors import (
    Agent,
    InMemoryRecorder,
    JsonlRecorder,
    NativeOutput,
    OpenAIProvider,
    PromptedOutput,
    Runtime,
    ScriptedProvider,
    ToolCall,
    ToolOutput,
)
from agentactors.events import to_jsonable
from agentactors.redaction import register_secret
from agentactors.testing import FakeReply, FakeVendor

pytestmark = pytest.mark.anyio


def canary(label: str) -> str:
    """A secret never seen before (not key-shaped: only registration can mask it)."""
    return f"cny{label}{secrets.token_hex(8)}"


def shown(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _classes(secret: str) -> tuple[type, type]:
    @dataclasses.dataclass
    class Lookup:
        city: str
        region: str = secret

    class Place(pydantic.BaseModel):
        city: str
        region: str = pydantic.Field(default=secret, examples=[secret, "north"])

    return Lookup, Place


def _texts(provider: ScriptedProvider, recorder: InMemoryRecorder) -> list[str]:
    out: list[str] = []
    for request in provider.requests:
        out += [shown(t.parameters) for t in request.tools]
        if request.response_format is not None:
            out.append(shown(request.response_format.schema))
        out += [m.content for m in request.messages if isinstance(m.content, str)]
    out += [shown(to_jsonable(e.data)) for e in recorder.events]
    return out


@pytest.mark.parametrize("strategy", ["tool", "native", "prompted", "auto"])
@pytest.mark.parametrize("which", [0, 1])
async def test_a_secret_registered_after_the_agent_leaves_its_output_schema(strategy: str, which: int) -> None:
    secret = canary(f"{strategy}{which}")
    tp = _classes(secret)[which]
    wrapped: Any = {"tool": ToolOutput, "native": NativeOutput, "prompted": PromptedOutput}.get(strategy, lambda t: t)
    answer = {"city": "Oslo"}
    tool_call = strategy in ("tool", "auto")
    script: list[Any] = [ToolCall("c1", "final_result", answer)] if tool_call else [json.dumps(answer)]
    provider = ScriptedProvider(script)
    agent = Agent(provider, output_type=wrapped(tp))  # the output schema is made now, before...
    register_secret(secret)  # ...the secret is known
    recorder = InMemoryRecorder()
    async with Runtime(recorders=[recorder]) as rt:
        result = await agent.run("where?", runtime=rt)
    assert result.error is None, result.error
    assert result.output.city == "Oslo" and result.output.region == secret  # the type's own default still applies
    texts = _texts(provider, recorder)
    assert any("region" in t for t in texts), "the schema was sent"
    assert not [t for t in texts if secret in t]


async def test_a_late_secret_leaves_the_native_format_on_the_wire_and_in_the_records(tmp_path: Path) -> None:
    secret, key = canary("wire"), canary("key")
    Lookup, _ = _classes(secret)
    memory, jsonl = InMemoryRecorder(), tmp_path / "events.jsonl"
    async with FakeVendor() as fv:
        fv.script(FakeReply(text='{"city": "Oslo"}'))
        provider = OpenAIProvider(
            "gpt-4o-mini", api_key=key, base_url=fv.openai_base_url, carries_response_format=True
        )
        agent = Agent(provider, output_type=NativeOutput(Lookup))
        register_secret(secret)
        recorder = JsonlRecorder(jsonl)
        async with Runtime(recorders=[memory, recorder]) as rt:
            result = await agent.run("where?", runtime=rt)
        recorder.close()
        await provider.aclose()
        bodies = [shown(r.body) for r in fv.requests]
    assert result.error is None, result.error
    assert result.output == Lookup("Oslo", secret)
    assert bodies and all('"region"' in body for body in bodies), "the format was sent"
    seen = [*bodies, jsonl.read_text(), *(shown(to_jsonable(e.data)) for e in memory.events)]
    assert not [text for text in seen if secret in text]


@dataclasses.dataclass
class Dog:
    name: str


@pytest.mark.parametrize("strategy", ["tool", "native", "prompted"])
async def test_a_late_secret_leaves_a_union_outputs_member_schemas(strategy: str) -> None:
    secret = canary(f"union{strategy}")
    Lookup, _ = _classes(secret)
    union: Any = Lookup | Dog
    wrapped: Any = {"tool": ToolOutput, "native": NativeOutput, "prompted": PromptedOutput}[strategy]
    answer = {"city": "Oslo"}
    script: list[Any] = (
        [ToolCall("c1", "final_result_Lookup", answer)] if strategy == "tool" else [json.dumps({"response": answer})]
    )
    provider = ScriptedProvider(script)
    agent = Agent(provider, output_type=wrapped(union))
    register_secret(secret)
    recorder = InMemoryRecorder()
    async with Runtime(recorders=[recorder]) as rt:
        result = await agent.run("where?", runtime=rt)
    assert result.error is None, result.error
    assert result.output == Lookup("Oslo", secret)
    texts = _texts(provider, recorder)
    assert any("region" in t for t in texts) and not [t for t in texts if secret in t]


@pytest.mark.parametrize("strategy", ["tool", "native", "prompted"])
async def test_a_key_shaped_default_never_leaves_at_all(strategy: str) -> None:
    key = "sk-" + secrets.token_hex(16)

    @dataclasses.dataclass
    class Account:
        user: str
        api_key: str = key

    wrapped: Any = {"tool": ToolOutput, "native": NativeOutput, "prompted": PromptedOutput}[strategy]
    answer = {"user": "ada"}
    script: list[Any] = [ToolCall("c1", "final_result", answer)] if strategy == "tool" else [json.dumps(answer)]
    provider = ScriptedProvider(script)
    recorder = InMemoryRecorder()
    async with Runtime(recorders=[recorder]) as rt:
        result = await Agent(provider, output_type=wrapped(Account)).run("who?", runtime=rt)
    assert result.output == Account("ada", key)
    texts = _texts(provider, recorder)
    assert any("api_key" in t for t in texts) and not [t for t in texts if key in t]
