"""A credential put in ``vendor_options`` / ``ModelSettings.extra`` never reaches an event record.

``llm.request`` carries the step's whole request, and a run's settings may travel in events too.  Vendor
options are configuration, where a user may put a header value or a token (docs/settings.md warns against
it); a registered secret there, or a key-shaped one, is masked in every record — the JSONL file and
``event_to_dict`` — while the rest of the options stays readable.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentactors import Agent, InMemoryRecorder, JsonlRecorder, ModelSettings, Runtime, ScriptedProvider
from agentactors.events import event_to_dict
from agentactors.redaction import register_secret

pytestmark = pytest.mark.anyio

REGISTERED = "opt-TOKEN-3c2b1a0f9e8d7c6b5a49"  # not key-shaped: registration alone masks it
KEY_SHAPED = "sk-proj-" + "Zq9" * 16


async def test_a_credential_in_vendor_options_is_masked_in_every_record(tmp_path: Path) -> None:
    register_secret(REGISTERED)
    settings = ModelSettings(extra={"openai": {"user": "alice", "metadata": {"token": REGISTERED}, "k": KEY_SHAPED}})
    agent = Agent(ScriptedProvider(["hi"]), settings=settings)
    memory = InMemoryRecorder()
    path = tmp_path / "run.jsonl"
    with JsonlRecorder(path) as jsonl:
        async with Runtime(recorders=[memory, jsonl]):
            result = await agent.run("hello")
    assert result.ok
    text = path.read_text()
    dicts = json.dumps([event_to_dict(e) for e in memory.events])
    for record in (text, dicts):
        assert "llm.request" in record
        assert REGISTERED not in record and KEY_SHAPED not in record
        assert "alice" in record  # the rest of the options stays readable
