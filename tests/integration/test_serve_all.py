"""examples/serve_all.py: one agent, one runtime, served as an OpenAI API, an MCP server and an AG-UI stream
on one port (uvicorn on asyncio, hypercorn on trio); each protocol's own client gets the agent's answer."""

from __future__ import annotations

import json
import threading

import anyio
import httpx
import openai
import pytest
from ag_ui.core import Event, EventType
from mcp import Client
from pydantic import TypeAdapter

from agentactors import LLMRequest, ScriptedProvider, ToolCall
from tests.support.services import CHROMIUM_ARGS, chromium_or_skip, load_example, serving

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.filterwarnings("ignore:Async generator 'httpcore2:ResourceWarning"),
    pytest.mark.filterwarnings("ignore:Async generator 'httpx2:ResourceWarning"),
    pytest.mark.filterwarnings("ignore:Async generator 'openai:ResourceWarning"),
]


async def test_one_agent_three_protocols() -> None:
    module = load_example("serve_all")
    provider = ScriptedProvider(lambda request: f"answer to {request.messages[-1].content}")
    app = module.build_app(provider, api_keys=["sk-example"])
    async with serving(app, module, probe="/openai/v1/models") as base:
        async with openai.AsyncOpenAI(base_url=base + "/openai/v1", api_key="sk-example", max_retries=0) as client:
            completion = await client.chat.completions.create(
                model="assistant", messages=[{"role": "user", "content": "via openai"}]
            )
            assert completion.choices[0].message.content == "answer to via openai"
        async with Client(base + "/mcp/") as mcp:
            result = await mcp.call_tool("assistant", {"input": "via mcp"})
            assert result.content[0].text == "answer to via mcp"  # type: ignore[union-attr]
        body = {"threadId": "t", "runId": "r", "messages": [{"id": "1", "role": "user", "content": "via agui"}]}
        async with httpx.AsyncClient(base_url=base, timeout=20) as http:
            response = await http.post("/agui/", json=body)
        events = [TypeAdapter(Event).validate_python(json.loads(line[6:]))
                  for line in response.text.splitlines() if line.startswith("data: ")]
        assert events[-1].type == EventType.RUN_FINISHED
        text = "".join(e.delta for e in events if e.type == EventType.TEXT_MESSAGE_CONTENT)
        assert text == "answer to via agui"
    requests: list[LLMRequest] = provider.requests
    assert len(requests) == 3 and all(r.messages[0].content == "Be brief." for r in requests)


# --- the AG-UI page, in a real browser (headless Chromium) ---------------------------------------------------


async def test_the_agui_page_in_a_browser_renders_the_answer_and_the_tool_call() -> None:
    chromium = chromium_or_skip()
    module = load_example("serve_all")
    provider = ScriptedProvider([[ToolCall("call-1", "word_count", {"text": "one two three"})], "Three words."])
    app = module.build_app(provider)
    async with serving(app, module) as base:

        def drive() -> tuple[list[str], list[str], list[str], str]:
            from playwright.sync_api import sync_playwright

            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=chromium, args=list(CHROMIUM_ARGS))
                try:
                    page = browser.new_page()
                    page.goto(base + "/")
                    page.fill("#prompt", "How many words in 'one two three'?")
                    page.click("#send")
                    page.wait_for_function("document.getElementById('status').textContent === 'finished'",
                                           timeout=15_000)
                    answers = page.locator(".answer").all_text_contents()
                    tools = page.locator(".tool").all_text_contents()
                    results = [page.locator(".tool").nth(i).get_attribute("data-result") or ""
                               for i in range(page.locator(".tool").count())]
                    return answers, tools, results, page.text_content("#step") or ""
                finally:
                    browser.close()

        answers, tools, results, step = await anyio.to_thread.run_sync(drive)
    assert answers == ["Three words."]
    assert tools == ['word_count({"text": "one two three"}) → 3'] and results == ["3"]
    assert step == "2", "the STATE_SNAPSHOTs reached the page"
    assert [m.content for m in provider.requests[0].messages if m.role == "user"] == [
        "How many words in 'one two three'?"]


