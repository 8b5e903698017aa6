"""Every example runs, on both backends, and does what it says."""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType

import pytest

from tests.support.paths import EXAMPLES

pytestmark = pytest.mark.anyio



def _load(name: str) -> ModuleType:
    path = EXAMPLES / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"examples_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


async def test_tool_agent(capsys: pytest.CaptureFixture[str]) -> None:
    result = await _load("tool_agent").main()
    assert result.content.endswith("Lisbon is 17.0 °C warmer.")
    assert [c.name for c in result.tool_calls] == ["weather", "weather", "difference"]
    assert result.steps == 3 and not result.bounded
    out = capsys.readouterr().out
    assert "Lisbon is 17.0 °C warmer." in out
    assert "example.difference" in out and "run.finished" in out


@pytest.mark.virtual_time
async def test_many_agents(capsys: pytest.CaptureFixture[str]) -> None:
    module = _load("many_agents")
    results = await module.main()
    assert len(results) == module.RUNS == 1000
    assert [i for i, r in enumerate(results) if r.generation_failed] == [13]
    assert all(r.content == f"{n} squared is {n * n}." for n, r in enumerate(results) if n != 13)
    assert "999 of 1000 runs answered" in capsys.readouterr().out


async def test_mcp_tools(capsys: pytest.CaptureFixture[str]) -> None:
    result = await _load("mcp_tools").main()
    assert result.content == "Lisbon's 21 degrees: 21 °C is 69.8 °F."
    assert [c.name for c in result.tool_calls] == ["units_convert"]
    out = capsys.readouterr().out
    assert "answer: Lisbon's 21 degrees: 21 °C is 69.8 °F." in out
    assert "mcp.tools_listed   units" in out and "tools.finished     units_convert ok" in out


async def test_settings_and_images(capsys: pytest.CaptureFixture[str]) -> None:
    from agentactors import UnsupportedContentError

    results = await _load("settings_and_images").main()
    assert [results[w].content for w in ("openai", "anthropic", "gemini")] == ["Yes: both say red."] * 3
    refused = results["refused"]
    assert refused.generation_failed and isinstance(refused.error, UnsupportedContentError)
    out = capsys.readouterr().out
    assert out.count("image image/png (69 bytes), document application/pdf (72 bytes)") == 3
    assert "'temperature': 0.7" in out and "dropped on anthropic: seed=7" in out
    assert "refused before sending: UnsupportedContentError" in out


def test_examples_have_a_main_and_run_it() -> None:
    for path in sorted(EXAMPLES.glob("*.py")):
        text = path.read_text()
        assert "async def main(" in text, path.name
        assert "anyio.run(main" in text, path.name


async def test_typed_results(capsys: pytest.CaptureFixture[str]) -> None:
    module = _load("typed_results")
    result = await module.main()
    assert isinstance(result.output, module.Triage)
    assert (result.output.action, result.output.priority, result.steps) == ("replace", 2, 2)
    out = capsys.readouterr().out
    assert "action: replace  priority: 2" in out
    assert "strategy: tool" in out
    assert 'refused attempt 1: - action: expected one of "refund", "replace", "escalate"' in out
    partials = [line for line in out.splitlines() if line.startswith("partial: ")]
    assert partials[-1] == "partial: escalate / 'A second crack means a bad batch.'"
    assert len(partials) == len(set(partials)), "no value is printed twice"


@pytest.mark.virtual_time
async def test_triage_handoffs(capsys: pytest.CaptureFixture[str]) -> None:
    module = _load("triage_handoffs")
    billing, tech = await module.main()
    assert (billing.agent, billing.handoffs) == ("billing", ("billing",))
    assert billing.output == "Invoice A-17 comes to 40.0 EUR."
    assert (tech.agent, tech.handoffs) == ("tech", ("tech",))
    assert tech.output == module.Ticket(component="router", action="restart")
    out = capsys.readouterr().out
    assert "triage -> billing: 'Invoice A-17 comes to 40.0 EUR.'" in out
    assert "2 handoffs recorded: triage->billing, triage->tech" in out


@pytest.mark.virtual_time
async def test_research_delegation(capsys: pytest.CaptureFixture[str]) -> None:
    result = await _load("research_delegation").main()
    (child,) = result.children
    assert child.agent == "searcher" and child.content.startswith("Found: ")
    assert result.usage.input_tokens == 150 + 200 + 60 + 90  # the parent's two steps and the child's two
    out = capsys.readouterr().out
    assert f"run.started   {child.run_id} (child of {result.run_id})" in out


async def test_resilient_chain_cloud(capsys: pytest.CaptureFixture[str]) -> None:
    lines = await _load("resilient_chain_cloud").main()
    first, second, stream = lines[:3]
    assert first == ("first:  'Azure: eu-west-1, where the errors began.' — served by azure-openai; "
                     "Bedrock's breaker is closed")
    assert second.startswith("second: 'Responses: eu-west-1, then us-east-1.' — served by openai-responses")
    assert second.endswith("Bedrock's breaker is open")
    assert stream == "stream: 'Azure, streamed: eu-west-1 and us-east-1.' — Bedrock skipped without a call"
    seen = [line.split()[2:] for line in lines if line.startswith("  vendor saw:")]
    bedrock = "/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse"
    azure = "/openai/deployments/gpt-4o-prod/chat/completions"
    assert seen == [  # two attempts per member, then the next; none to Bedrock once its breaker opened
        ["bedrock", bedrock, "→", "503"], ["bedrock", bedrock, "→", "503"], ["openai", azure, "→", "200"],
        ["bedrock", bedrock, "→", "503"], ["bedrock", bedrock, "→", "503"],
        ["openai", azure, "→", "429"], ["openai", azure, "→", "429"], ["responses", "/v1/responses", "→", "200"],
        ["openai", azure, "→", "200"],
    ]
    assert lines[-1] == ("failovers: bedrock → azure-openai (transient), bedrock → azure-openai (transient), "
                         "azure-openai → openai-responses (transient), bedrock → azure-openai (circuit_open)")
    assert capsys.readouterr().out.splitlines() == lines


async def test_durable_recovery(capsys: pytest.CaptureFixture[str]) -> None:
    outcome = await _load("durable_recovery").main()  # a real child process, killed by SIGKILL mid-run
    result = outcome.result
    assert result.ok and result.run_id == outcome.crashed_run and result.steps == 4
    assert outcome.model_calls == 4  # one per step: the committed steps were not asked for again
    assert [c.name for c in result.tool_calls] == ["reserve_seat", "charge_card", "send_receipt"]
    keys = [line.split()[0] for line in outcome.effects]
    assert len(keys) == 3 == len(set(keys)) and all(k.startswith(f"{result.run_id}:") for k in keys)
    charge = next(k for k, line in zip(keys, outcome.effects, strict=True) if "card charged" in line)
    assert [line.split()[0] for line in outcome.attempts] == [keys[0], charge, charge, keys[2]]
    out = capsys.readouterr().out
    assert "killed by signal 9 inside charge_card" in out and "side effects (each once)" in out


async def test_approval_live(capsys: pytest.CaptureFixture[str]) -> None:
    module = _load("approval_live")
    module.REFUNDED.clear()
    result = await module.main()
    assert result.ok and result.content.endswith("As you asked: Tell the customer we will send a new one too.")
    assert module.REFUNDED == [("A-1001", 30)]  # once, after the approval
    out = capsys.readouterr().out
    assert "waiting for a person: refund({'order': 'A-1001', 'amount': 30})" in out
    assert "Done: 30 EUR refunded on A-1001." in out  # the streamed answer
