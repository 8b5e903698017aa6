"""A resilient chain across cloud endpoints: Bedrock → Azure OpenAI → OpenAI Responses, offline.

The built-in FakeVendor plays all three on 127.0.0.1 — Bedrock's Converse API (SigV4-signed, ConverseStream
in the AWS event stream), an Azure OpenAI deployment's route (``api-key``, ``api-version``) and OpenAI's
Responses API — so the example runs without a network or an account.  Point the providers at the real
endpoints (drop ``base_url`` / use your resource's ``endpoint``, give real credentials) and nothing else
changes.  The chain is the recommended stack, outer to inner::

    with_fallback(
        with_circuit_breaker(with_retry(with_timeout(bedrock))),
        with_circuit_breaker(with_retry(with_timeout(azure))),
        with_circuit_breaker(with_retry(with_timeout(responses))),
    )

What you will see: Bedrock is unavailable (503 ``ServiceUnavailableException``), so the first question is
retried there and answered by the Azure deployment; on the second Bedrock fails again — its breaker opens —
and Azure is rate-limited (429), so OpenAI's Responses API answers; the streamed third question skips
Bedrock without a call (its breaker is open) and streams from Azure, recovered.

    pip install 'agentactors[bedrock]'   # botocore signs Bedrock's requests
    python examples/resilient_chain_cloud.py
"""

from __future__ import annotations

import anyio

from agentactors import (
    AzureOpenAIProvider,
    BedrockProvider,
    InMemoryRecorder,
    LLMRequest,
    Message,
    OpenAIResponsesProvider,
    resilient_chain,
)
from agentactors.events import EventSink, use_sink
from agentactors.messages import TextDelta
from agentactors.resilience import CircuitBreakerProvider, FallbackProvider
from agentactors.testing import FakeReply, FakeVendor

QUESTION = "Which region should the incident review cover?"


async def main() -> list[str]:
    lines: list[str] = []
    recorder = InMemoryRecorder()
    async with FakeVendor() as vendor:
        vendor.script(FakeReply(text="Azure: eu-west-1, where the errors began."), FakeReply(text="Azure, streamed: "
                      "eu-west-1 and us-east-1."), wire="openai")
        vendor.script(FakeReply(text="Responses: eu-west-1, then us-east-1."), wire="responses")
        bedrock = BedrockProvider("us.anthropic.claude-sonnet-4-5-20250929-v1:0", region="us-east-1",
                                  access_key_id="AKIDEXAMPLE000000000", secret_access_key="example/secret/key",
                                  base_url=vendor.base_url)
        azure = AzureOpenAIProvider("gpt-4o-prod", endpoint=vendor.base_url, api_key="azure-example-key-0000",
                                    model="gpt-4o")  # the deployment, and the model it serves
        responses = OpenAIResponsesProvider("gpt-4.1", api_key="sk-example-not-a-real-key-000",
                                            base_url=vendor.openai_base_url)
        chain = resilient_chain(
            bedrock, azure, responses,
            attempt_timeout=10.0, first_event_timeout=5.0, max_attempts=2,
            retry={"base_delay": 0.01, "max_delay": 0.02},
            breaker={"consecutive_failures": 2, "open_duration": 30.0},
        )
        assert isinstance(chain, FallbackProvider)  # three members: a fallback over them
        bedrock_guard = chain.members[0]
        assert isinstance(bedrock_guard, CircuitBreakerProvider)

        def served(answer_provider: str | None) -> str:
            return f"served by {answer_provider}; Bedrock's breaker is {bedrock_guard.state.value}"

        with use_sink(EventSink([recorder], run_id="cloud-example")), vendor.outage(wire="bedrock"):
            first = await chain.complete(LLMRequest([Message.user(QUESTION)]))
            lines.append(f"first:  {first.content!r} — {served(first.provider)}")
            with vendor.outage(wire="openai", status=429):
                second = await chain.complete(LLMRequest([Message.user(QUESTION)]))
            lines.append(f"second: {second.content!r} — {served(second.provider)}")
            async with chain.stream(LLMRequest([Message.user(QUESTION)])) as events:
                text = "".join([e.text async for e in events if isinstance(e, TextDelta)])
            lines.append(f"stream: {text!r} — Bedrock skipped without a call")
        await chain.aclose()
        for r in vendor.requests:
            lines.append(f"  vendor saw: {r.wire:9} {r.path.split('?')[0]} → {r.status}")
    moves = [f"{e.from_member} → {e.to_member} ({e.reason.value})" for e in recorder.of_type("fallback.moved")]
    lines.append("failovers: " + ", ".join(moves))
    for line in lines:
        print(line)
    return lines


if __name__ == "__main__":
    anyio.run(main)