async def test_the_agui_page_steers_a_live_run_from_the_browser() -> None:
    chromium = chromium_or_skip()
    started, gate = threading.Event(), anyio.Event()
    seen: list[list[str]] = []

    async def model(request: LLMRequest) -> str:
        seen.append([m.content for m in request.messages if m.role == "user"])
        if len(seen) == 1:
            started.set()
            await gate.wait()
            return "Looking at Bergen."
        return "Bergen and Oslo: clear."

    module = load_example("serve_all")
    app = module.build_app(ScriptedProvider(model))
    async with serving(app, module) as base:

        def drive() -> list[str]:
            from playwright.sync_api import sync_playwright

            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=chromium, args=list(CHROMIUM_ARGS))
                try:
                    page = browser.new_page()
                    page.goto(base + "/")
                    page.fill("#prompt", "Weather in Bergen?")
                    page.click("#send")
                    assert started.wait(15), "the run started"
                    page.fill("#prompt", "Also Oslo.")
                    page.click("#send")
                    page.wait_for_function("document.getElementById('thread').textContent.includes('steered')",
                                           timeout=15_000)
                    anyio.from_thread.run_sync(gate.set)
                    page.wait_for_function("document.getElementById('status').textContent === 'finished'",
                                           timeout=15_000)
                    return page.locator(".answer").all_text_contents()
                finally:
                    browser.close()

        answers = await anyio.to_thread.run_sync(drive)
    assert seen == [["Weather in Bergen?"], ["Weather in Bergen?", "Also Oslo."]], "the steer, read once"
    assert "".join(answers).endswith("Bergen and Oslo: clear.")


async def test_the_agui_page_answers_an_interrupt_from_the_browser() -> None:
    """A run that pauses for approval ends with an interrupt: the page asks the person, then posts the answers as
    the next run's ``resume``; that run's stream shows the decided calls' results and the answer."""
    from starlette.applications import Starlette
    from starlette.routing import Mount, Route

    from agentactors import Agent, Runtime, tool
    from agentactors.serve import agui_app

    chromium = chromium_or_skip()
    moved: list[int] = []

    @tool(requires_approval=True)
    def transfer(amount: int) -> str:
        """Move money (a person approves each call)."""
        moved.append(amount)
        return f"moved {amount}"

    calls = [ToolCall("call-1", "transfer", {"amount": 5}), ToolCall("call-2", "transfer", {"amount": 7})]
    provider = ScriptedProvider([calls, "Moved 5; 7 was declined."])
    module = load_example("serve_all")
    async with Runtime() as rt:
        agent = Agent(provider, tools=[transfer], name="bank")
        app = Starlette(routes=[
            Route("/", module.page), Mount("/agui", app=agui_app(agent, runtime=rt, sessions=True)),
        ])
        async with serving(app, module) as base:

            def drive() -> tuple[list[str], list[str], list[str], str]:
                from playwright.sync_api import sync_playwright

                with sync_playwright() as p:
                    browser = p.chromium.launch(executable_path=chromium, args=list(CHROMIUM_ARGS))
                    try:
                        page = browser.new_page()
                        page.goto(base + "/")
                        page.fill("#prompt", "Move 5, then 7.")
                        page.click("#send")
                        page.wait_for_function(
                            "document.getElementById('status').textContent === 'awaiting approval'", timeout=15_000
                        )
                        asked = page.locator(".interrupt").all_text_contents()
                        page.click(".interrupt[data-interrupt='call-1'] .approve")
                        page.click(".interrupt[data-interrupt='call-2'] .deny")
                        page.wait_for_function("document.getElementById('status').textContent === 'finished'",
                                               timeout=15_000)
                        tools = page.locator(".tool")
                        results = [tools.nth(i).get_attribute("data-result") or "" for i in range(tools.count())]
                        answers = page.locator(".answer").all_text_contents()
                        return asked, results, answers, page.text_content("#status") or ""
                    finally:
                        browser.close()

            asked, results, answers, status = await anyio.to_thread.run_sync(drive)
    assert len(asked) == 2 and all("transfer" in a for a in asked)
    assert results[0] == "moved 5" and "denied" in results[1], "the resumed run's results, on the calls shown before"
    assert answers == ["Moved 5; 7 was declined."] and status == "finished"
    assert moved == [5], "the approved call ran, the denied one did not"
