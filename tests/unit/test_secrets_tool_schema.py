"""A credential as a tool's schema ``default`` (or ``examples``) never reaches the vendor, an event or a record.

A tool's schema goes to the model's vendor with every request, and into every ``llm.request`` event and
JSONL record.  A default that holds a credential is left out of it — dropped, not masked: a model shown
``"default": "[REDACTED]"`` may send that text back as the value — and the function still receives its own
default when the model omits the argument.  The leaks these close: a secret registered *after* the tool was
built (a provider made later, with the key a tool's default also holds) stayed in the spec every request
carried; a dataclass field's default was checked once per class (cached), so a tool built later kept it; a
pydantic model's defaults and an explicit :class:`ToolSpec`'s were never checked at all.
"""

from __future__ import annotations

import dataclasses
import json
import secrets
from pathlib import Path
from typing import Annotated, Any

import pytest
from pydantic import BaseModel, Field

from agentactors import Agent, InMemoryRecorder, JsonlRecorder, OpenAIProvider, Runtime, tool
from agentactors.events import to_jsonable
from agentactors.messages import ToolSpec
from agentactors.redaction import register_secret
from agentactors.testing import FakeVendor
from agentactors.tools import Tool, schema_for

pytestmark = pytest.mark.anyio


def canary(label: str) -> str:
    """A secret never seen before (not key-shaped: only registration can mask it)."""
    return f"cny{label}{secrets.token_hex(8)}"


def shown(schema: Any) -> str:
    return json.dumps(schema, ensure_ascii=False)


async def test_a_secret_registered_after_the_tool_leaves_every_request_and_record(tmp_path: Path) -> None:
    secret, key = canary("late"), canary("key")

    @tool
    def lookup(city: str, region: str = secret) -> str:
        """Look a city up."""
        return f"{city}@{region == secret}"

    assert lookup.spec.parameters["properties"]["region"]["default"] == secret  # nobody said it was one yet
    memory, jsonl = InMemoryRecorder(), tmp_path / "events.jsonl"
    async with FakeVendor() as fv:
        fv.auto_tools = True  # the fake model calls the tool once (no arguments but the required), then answers
        provider = OpenAIProvider("gpt-4o-mini", api_key=key, base_url=fv.openai_base_url)
        agent = Agent(provider, tools=[lookup], nudges=False)  # its requests' specs are made now, before...
        register_secret(secret)  # ...the secret is known (a provider made later, holding the same key)
        recorder = JsonlRecorder(jsonl)
        async with Runtime(recorders=[memory, recorder]) as rt:
            result = await agent.run("where?", runtime=rt)
        recorder.close()
        await provider.aclose()
        bodies = [shown(r.body) for r in fv.requests]
    assert result.error is None and bodies
    assert any('"region"' in body for body in bodies), "the tool was offered"
    seen = [*bodies, jsonl.read_text(), *(shown(to_jsonable(e.data)) for e in memory.events)]
    seen += [shown(lookup.spec.parameters), lookup.fix_text()]
    assert not [text for text in seen if secret in text]
    assert "region" in lookup.spec.parameters["properties"] and "region" not in lookup.spec.required
    # The function still gets its own default when the model leaves the argument out.
    args, kwargs = lookup.prepare({"city": "Oslo"}, None)
    assert lookup(*args, **kwargs) == "Oslo@True"


FIELD_SECRET = canary("field")


@dataclasses.dataclass
class Settings:
    token: str = FIELD_SECRET
    depth: int = 2


def test_a_dataclass_default_is_checked_each_time_a_schema_is_made() -> None:
    secret = FIELD_SECRET

    @tool
    def before(settings: Settings) -> str:
        return ""

    register_secret(secret)

    @tool
    def after(settings: Settings) -> str:
        return ""

    for t in (before, after):
        field = t.spec.parameters["properties"]["settings"]["properties"]
        assert "default" not in field["token"] and field["depth"]["default"] == 2
    assert secret not in shown(schema_for(Settings))


class Connection(BaseModel):
    endpoint: str = "https://api.example.com"
    api_key: str = "sk-proj-abcdefghijklmnopqrstuvwxyz"  # key-shaped: masked though nobody registered it
    label: Annotated[str, Field(examples=["main", "sk-proj-abcdefghijklmnopqrstuvwxyz"])] = "main"


def test_a_pydantic_models_defaults_and_examples_hold_no_credential() -> None:
    @tool
    def connect(connection: Connection) -> str:
        return ""

    props = connect.spec.parameters["properties"]["connection"]["properties"]
    assert "sk-proj" not in shown(connect.spec.parameters)
    assert "default" not in props["api_key"] and props["endpoint"]["default"] == "https://api.example.com"
    assert props["label"]["examples"] == ["main"] and props["label"]["default"] == "main"
    assert "sk-proj" not in shown(schema_for(Connection))


def test_an_explicit_spec_is_kept_as_given_unless_it_shows_a_credential() -> None:
    secret = canary("spec")
    register_secret(secret)
    clean = ToolSpec("clean", "", {"type": "object", "properties": {"n": {"type": "integer", "default": 3}}})
    dirty_schema = {
        "type": "object",
        "properties": {
            "default": {"type": "string", "default": secret},  # a property *named* default is kept
            "mode": {"anyOf": [{"type": "string", "examples": [secret, "fast"]}, {"type": "null"}]},
        },
    }
    dirty = ToolSpec("dirty", "", dirty_schema)

    def impl(**kwargs: Any) -> str:
        return ""

    assert Tool.from_spec(clean, impl).spec is clean
    built = Tool.from_spec(dirty, impl)
    assert secret not in shown(built.spec.parameters)
    props = built.spec.parameters["properties"]
    assert props["default"] == {"type": "string"}
    assert props["mode"]["anyOf"][0] == {"type": "string", "examples": ["fast"]}
    assert secret in shown(dirty_schema), "the caller's own dict is not changed"


def test_a_late_secret_leaves_an_explicit_specs_tool_too() -> None:
    secret = canary("latespec")
    spec = ToolSpec("s", "", {"type": "object", "properties": {"k": {"type": "string", "default": secret}}})

    def impl(k: str = secret) -> str:
        return k

    t = Tool.from_spec(spec, impl)
    offered = t.spec  # what an agent's requests hold from now on
    register_secret(secret)
    assert secret not in shown(offered.parameters) and secret not in shown(t.spec.parameters)
    assert offered.parameters["properties"]["k"] == {"type": "string"}
