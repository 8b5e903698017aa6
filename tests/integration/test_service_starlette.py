"""examples/service_starlette.py, served on 127.0.0.1: a lifespan runtime every handler uses, SSE tokens, and a
client that goes away cancelling the vendor request — from httpx and from a real browser (headless Chromium)."""

from __future__ import annotations

import json
from typing import Any

import anyio
import httpx
import pytest

from agentactors import InMemoryRecorder, LLMRequest, OpenAIProvider, ScriptedProvider
from agentactors.events import RunFinished
from agentactors.testing import FakeReply, FakeVendor
from tests.support.services import CHROMIUM_ARGS, chromium_or_skip, load_example, serving

pytestmark = pytest.mark.anyio
SLOW = FakeReply(text=" ".join(f"word{i}" for i in range(60)), words_per_chunk=1, chunk_latency=0.1)


def slow_provider(fv: FakeVendor) -> OpenAIProvider:
    fv.on(SLOW)
    return OpenAIProvider("gpt-4o-mini", api_key="sk-service-test-0000000000", base_url=fv.openai_base_url)


async def test_handlers_share_the_lifespan_runtime_its_budget_and_recorders() -> None:
    module = load_example("service_starlette")
    in_flight, most = [0], [0]

    async def answer(request: LLMRequest) -> str:
        in_flight[0] += 1
        most[0] = max(most[0], in_flight[0])
        try:
            await anyio.sleep(0.05)
        finally:
            in_flight[0] -= 1
        return f"answer to {request.messages[-1].content}"

    recorder = InMemoryRecorder()
    app = module.build_app(ScriptedProvider(answer), recorders=[recorder], max_concurrency=2)
    answers: dict[int, Any] = {}
    async with serving(app, module) as base, httpx.AsyncClient(base_url=base, timeout=10) as client:

        async def one(i: int) -> None:
            response = await client.post("/ask", json={"prompt": f"q{i}"})
            answers[i] = response.json()

        async with anyio.create_task_group() as tg:
            for i in range(6):
                tg.start_soon(one, i)
    assert {i: a["answer"] for i, a in answers.items()} == {i: f"answer to q{i}" for i in range(6)}
    assert most[0] == 2, "the lifespan's ProviderActor budget held across concurrent requests"
    finished = [e for e in recorder.events if isinstance(e, RunFinished)]
    assert len(finished) == 6, "the lifespan runtime's recorders received every request's run"
    assert {e.run_id for e in finished} == {a["run_id"] for a in answers.values()}


# The test's own client leaves httpx's response iterators half-read on purpose (it goes away mid-answer);
# on trio, httpx's nested async generators then warn when collected.  That is the client's, not the
# library's: the library's reader closes its own (tests/reliability, test_http).
@pytest.mark.filterwarnings("ignore:Async generator 'httpx:ResourceWarning")
@pytest.mark.filterwarnings("ignore:Async generator 'httpcore:ResourceWarning")
async def test_sse_streams_tokens_and_a_client_that_leaves_cancels_the_vendor_request(fake_vendor: FakeVendor) -> None:
    module = load_example("service_starlette")
    app = module.build_app(slow_provider(fake_vendor))
    async with serving(app, module) as base, httpx.AsyncClient(base_url=base, timeout=10) as client:
        tokens: list[str] = []
        async with client.stream("GET", "/stream", params={"prompt": "Tell me slowly."}) as response:
            assert response.headers["content-type"].startswith("text/event-stream")
            event = None
            async for line in response.aiter_lines():
                if line.startswith("event: "):
                    event = line[7:]
                elif line.startswith("data: ") and event == "token":
                    tokens.append(json.loads(line[6:])["text"])
                    if len(tokens) >= 3:
                        break  # the client goes away mid-answer
        assert "".join(tokens).startswith("word0 word1")
        (gone,) = await fake_vendor.wait_for_disconnects(1, within=10)
        assert gone.outcome == "disconnected" and gone.stream


