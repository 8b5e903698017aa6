"""The benchmark workloads (W1–W7).  ``run.py`` drives them; memory workloads run here as a child process:

    python benchmarks/_workloads.py w3 '{"impl": "agentactors", "runs": 10000, "latency": 0.05}'
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Coroutine, Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import anyio  # noqa: E402
from _baselines import (  # noqa: E402
    NaiveActors,
    asyncio_queue_roundtrips,
    memory_stream_roundtrips,
    memory_stream_tells,
    plain_loop_run,
)

from agentactors import (  # noqa: E402
    Agent,
    LLMRequest,
    Message,
    ProviderActor,
    Runtime,
    ScriptedProvider,
    ToolCall,
    tool,
)

PROMPT = "What is 2 + 3?"
EXPECTED = "The answer is 5."


# --- agentactors implementation of the W1 run ---------------------------------------------------


@tool
async def add(a: int, b: int) -> int:
    """Add two integers."""
    # async: the recommended kind of tool (a sync tool runs in a worker thread, per the spec).
    return a + b


def scripted_model(request: LLMRequest) -> Any:
    last = request.messages[-1]
    if last.role == "tool":
        return f"The answer is {last.content}."
    return [ToolCall("call_1", "add", {"a": 2, "b": 3})]


def make_agent(latency: float = 0.0) -> Agent:
    # record=False: a long-lived provider must not keep every request it saw.  Recording, it kept ~14 objects
    # a run alive, and the garbage collector's passes over them were a tenth of W1's time, not the framework's.
    return Agent(ScriptedProvider(scripted_model, latency=latency, record=False), tools=[add])


class AgentActorsImpl:
    name = "agentactors"

    async def __aenter__(self) -> AgentActorsImpl:
        self.rt = Runtime()
        await self.rt.__aenter__()
        self.agent = make_agent()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.rt.__aexit__(None, None, None)

    async def run(self, prompt: str) -> str:
        return (await self.agent.run(prompt)).content

    async def run_many(self, n: int) -> list[str]:
        results = await self.rt.run_many(self.agent, [PROMPT] * n, concurrency=n)
        return [r.content for r in results]


class PlainImpl:
    name = "plain asyncio loop"

    async def __aenter__(self) -> PlainImpl:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        return None

    async def run(self, prompt: str) -> str:
        return await plain_loop_run(prompt)


class NaiveImpl(NaiveActors):
    name = "naive anyio actors"


def _impls() -> dict[str, Any]:
    impls: dict[str, Any] = {"plain asyncio loop": PlainImpl, "naive anyio actors": NaiveImpl,
                             "agentactors": AgentActorsImpl}
    try:
        from _peers import PEERS
    except ImportError:  # pragma: no cover
        PEERS = {}
    impls.update(PEERS)
    return impls


async def _time_sequential(impl: Any, n: int) -> float:
    out = await impl.run(PROMPT)  # warm up, and check the answer
    if out != EXPECTED:
        raise RuntimeError(f"{impl.name} answered {out!r}")
    # From a clean heap, as the concurrent runs below and W5's rows: what the implementation measured before this
    # one left (1,000 concurrent runs' worth) would otherwise be collected, and counted, in this one's time.
    gc.collect()
    t0 = time.perf_counter()
    for _ in range(n):
        await impl.run(PROMPT)
    return (time.perf_counter() - t0) / n


async def _time_concurrent(impl: Any, n: int) -> float:
    t0 = time.perf_counter()
    if hasattr(impl, "run_many"):
        outs = await impl.run_many(n)
    else:
        outs = list(await asyncio.gather(*(impl.run(PROMPT) for _ in range(n))))
    wall = time.perf_counter() - t0
    if len(outs) != n or any(o != EXPECTED for o in outs):
        raise RuntimeError(f"{impl.name}: wrong concurrent results")
    return wall


def w1_tool_loop(*, reps: int, smoke: bool) -> dict[str, Any]:
    """Sequential per-run cost and 1,000 concurrent runs, every implementation interleaved per repetition."""
    impls = _impls()
    fast_n, slow_n, conc_n = (50, 10, 50) if smoke else (2000, 300, 1000)
    seq: dict[str, list[float]] = {k: [] for k in impls}
    conc: dict[str, list[float]] = {k: [] for k in impls}
    errors: dict[str, str] = {}

    async def one_rep() -> None:
        for name, factory in impls.items():
            if name in errors:
                continue
            try:
                impl = factory()
                async with impl:
                    n = fast_n if name in ("plain asyncio loop", "naive anyio actors", "agentactors") else slow_n
                    seq[name].append(await _time_sequential(impl, n))
                    gc.collect()
                    conc[name].append(await _time_concurrent(impl, conc_n))
            except ImportError as exc:
                errors[name] = f"not installed ({exc.name})"
            except Exception as exc:
                errors[name] = f"failed: {type(exc).__name__}: {exc}"[:200]

    for _ in range(reps):
        asyncio.run(one_rep())
    return {
        "concurrent_runs": conc_n,
        "sequential": {k: ({"error": errors[k]} if k in errors or not v else _summ(v)) for k, v in seq.items()},
        "concurrent": {k: ({"error": errors[k]} if k in errors or not v else _summ(v)) for k, v in conc.items()},
    }


def _summ(samples: list[float]) -> dict[str, float]:
    return {"median": statistics.median(samples), "min": min(samples), "max": max(samples), "n": len(samples)}


# --- W2 messaging --------------------------------------------------------------------------------


class Echo:
    async def receive(self, message: Any) -> Any:
        return message


class Counter:
    def __init__(self) -> None:
        self.count = 0

    async def receive(self, message: Any) -> Any:
        if message == "count?":
            return self.count
        self.count += 1
        return None


def _pct(samples: list[float], q: float) -> float:
    s = sorted(samples)
    return s[min(len(s) - 1, int(q * len(s)))]


async def _agentactors_messaging(n: int) -> tuple[float, list[float]]:
    async with Runtime() as rt:
        echo = rt.spawn(Echo())
        counter = rt.spawn(Counter(), mailbox_size=256)
        times: list[float] = []
        for i in range(n):
            t0 = anyio.current_time()
            await echo.ask(i)
            times.append(anyio.current_time() - t0)
        t0 = anyio.current_time()
        for i in range(n):
            await counter.tell(i)
        assert await counter.ask("count?") == n
        tell_time = anyio.current_time() - t0
    return n / tell_time, times


def w2_messaging(*, reps: int, smoke: bool) -> dict[str, Any]:
    n = 500 if smoke else 50_000
    rows: list[dict[str, Any]] = []
    for backend in ("asyncio", "trio"):
        samples: dict[str, list[tuple[float, list[float]]]] = {}
        for _ in range(reps):
            samples.setdefault("agentactors", []).append(anyio.run(_agentactors_messaging, n, backend=backend))

            async def streams() -> tuple[float, list[float]]:
                tell = await memory_stream_tells(n)
                return n / tell, await memory_stream_roundtrips(n)

            samples.setdefault("anyio memory streams", []).append(anyio.run(streams, backend=backend))
            if backend == "asyncio":

                async def queues() -> tuple[float, list[float]]:
                    q: asyncio.Queue[int] = asyncio.Queue(256)
                    done = asyncio.Event()

                    async def consumer() -> None:
                        for _ in range(n):
                            await q.get()
                        done.set()

                    task = asyncio.ensure_future(consumer())
                    t0 = time.perf_counter()
                    for i in range(n):
                        await q.put(i)
                    await done.wait()
                    await task
                    return n / (time.perf_counter() - t0), await asyncio_queue_roundtrips(n)

                samples.setdefault("asyncio.Queue + Future", []).append(asyncio.run(queues()))
        for impl, runs in samples.items():
            tells = statistics.median(r[0] for r in runs)
            p50 = statistics.median(_pct(r[1], 0.50) for r in runs)
            p99 = statistics.median(_pct(r[1], 0.99) for r in runs)
            rows.append({"impl": impl, "backend": backend, "tells_per_s": tells, "ask_p50": p50, "ask_p99": p99})
    return {"messages": n, "rows": rows}


# --- W3 / W4: run in a child process --------------------------------------------------------------


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _peak_mb() -> float:
    # VmHWM, not ru_maxrss: Linux carries ru_maxrss across execve, so a child started by a large
    # parent would report the parent's peak.  VmHWM belongs to this address space alone.
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child_w3(impl: str, runs: int, latency: float) -> dict[str, Any]:
    gc.collect()
    base = _rss_mb()

    async def agentactors_main() -> int:
        async with Runtime() as rt:
            # The in-process model has no rate limit of its own: lift the ProviderActor's default
            # budget of 64 requests in flight so the run measures the framework, not the throttle.
            # record=False: a benchmark's model must not keep every request it saw (README, benchmarks/README).
            model = ScriptedProvider(scripted_model, latency=latency, record=False)
            provider = ProviderActor.shared(rt, model, max_concurrency=runs)
            agent = Agent(provider, tools=[add])
            results = await rt.run_many(agent, [PROMPT] * runs, concurrency=runs)
        return sum(r.content == EXPECTED for r in results)

    async def plain_main() -> int:
        async def one() -> str:
            await asyncio.sleep(latency)
            out = await plain_loop_run(PROMPT)
            await asyncio.sleep(latency)
            return out

        outs = await asyncio.gather(*(one() for _ in range(runs)))
        return sum(o == EXPECTED for o in outs)

    t0 = time.perf_counter()
    completed = asyncio.run(agentactors_main() if impl == "agentactors" else plain_main())
    wall = time.perf_counter() - t0
    return {"wall": wall, "completed": completed, "rss_growth_mb": _peak_mb() - base}


class Idle:
    __slots__ = ()

    async def receive(self, message: Any) -> Any:
        return message


def child_w4(impl: str, n: int) -> dict[str, Any]:
    gc.collect()
    gc.disable()
    if impl == "agentactors":

        async def main() -> tuple[float, float]:
            async with Runtime() as rt:
                before = _rss_mb()
                t0 = time.perf_counter()
                refs = [rt.spawn(Idle()) for _ in range(n)]
                spawn = time.perf_counter() - t0
                after = _rss_mb()
                assert len(refs) == n
                await refs[0].ask("ping")  # they are live actors
                return spawn, (after - before) * 1024 * 1024 / n

        spawn_s, per = asyncio.run(main())
    else:
        from _peer_autogen import spawn_idle

        async def main() -> tuple[float, float]:
            before = _rss_mb()
            t0 = time.perf_counter()
            runtime, ids = await spawn_idle(n)
            spawn = time.perf_counter() - t0
            after = _rss_mb()
            assert len(ids) == n and runtime is not None
            return spawn, (after - before) * 1024 * 1024 / n

        spawn_s, per = asyncio.run(main())
    return {"spawn_s": spawn_s, "bytes_per_agent": per}


# --- W5 HTTP path ----------------------------------------------------------------------------------


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start_fakevendor(tls: Any = None) -> tuple[subprocess.Popen[bytes], str]:
    """A FakeVendor in another process; ``tls`` (a ``TestAuthority``): over HTTPS with its certificate."""
    port = _free_port()
    certs = ["--certfile", str(tls.cert_file), "--keyfile", str(tls.key_file)] if tls is not None else []
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentactors", "fakevendor", "--port", str(port), *certs],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    import httpx

    base = f"{'https' if tls is not None else 'http'}://127.0.0.1:{port}"
    verify: Any = True if tls is None else str(tls.ca_file)
    for _ in range(200):
        try:
            httpx.post(f"{base}/v1/chat/completions", json={"model": "m", "messages": [{"role": "user",
                                                                                        "content": "hi"}]}, timeout=1,
                       verify=verify)
            return proc, base
        except httpx.HTTPError:
            time.sleep(0.05)
    proc.kill()
    raise RuntimeError("FakeVendor did not start")


def _stop(server: subprocess.Popen[bytes]) -> None:
    server.terminate()
    server.wait(timeout=10)


async def _drive(call: Any, n: int, concurrency: int) -> tuple[float, float]:
    limiter = anyio.CapacityLimiter(concurrency)

    async def one() -> None:
        async with limiter:
            await call()

    for _ in range(5):  # warm the connection pool
        await call()
    # From a clean heap: what the previous row left (the official SDK's is the biggest) would otherwise be
    # collected, and counted, in this row's time — the first row after it read up to 40 % more than alone.
    gc.collect()
    cpu0, t0 = time.process_time(), time.perf_counter()
    async with anyio.create_task_group() as tg:
        for _ in range(n):
            tg.start_soon(one)
    return (time.process_time() - cpu0) / n, n / (time.perf_counter() - t0)


class _transport_forced:
    """``AGENTACTORS_HTTP_TRANSPORT`` set to ``transport`` meanwhile (``auto``: left as it is)."""

    def __init__(self, transport: str) -> None:
        self.transport = transport
        self.previous: str | None = None

    def __enter__(self) -> None:
        self.previous = os.environ.get("AGENTACTORS_HTTP_TRANSPORT")
        if self.transport != "auto":
            os.environ["AGENTACTORS_HTTP_TRANSPORT"] = self.transport

    def __exit__(self, *exc: Any) -> None:
        if self.previous is None:
            os.environ.pop("AGENTACTORS_HTTP_TRANSPORT", None)
        else:
            os.environ["AGENTACTORS_HTTP_TRANSPORT"] = self.previous


async def _ours(base: str, request: LLMRequest, mode: str, n: int, concurrency: int,
                transport: str = "auto", expect: str | None = None) -> tuple[float, float]:
    """``transport``: ``auto`` (the h11 sender on both backends), ``aiohttp`` or ``httpx`` (forced).

    ``expect``: the sender the row's label names (``provider.transport``); another one is an error, not a
    mislabelled row (a proxy in the environment, say, makes the owned sender httpx on either backend).
    """
    from agentactors import OpenAIProvider

    with _transport_forced(transport):
        async with OpenAIProvider("gpt-4o-mini", api_key="sk-bench-key-0000", base_url=f"{base}/v1") as provider:

            async def complete() -> None:
                await provider.complete(request)

            async def stream() -> None:
                async with provider.stream(request) as events:
                    async for _ in events:
                        pass

            measured = await _drive(complete if mode == "json" else stream, n, concurrency)
            if expect is not None and provider.transport != expect:
                raise RuntimeError(f"W5: the row is labelled {expect}, but requests went over {provider.transport}")
            return measured


async def _raw_httpx(base: str, mode: str, n: int, concurrency: int) -> tuple[float, float]:
    import httpx

    body = json.dumps({"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Say hello."}],
                       "stream": mode == "stream"}).encode()
    headers = {"authorization": "Bearer sk-bench-key-0000", "content-type": "application/json"}
    url = f"{base}/v1/chat/completions"
    async with httpx.AsyncClient(limits=httpx.Limits(max_connections=256, max_keepalive_connections=64)) as client:

        async def call() -> None:
            async with client.stream("POST", url, content=body, headers=headers) as r:
                async for _ in r.aiter_raw():
                    pass

        return await _drive(call, n, concurrency)


def _trio_run(fn: Any, *args: Any) -> tuple[float, float]:
    import trio  # noqa: F401 - the bench extra installs it

    result: tuple[float, float] = anyio.run(fn, *args, backend="trio")
    return result


async def _official(openai: Any, base: str, mode: str, n: int, concurrency: int) -> tuple[float, float]:
    messages = [{"role": "user", "content": "Say hello."}]
    client = openai.AsyncOpenAI(api_key="sk-bench-key-0000", base_url=f"{base}/v1", max_retries=0)
    async with client:

        async def complete() -> None:
            await client.chat.completions.create(model="gpt-4o-mini", messages=messages)

        async def stream() -> None:
            s = await client.chat.completions.create(model="gpt-4o-mini", messages=messages, stream=True)
            async for _ in s:
                pass

        return await _drive(complete if mode == "json" else stream, n, concurrency)


OURS_ASYNCIO = "agentactors (h11, asyncio)"
AIOHTTP_ASYNCIO = "agentactors (aiohttp, asyncio)"
OURS_TRIO = "agentactors (h11, trio)"
# Over HTTPS (a FakeVendor serving TLS with a certificate of a CA made for the run): the path users run.
OURS_ASYNCIO_TLS = "agentactors (h11, asyncio, https)"
OURS_TRIO_TLS = "agentactors (h11, trio, https)"
OFFICIAL_TLS = "official AsyncOpenAI (https)"


@contextlib.contextmanager
def _test_authority() -> Iterator[Any]:
    """A certificate authority made for this run (``tests/support/tls.py``), trusted through ``SSL_CERT_FILE``.

    Every client of W5's HTTPS rows reads that variable when it makes its TLS context (httpx's, which the
    official SDK and the owned senders use); nothing else in this process speaks TLS.  On leaving, the variable
    is put back and the directory (the CA's and the server's private keys) removed: a run leaves no keys in the
    temporary directory, and no later client of this process is pointed at a file that is gone.
    """
    import tempfile

    sys.path.insert(0, str(HERE.parent))
    from tests.support.tls import TestAuthority

    before = os.environ.get("SSL_CERT_FILE")
    with tempfile.TemporaryDirectory(prefix="agentactors-w5-tls-") as directory:
        authority = TestAuthority(Path(directory))
        os.environ["SSL_CERT_FILE"] = str(authority.ca_file)
        try:
            yield authority
        finally:
            if before is None:
                os.environ.pop("SSL_CERT_FILE", None)
            else:
                os.environ["SSL_CERT_FILE"] = before


def w5_http(*, reps: int, smoke: bool) -> dict[str, Any]:
    """OpenAIProvider vs the official AsyncOpenAI client against one FakeVendor in another process."""
    try:
        import openai
    except ImportError:
        openai = None
    n = 10 if smoke else 1000
    request = LLMRequest([Message.user("Say hello.")], model="gpt-4o-mini")
    results: dict[tuple[str, str, int], list[tuple[float, float]]] = {}
    with contextlib.ExitStack() as stack:
        proc, base = _start_fakevendor()
        stack.callback(_stop, proc)
        tls_proc, tls_base = _start_fakevendor(stack.enter_context(_test_authority()))
        stack.callback(_stop, tls_proc)
        for _ in range(reps):
            for mode in ("json", "stream"):
                for concurrency in (1, 32):
                    def add(impl: str, sample: tuple[float, float], key: tuple[str, int] = (mode, concurrency)) -> None:
                        results.setdefault((impl, *key), []).append(sample)

                    add(OURS_ASYNCIO, asyncio.run(_ours(base, request, mode, n, concurrency, "auto", "h11")))
                    # The asyncio default before the h11 sender's lean asyncio path overtook it; still an option.
                    add(AIOHTTP_ASYNCIO, asyncio.run(_ours(base, request, mode, n, concurrency, "aiohttp", "aiohttp")))
                    add("agentactors (httpx, asyncio)",
                        asyncio.run(_ours(base, request, mode, n, concurrency, "httpx", "httpx")))
                    add("raw httpx (asyncio)", asyncio.run(_raw_httpx(base, mode, n, concurrency)))
                    # trio's own sender (the default there), and httpx's client forced: what it replaced.
                    add(OURS_TRIO, _trio_run(_ours, base, request, mode, n, concurrency, "auto", "h11"))
                    add("agentactors (httpx, trio)",
                        _trio_run(_ours, base, request, mode, n, concurrency, "httpx", "httpx"))
                    add("raw httpx (trio)", _trio_run(_raw_httpx, base, mode, n, concurrency))
                    if openai is not None:
                        add("official AsyncOpenAI", asyncio.run(_official(openai, base, mode, n, concurrency)))
                    add(OURS_ASYNCIO_TLS, asyncio.run(_ours(tls_base, request, mode, n, concurrency, "auto", "h11")))
                    add(OURS_TRIO_TLS, _trio_run(_ours, tls_base, request, mode, n, concurrency, "auto", "h11"))
                    if openai is not None:
                        add(OFFICIAL_TLS, asyncio.run(_official(openai, tls_base, mode, n, concurrency)))
    rows: list[dict[str, Any]] = []
    for (impl, mode, concurrency), samples in results.items():
        cpu = statistics.median(s[0] for s in samples) * 1e6
        rps = statistics.median(s[1] for s in samples)
        rows.append({"impl": impl, "mode": mode, "concurrency": concurrency, "cpu_us": cpu, "rps": rps,
                     "scheme": "https" if impl.endswith("https)") else "http"})
    for row in rows:
        # asyncio rows compare with the official SDK; trio rows over HTTP with raw httpx on trio (no SDK there);
        # HTTPS rows with the official SDK over HTTPS.
        if row["scheme"] == "https":
            base_impl = OFFICIAL_TLS
        else:
            base_impl = "raw httpx (trio)" if "trio" in row["impl"] else "official AsyncOpenAI"
        ref = next((r for r in rows if r["impl"] == base_impl and r["mode"] == row["mode"]
                    and r["concurrency"] == row["concurrency"]), None)
        row["cpu_ratio"] = row["cpu_us"] / ref["cpu_us"] if ref else None
        row["baseline"] = base_impl
    # The issue's figure: agentactors' CPU per request on trio over its CPU on asyncio (goal: at most 1.3x).
    for row in rows:
        if row["impl"].startswith("agentactors (") and "trio" in row["impl"]:
            same = OURS_ASYNCIO_TLS if row["scheme"] == "https" else OURS_ASYNCIO
            ours = next((r for r in rows if r["impl"] == same and r["mode"] == row["mode"]
                         and r["concurrency"] == row["concurrency"]), None)
            row["trio_vs_asyncio"] = row["cpu_us"] / ours["cpu_us"] if ours else None
    return {"requests": n, "rows": rows, "trio_goal": 1.3}


# --- W7 streaming CPU ---------------------------------------------------------------------------------


async def _w7_ours(base: str, runs: int, transport: str = "auto") -> tuple[float, int]:
    """``transport`` as for :func:`_ours`: the provider's pool is made by its first request, inside the block."""
    with _transport_forced(transport):
        return await _w7_ours_run(base, runs)


