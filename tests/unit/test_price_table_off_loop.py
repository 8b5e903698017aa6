"""The genai-prices table is loaded off the event loop, and only by a run that can need it.

Loading it (``import genai_prices.data_snapshot`` and its ``get_snapshot()``: ~0.15 s, with pydantic) used to
happen in ``response_cost`` on the event loop, after the first priced answer: every other run and served request of
the process was frozen meanwhile.  An HTTP provider's first request now loads it in a worker thread; a scripted run
never loads it at all.  Each scenario runs in a fresh interpreter: in this one the table may be loaded already.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from tests.support.no_extras import run_without

pytest.importorskip("genai_prices")  # the [prices] extra

BACKENDS = ("asyncio", "trio")

# Records the thread that first looks for the table's module, before anything else is imported.
_WATCH = """
import importlib.abc, sys, threading
found = {}
class Watch(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.startswith("genai_prices") and name not in found:
            found[name] = threading.get_ident()
        return None
sys.meta_path.insert(0, Watch())
"""

_VENDOR_RUN = _WATCH + """
import json
import anyio
from agentactors.agent.core import Agent
from agentactors.providers.openai.provider import OpenAIProvider
from agentactors.testing.fakevendor import FakeVendor

async def main():
    loop_thread = threading.get_ident()
    with FakeVendor(expected_api_key="sk-test") as fv:
        provider = OpenAIProvider("gpt-4o", api_key="sk-test", base_url=fv.openai_base_url)
        result = await Agent(provider, tools=(), nudges=False).run("hello")
        await provider.aclose()
    cost = result.cost
    print(json.dumps({
        "loop": loop_thread,
        "table": found.get("genai_prices.data_snapshot"),
        "cost": None if cost is None else [cost.total, cost.currency],
        "usage": [result.usage.input_tokens, result.usage.output_tokens],
    }))

anyio.run(main, backend=sys.argv[1])
"""

_SCRIPTED_RUN = """
import json, sys
import anyio
from agentactors import Agent, ScriptedProvider

async def main():
    result = await Agent(ScriptedProvider(["hello"]), tools=(), nudges=False).run("hi")
    loaded = sorted(m for m in sys.modules if m.startswith("genai_prices"))
    print(json.dumps({"output": result.output, "loaded": loaded}))

anyio.run(main, backend=sys.argv[1])
"""


def _fresh(code: str, backend: str) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-c", code, backend], capture_output=True, text=True, timeout=120, check=False
    )
    assert out.returncode == 0, out.stderr[-3000:]
    answer: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return answer


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_http_providers_first_request_loads_the_table_in_a_worker_thread(backend: str) -> None:
    seen = _fresh(_VENDOR_RUN, backend)
    assert seen["table"] is not None, "the run never loaded the price table"
    assert seen["table"] != seen["loop"], "the price table was imported on the event loop's thread"
    # Still priced: the table the thread loaded is the one the run's cost is read from.
    assert seen["usage"][0] > 0 and seen["usage"][1] > 0
    assert seen["cost"] is not None and seen["cost"][0] > 0 and seen["cost"][1] == "USD", seen


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_scripted_run_never_loads_the_table(backend: str) -> None:
    # tests/unit/test_pricing.py checks price_for('scripted', ...) alone; this is a whole run.
    seen = _fresh(_SCRIPTED_RUN, backend)
    assert seen["output"] == "hello"
    assert seen["loaded"] == []


# Many first requests at once start one loading thread; the others go on at once.
_CONCURRENT = """
import json, sys
import anyio, anyio.to_thread
from agentactors import pricing

threads = []
real = anyio.to_thread.run_sync

async def counted(func, *args, **kwargs):
    threads.append(func)
    return await real(func, *args, **kwargs)

anyio.to_thread.run_sync = counted

async def main():
    async with anyio.create_task_group() as tg:
        for _ in range(50):
            tg.start_soon(pricing.load_table)
    loaded = "genai_prices.data_snapshot" in sys.modules
    await pricing.load_table()  # loaded: returns at once, no thread
    priced = pricing.price_for("openai", "gpt-4o") is not None
    print(json.dumps({"threads": len(threads), "loaded": loaded, "priced": priced}))

anyio.run(main, backend=sys.argv[1])
"""

# A first request cancelled while the table loads: the load ends whole, the cancellation is raised, nothing is stuck.
_CANCELLED = """
import json, sys
import anyio
from agentactors import pricing

async def main():
    with anyio.CancelScope() as early:
        early.cancel()
        await pricing.load_table()  # cancelled before any thread started
    before = "genai_prices.data_snapshot" in sys.modules
    with anyio.move_on_after(0.001) as late:
        await pricing.load_table()  # cancelled while the thread loads: it waits for the load to end
    after = "genai_prices.data_snapshot" in sys.modules
    print(json.dumps({"early": early.cancelled_caught, "before": before, "late": late.cancelled_caught,
                      "after": after, "priced": pricing.price_for("openai", "gpt-4o") is not None}))

anyio.run(main, backend=sys.argv[1])
"""


@pytest.mark.parametrize("backend", BACKENDS)
def test_concurrent_first_requests_start_one_loading_thread(backend: str) -> None:
    seen = _fresh(_CONCURRENT, backend)
    assert seen == {"threads": 1, "loaded": True, "priced": True}


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_cancelled_load_leaves_the_table_whole_and_nothing_stuck(backend: str) -> None:
    seen = _fresh(_CANCELLED, backend)
    assert seen["early"] and not seen["before"], seen
    assert seen["late"], seen  # raised once the load ended, not left for a later checkpoint
    assert seen["after"] and seen["priced"], seen  # the second call was not refused by a flag left set


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_run_without_the_table_installed_is_unpriced_and_says_so_once(backend: str) -> None:
    result = run_without(
        "genai_prices",
        f"""
        import logging
        import anyio
        from agentactors import pricing
        from agentactors.agent.core import Agent
        from agentactors.providers.openai.provider import OpenAIProvider
        from agentactors.testing.fakevendor import FakeVendor

        class Kept(logging.Handler):
            def __init__(self):
                super().__init__()
                self.lines = []

            def emit(self, record):
                self.lines.append((record.levelno, record.getMessage()))

        kept = Kept()
        logging.getLogger("agentactors.pricing").addHandler(kept)
        logging.getLogger("agentactors.pricing").setLevel(logging.INFO)

        async def main():
            with FakeVendor(expected_api_key="sk-test") as fv:
                provider = OpenAIProvider("gpt-4o", api_key="sk-test", base_url=fv.openai_base_url)
                agent = Agent(provider, tools=(), nudges=False)
                first = await agent.run("hello")
                second = await agent.run("again")
                await provider.aclose()
            assert first.cost is None and second.cost is None, (first.cost, second.cost)
            await pricing.load_table()  # known missing: nothing to do, nothing said again

        anyio.run(main, backend={backend!r})
        assert [level for level, _ in kept.lines] == [logging.INFO], kept.lines
        assert "pip install 'agentactors[prices]'" in kept.lines[0][1], kept.lines
        """,
    )
    assert result["ok"], result