async def test_a_finished_stream_ends_with_done(fake_vendor: FakeVendor) -> None:
    module = load_example("service_starlette")
    fake_vendor.on(FakeReply(text="Paris is the capital."))
    provider = OpenAIProvider("gpt-4o-mini", api_key="sk-service-test-1", base_url=fake_vendor.openai_base_url)
    app = module.build_app(provider)
    async with serving(app, module) as base, httpx.AsyncClient(base_url=base, timeout=10) as client:
        body = (await client.get("/stream", params={"prompt": "Capital of France?"})).text
        page = (await client.get("/")).text
    texts = [json.loads(line[6:])["text"] for line in body.splitlines() if line.startswith("data: {\"text\"")]
    assert "".join(texts) == "Paris is the capital."
    assert "event: done" in body
    assert "EventSource" in page and 'id="stop"' in page


async def test_a_request_without_a_prompt_is_a_400_that_says_what_to_send() -> None:
    module = load_example("service_starlette")
    provider = ScriptedProvider(lambda request: "answered")
    app = module.build_app(provider)
    async with serving(app, module) as base, httpx.AsyncClient(base_url=base, timeout=10) as client:
        asks = [await client.post("/ask", content=body, headers={"content-type": "application/json"})
                for body in (b"hi", b"[1]", b"{}", b'{"prompt": ""}', b'{"prompt": 5}', b"\xff")]
        streams = [await client.get("/stream", params=params) for params in ({}, {"prompt": ""})]
        fine = await client.post("/ask", json={"prompt": "hi"})
    assert [r.status_code for r in asks + streams] == [400] * 8
    assert all("prompt" in r.json()["error"] for r in asks + streams)
    assert fine.status_code == 200 and fine.json()["answer"] == "answered"
    assert len(provider.requests) == 1, "nothing reached the model before the prompt was checked"


async def test_the_page_in_a_browser_streams_tokens_and_stop_cancels_the_vendor_request(
    fake_vendor: FakeVendor,
) -> None:
    chromium = chromium_or_skip()
    module = load_example("service_starlette")
    app = module.build_app(slow_provider(fake_vendor))
    async with serving(app, module) as base:

        def drive() -> tuple[str, str]:
            from playwright.sync_api import sync_playwright

            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=chromium, args=list(CHROMIUM_ARGS))
                try:
                    page = browser.new_page()
                    page.goto(base + "/")
                    page.fill("#prompt", "Tell me slowly.")
                    page.click("#send")
                    # tokens appear as they stream
                    page.wait_for_function("document.getElementById('answer').textContent.includes('word2')",
                                           timeout=10_000)
                    seen = page.text_content("#answer") or ""
                    page.click("#stop")
                    page.wait_for_function("document.getElementById('status').textContent === 'stopped'",
                                           timeout=5_000)
                    return seen, page.text_content("#answer") or ""
                finally:
                    browser.close()

        seen, after = await anyio.to_thread.run_sync(drive)
        assert seen.startswith("word0 word1 word2")
        (gone,) = await fake_vendor.wait_for_disconnects(1, within=10)
        assert gone.outcome == "disconnected"
        assert "word59" not in after, "stopped before the answer was complete"


async def test_the_readme_recipe_works_as_written() -> None:
    """The README's "In a service" code, run as it is printed (with a scripted model instead of OpenAI)."""
    import re

    import agentactors
    from tests.support.paths import ROOT

    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("## In a service") :]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    assert code is not None
    source = code.group(1).replace('OpenAIProvider("gpt-4.1-mini")', 'ScriptedProvider(lambda request: "It works.")')
    namespace: dict[str, Any] = {"ScriptedProvider": agentactors.ScriptedProvider}
    exec(compile(source, "README.md", "exec"), namespace)
    module = load_example("service_starlette")
    async with serving(namespace["app"], module) as base:  # (its "/" is a 404: enough to know it is up)
        async with httpx.AsyncClient(base_url=base, timeout=10) as client:
            answer = (await client.post("/ask", json={"prompt": "hi"})).json()
            streamed = (await client.get("/stream", params={"prompt": "hi"})).text
    assert answer["answer"] == "It works." and answer["run_id"]
    assert "".join(json.loads(line[6:]) for line in streamed.splitlines() if line.startswith("data: ")) == "It works."