async def _w7_ours_run(base: str, runs: int) -> tuple[float, int]:
    from agentactors import Agent, OpenAIProvider, ProviderActor, Runtime

    deltas = 0
    async with OpenAIProvider("gpt-4o-mini", api_key="sk-bench-key-0000", base_url=f"{base}/v1") as provider:
        agent = Agent(provider)  # its defaults, as the official SDK runs with its own
        async with Runtime() as rt:
            ProviderActor.shared(rt, provider, max_concurrency=runs)

            def count(_: str) -> None:
                nonlocal deltas
                deltas += 1

            def reset() -> None:
                nonlocal deltas
                deltas = 0

            async def one(i: int) -> None:
                # on_token: the run takes the provider's stream path, one call per text delta.
                await agent.run(f"Tell me a story number {i}.", on_token=count)

            cpu = await _w7_timed(one, runs, reset)
            return cpu, deltas


async def _w7_timed(one: Callable[[int], Coroutine[Any, Any, None]], runs: int,
                    reset: Callable[[], None] | None = None) -> float:
    """The CPU time of ``runs`` concurrent ``one(i)``, after three warm-up runs (then ``reset()``), from a clean heap.

    Every client is timed here, the same way: the garbage the previous client left (the rows run one after another
    in this process, after W1's peers) is collected before the clock starts, not counted in the next one's time.
    """
    for i in range(3):
        await one(i)
    if reset is not None:
        reset()
    gc.collect()
    cpu0 = time.process_time()
    async with anyio.create_task_group() as tg:
        for i in range(runs):
            tg.start_soon(one, i)
    return time.process_time() - cpu0


async def _w7_official(openai: Any, base: str, runs: int) -> tuple[float, int]:
    # The SDK's own HTTP library (httpx, or from openai 3.63 its fork httpx2) for its client's limits.
    http = __import__(openai.DefaultAsyncHttpxClient.__mro__[1].__module__.partition(".")[0])
    client = openai.AsyncOpenAI(api_key="sk-bench-key-0000", base_url=f"{base}/v1", max_retries=0,
                                http_client=openai.DefaultAsyncHttpxClient(limits=http.Limits(max_connections=runs)))
    deltas = 0
    async with client:

        async def one(i: int) -> None:
            nonlocal deltas
            s = await client.chat.completions.create(
                model="gpt-4o-mini", messages=[{"role": "user", "content": f"Tell me a story number {i}."}],
                stream=True)
            async for chunk in s:
                if chunk.choices and chunk.choices[0].delta.content:
                    deltas += 1

        def reset() -> None:
            nonlocal deltas
            deltas = 0

        cpu = await _w7_timed(one, runs, reset)
        return cpu, deltas


def w7_streaming(*, reps: int, smoke: bool) -> dict[str, Any]:
    """1,000 concurrent streamed runs against a FakeVendor in another process: client CPU per text delta.

    agentactors over its default sender (h11), over aiohttp and over httpx/httpcore
    (``AGENTACTORS_HTTP_TRANSPORT=aiohttp`` / ``httpx``), side by side with the official SDK, interleaved per
    repetition.
    """
    try:
        import openai
    except ImportError:
        openai = None
    runs = 20 if smoke else 1000
    proc, base = _start_fakevendor()
    samples: dict[str, list[float]] = {}
    deltas: dict[str, int] = {}
    try:
        for _ in range(reps):
            for label, transport in (("agentactors (h11, agent.run, on_token)", "auto"),
                                     ("agentactors (aiohttp, agent.run, on_token)", "aiohttp"),
                                     ("agentactors (httpx, agent.run, on_token)", "httpx")):
                cpu, d = asyncio.run(_w7_ours(base, runs, transport))
                samples.setdefault(label, []).append(cpu / max(d, 1))
                deltas[label] = d
            if openai is not None:
                cpu, d = asyncio.run(_w7_official(openai, base, runs))
                samples.setdefault("official AsyncOpenAI", []).append(cpu / max(d, 1))
                deltas["official AsyncOpenAI"] = d
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    rows = [{"impl": k, "cpu_us_per_delta": statistics.median(v) * 1e6, "deltas": deltas[k]}
            for k, v in samples.items()]
    ref = next((r for r in rows if r["impl"] == "official AsyncOpenAI"), None)
    for row in rows:
        row["cpu_ratio"] = row["cpu_us_per_delta"] / ref["cpu_us_per_delta"] if ref else None
    return {"runs": runs, "rows": rows}


# --- W6 chain under faults ---------------------------------------------------------------------------


def w6_chain(*, smoke: bool) -> dict[str, Any]:
    from agentactors._demo.main import run_fleet_sync

    runs = 20 if smoke else 500
    report = run_fleet_sync(agents=runs, fault_rate=0.3, seed=11, outage=True, progress=False)
    return {
        "runs": runs,
        "fault_rate": 0.3,
        "goodput": report.ok / runs,
        "primary_calls_while_open": report.primary_calls_while_open,
        "p50": report.p50,
        "p99": report.p99,
        "failovers": sum(report.failovers.values()),
        "breaker_opens": report.breaker_opens,
        "retries": report.retries,
    }


# --- charts ------------------------------------------------------------------------------------------


def charts(report: dict[str, Any], out_dir: Path) -> list[Path]:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    paths: list[Path] = []
    w1 = report["workloads"].get("W1")
    if w1:
        names = [k for k, v in w1["sequential"].items() if "median" in v]
        vals = [w1["sequential"][k]["median"] * 1e6 for k in names]
        fig, ax = plt.subplots(figsize=(8, 4))
        colors = ["#d62728" if n == "agentactors" else "#7f7f7f" for n in names]
        ax.barh(names, vals, color=colors)
        ax.set_xscale("log")
        ax.set_xlabel("µs per run (log scale, lower is better)")
        ax.set_title("W1 tool loop: model → tool → model → text")
        for i, v in enumerate(vals):
            ax.text(v, i, f" {v:,.0f}" if v >= 10 else f" {v:.1f}", va="center", fontsize=8)
        fig.tight_layout()
        paths.append(out_dir / "w1_tool_loop.png")
        fig.savefig(paths[-1], dpi=110)
        plt.close(fig)
    w3 = report["workloads"].get("W3")
    if w3:
        names = [k for k, v in w3["results"].items() if "wall" in v]
        fig, (a1, a2) = plt.subplots(1, 2, figsize=(8, 3.5))
        a1.bar(names, [w3["results"][k]["wall"] for k in names], color="#1f77b4")
        a1.set_ylabel("wall time (s)")
        a2.bar(names, [w3["results"][k]["rss_growth_mb"] for k in names], color="#ff7f0e")
        a2.set_ylabel("peak RSS growth (MB)")
        fig.suptitle(f"W3: {w3['runs']:,} concurrent runs, 50 ms model latency")
        fig.tight_layout()
        paths.append(out_dir / "w3_many_agents.png")
        fig.savefig(paths[-1], dpi=110)
        plt.close(fig)
    w6 = report["workloads"].get("W6")
    if w6:
        fig, ax = plt.subplots(figsize=(6, 3.5))
        labels = ["goodput %", "failovers", "breaker opens", "primary calls\nwhile open"]
        vals = [w6["goodput"] * 100, w6["failovers"], w6["breaker_opens"], w6["primary_calls_while_open"]]
        ax.bar(labels, vals, color=["#2ca02c", "#1f77b4", "#9467bd", "#d62728"])
        for i, v in enumerate(vals):
            ax.text(i, v, f"{v:,.1f}" if i == 0 else f"{v:,.0f}", ha="center", va="bottom")
        ax.set_title(f"W6: {w6['runs']} runs, {w6['fault_rate']:.0%} faults + an outage")
        fig.tight_layout()
        paths.append(out_dir / "w6_chain_under_faults.png")
        fig.savefig(paths[-1], dpi=110)
        plt.close(fig)
    return paths


if __name__ == "__main__":
    which, raw = sys.argv[1], json.loads(sys.argv[2])
    fn = {"w3": child_w3, "w4": child_w4, "w5": w5_http}[which]
    print(json.dumps(fn(**raw)))
    sys.stdout.flush()
    os._exit(0)  # skip interpreter teardown of 100k objects
