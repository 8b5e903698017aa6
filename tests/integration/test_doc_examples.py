"""The ```python blocks of README.md and docs/*.md, run as they are printed.

A reader copies these first, so each is checked the way a reader would use it:

* every block compiles (top-level ``await`` allowed: the docs write snippets as a notebook would), as a
  module of its own (no ``__future__`` import of this file leaks into it);
* every block is either **run** here — an entry of ``EXAMPLES``, keyed ``"<file>: <section>"`` (with ``[n]``
  when the section holds more than one block) — or **declared a fragment** in the .md file itself, by
  ``<!-- fragment: why -->`` as the last line before its fence.  A block that is neither fails
  ``test_every_block_is_run_or_declared_a_fragment``: a new example is never skipped silently.
  ``<!-- fragment, not Python: why -->`` (a signature listing) also exempts a block from compiling.

What a run may change, and nothing else (each entry shows its own):

* ``given``: the names a snippet takes from its surroundings (``provider``, ``agent``, a tool...), defined
  before the block runs — by a ``ScriptedProvider`` where a model answers, so that the answers are known;
* ``vendor=``: the vendor providers the block makes are pointed at the built-in FakeVendor on 127.0.0.1 — a
  ``base_url=`` (Azure: ``endpoint=``) keyword added to each provider constructor call in the block's syntax
  tree (:class:`_PointAt`) — and the API keys are fake environment variables;
* ``replace``: textual substitutions, each of which must still match (large figures and waits shrunk, a
  server's address, a ``[...]`` placeholder);
* ``main=``: the block's own ``anyio.run(main)`` is left out and ``main()`` awaited on the test's backend
  (every test runs on asyncio and trio); ``thread=True``: a block of blocking calls runs in a worker thread.

Then each entry checks what the block says it does (its printed output, its comments' values, what the
FakeVendor or the scripted model received).  Offline: servers, MCP servers, Ray and PostgreSQL run locally.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import json
import os
import re
import struct
import sys
import textwrap
import warnings
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import attrs
import httpx
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from openai import OpenAI
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from starlette.applications import Starlette
from starlette.routing import Mount

from agentactors import (
    Agent,
    AzureOpenAIProvider,
    BedrockProvider,
    CostBudget,
    CostLimitExceeded,
    GeminiProvider,
    InMemoryRecorder,
    JsonlRecorder,
    LLMRequest,
    Message,
    OpenAIProvider,
    OpenAIResponsesProvider,
    Runtime,
    ScriptedProvider,
    SqliteJournal,
    SqliteStore,
    ToolCall,
    ToolContext,
    fork,
    pricing,
    resilient_chain,
    tool,
    with_circuit_breaker,
    with_fallback,
    with_retry,
    with_timeout,
)
from agentactors.agent.batch import results_of
from agentactors.journal import explain_fork
from agentactors.providers.http.provider import HTTPProvider
from agentactors.serve import agui_app, mcp_server, openai_app
from agentactors.testing import FakeError, FakeVendor
from tests.support.mcp_helpers import SERVER, TOKEN, http_server_process
from tests.support.paths import ROOT
from tests.support.postgres import postgres_dsn, postgres_server  # noqa: F401  (fixtures)
from tests.support.services import load_example, serving
from tests.support.tls import TestAuthority

pytestmark = pytest.mark.anyio

DOCS = (ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")))
_OPEN = re.compile(r"^ {0,3}(`{3,})([^`]*)$")
_MARKER = re.compile(r"^<!--\s*(fragment|fragment, not Python):\s*(\S.*?)\s*-->$")
_HEADING = re.compile(r"^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$")


# --- the blocks ----------------------------------------------------------------------------------------


@attrs.frozen
class Block:
    """One fenced ```python block."""

    path: Path
    line: int  # the opening fence's line (1-based); the code starts on the next one
    section: str  # the nearest heading above it
    source: str
    marker: str | None  # "fragment" | "fragment, not Python", from the line before the fence
    reason: str | None
    key: str = ""

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def parse(path: Path) -> list[Block]:
    """The file's ```python blocks, fenced as CommonMark fences them (a closing fence is backticks alone)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    name = path.relative_to(ROOT).as_posix()
    found: list[Block] = []
    section = "(top)"
    i = 0
    while i < len(lines):
        opening = _OPEN.match(lines[i])
        if opening is None:
            heading = _HEADING.match(lines[i])
            if heading is not None:
                section = heading.group(1)
            i += 1
            continue
        fence, info = opening.group(1), opening.group(2).strip()
        end = i + 1
        while end < len(lines) and not re.fullmatch(rf" {{0,3}}`{{{len(fence)},}}\s*", lines[end]):
            end += 1
        if end == len(lines):
            raise AssertionError(f"{name}:{i + 1}: a code fence that is never closed")
        if info.split()[:1] == ["python"]:
            before = next((line.strip() for line in reversed(lines[:i]) if line.strip()), "")
            marker = _MARKER.match(before)
            found.append(
                Block(
                    path,
                    i + 1,
                    section,
                    "\n".join(lines[i + 1 : end]) + "\n",
                    marker.group(1) if marker else None,
                    marker.group(2) if marker else None,
                )
            )
        i = end + 1
    per_section: dict[str, int] = {}
    for block in found:
        per_section[block.section] = per_section.get(block.section, 0) + 1
    keyed: list[Block] = []
    seen: dict[str, int] = {}
    for block in found:
        seen[block.section] = seen.get(block.section, 0) + 1
        suffix = f" [{seen[block.section]}]" if per_section[block.section] > 1 else ""
        keyed.append(attrs.evolve(block, key=f"{name}: {block.section}{suffix}"))
    return keyed


BLOCKS: dict[str, Block] = {block.key: block for path in DOCS for block in parse(path)}


# --- running one --------------------------------------------------------------------------------------

_POINTED = {
    "OpenAIProvider": ("base_url", "openai"),
    "OpenAIResponsesProvider": ("base_url", "openai"),
    "AnthropicProvider": ("base_url", "root"),
    "GeminiProvider": ("base_url", "root"),
    "BedrockProvider": ("base_url", "root"),
    "AzureOpenAIProvider": ("endpoint", "root"),
}
FAKE_KEYS = {
    "OPENAI_API_KEY": "sk-doc-example-0000000000",
    "ANTHROPIC_API_KEY": "sk-ant-doc-example-0000",
    "GEMINI_API_KEY": "gemini-doc-example-0000",
    "AZURE_OPENAI_API_KEY": "azure-doc-example-0000",
    "AWS_ACCESS_KEY_ID": "AKIDEXAMPLE000000000",
    "AWS_SECRET_ACCESS_KEY": "doc/example/secret/key",
}


class _PointAt(ast.NodeTransformer):
    """Adds ``base_url=`` (Azure: ``endpoint=``) naming the FakeVendor to each vendor provider constructor call."""

    def __init__(self, vendor: FakeVendor) -> None:
        self.urls = {"openai": vendor.openai_base_url, "root": vendor.base_url}
        self.pointed = 0

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        name = node.func.id if isinstance(node.func, ast.Name) else None
        if name in _POINTED:
            keyword, url = _POINTED[name]
            value = ast.copy_location(ast.Constant(self.urls[url]), node)
            node.keywords = [k for k in node.keywords if k.arg != keyword]
            node.keywords.append(ast.copy_location(ast.keyword(keyword, value), node))
            self.pointed += 1
        return node


def _is_anyio_run(statement: ast.stmt) -> bool:
    return (
        isinstance(statement, ast.Expr)
        and isinstance(statement.value, ast.Call)
        and ast.unparse(statement.value.func) == "anyio.run"
    )


@attrs.define
class Doc:
    """What an example's entry runs its block with."""

    block: Block
    request: pytest.FixtureRequest
    monkeypatch: pytest.MonkeyPatch
    capsys: pytest.CaptureFixture[str]
    cwd: Path
    providers: list[HTTPProvider] = attrs.Factory(list)

    def track_providers(self) -> None:
        """Keeps every HTTP provider made from now on, to close at the end (a script's would close with its loop)."""
        made = self.providers
        init = HTTPProvider.__init__

        def tracked(provider: HTTPProvider, *args: Any, **kwargs: Any) -> None:
            init(provider, *args, **kwargs)
            made.append(provider)

        self.monkeypatch.setattr(HTTPProvider, "__init__", tracked)

    async def close(self) -> None:
        with anyio.CancelScope(shield=True):
            for provider in self.providers:
                await provider.aclose()

    def code(
        self,
        *,
        replace: Sequence[tuple[str, str]] = (),
        vendor: FakeVendor | None = None,
        strip_anyio_run: bool = False,
    ) -> Any:
        """The block compiled, with ``replace`` applied, pointed at ``vendor``, without its ``anyio.run(...)``."""
        text = self.block.source
        for old, new in replace:
            assert old in text, f"{self.block.where}: the substitution's text is no longer in the block: {old!r}"
            text = text.replace(old, new)
        tree = ast.parse(text)
        ast.increment_lineno(tree, self.block.line)  # tracebacks name the line of the .md file
        if vendor is not None:
            pointer = _PointAt(vendor)
            tree = pointer.visit(tree)
            assert pointer.pointed, f"{self.block.where}: no provider constructor to point at the FakeVendor"
        if strip_anyio_run:
            runs = [s for s in tree.body if _is_anyio_run(s)]
            assert len(runs) == 1, f"{self.block.where}: expected one top-level anyio.run(...)"
            tree.body.remove(runs[0])
        ast.fix_missing_locations(tree)
        # dont_inherit: compiled as the reader's own module would be, not under this file's __future__ imports
        return compile(tree, str(self.block.path), "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True)

    def evaluate(self, given: Mapping[str, Any]) -> Any:
        """The value of a block that is one expression."""
        tree = ast.parse(self.block.source, mode="eval")
        ast.increment_lineno(tree, self.block.line)
        return eval(compile(tree, str(self.block.path), "eval", dont_inherit=True), dict(given))

    async def run(
        self,
        given: Mapping[str, Any] | None = None,
        *,
        replace: Sequence[tuple[str, str]] = (),
        vendor: FakeVendor | None = None,
        main: Sequence[Any] | None = None,
        thread: bool = False,
    ) -> dict[str, Any]:
        """Runs the block; with ``main``, its ``anyio.run(main)`` (if any) left out and ``main(*main)`` awaited.

        ``thread``: a synchronous block that blocks (a sync HTTP client), run in a worker thread.
        """
        if vendor is not None:
            for name, value in FAKE_KEYS.items():
                self.monkeypatch.setenv(name, value)
        has_run = any(_is_anyio_run(s) for s in ast.parse(self.block.source).body)
        code = self.code(replace=replace, vendor=vendor, strip_anyio_run=main is not None and has_run)
        namespace: dict[str, Any] = {"__name__": "doc_example", **(given or {})}
        if thread:
            await anyio.to_thread.run_sync(exec, code, namespace)
        else:
            pending = eval(code, namespace)
            if inspect.iscoroutine(pending):
                await pending
        if main is not None:
            await namespace["main"](*main)
        return namespace

    def out(self) -> str:
        return self.capsys.readouterr().out


EXAMPLES: dict[str, Callable[[Doc], Awaitable[None]]] = {}


def example(key: str) -> Callable[[Callable[[Doc], Awaitable[None]]], Callable[[Doc], Awaitable[None]]]:
    def register(fn: Callable[[Doc], Awaitable[None]]) -> Callable[[Doc], Awaitable[None]]:
        assert key not in EXAMPLES, key
        EXAMPLES[key] = fn
        return fn

    return register


# --- the checks every block gets ---------------------------------------------------------------------


def test_the_docs_have_python_blocks() -> None:
    assert len(BLOCKS) >= 40, sorted(BLOCKS)
    assert len({b.key for b in BLOCKS.values()}) == len(BLOCKS)


@pytest.mark.parametrize("key", sorted(BLOCKS))
def test_every_block_compiles(key: str) -> None:
    block = BLOCKS[key]
    source = block.source
    if block.marker == "fragment, not Python":
        with pytest.raises(SyntaxError):  # a listing that became Python: drop its "not Python"
            compile(source, block.where, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True)
        return
    try:
        compile(source, block.where, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True)
    except SyntaxError as exc:
        pytest.fail(f"{block.where} ({key}) does not compile: {exc.msg}, its line {exc.lineno}: {exc.text!r}")


def test_every_block_is_run_or_declared_a_fragment() -> None:
    neither = [f"{b.where} ({k})" for k, b in BLOCKS.items() if b.marker is None and k not in EXAMPLES]
    both = [f"{b.where} ({k})" for k, b in BLOCKS.items() if b.marker is not None and k in EXAMPLES]
    stale = sorted(set(EXAMPLES) - set(BLOCKS))
    assert not neither, (
        "blocks neither run by an EXAMPLES entry here nor declared <!-- fragment: why --> before their fence: "
        f"{neither}"
    )
    assert not both, f"blocks declared fragments and run as well: {both}"
    assert not stale, f"EXAMPLES entries whose block is gone (renamed section, moved block?): {stale}"


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    """One local Ray instance for the module's Ray examples (their own ``ray.init()`` finds it running)."""
    try:
        import ray
    except ImportError:  # pragma: no cover - the dev extra installs ray
        message = "the Ray examples need ray, the [ray] extra: pip install -e '.[dev]' (make test does)"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)

    ray.init(
        address="local",
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        configure_logging=False,
        runtime_env={"env_vars": FAKE_KEYS},  # the workers' environment: the fake keys the providers read
    )
    try:
        yield
    finally:
        ray.shutdown()


@pytest.fixture
def doc(
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> Doc:
    key = request.node.callspec.params["key"]
    monkeypatch.chdir(tmp_path)  # files the examples write (chats.db, runs.db, chart.png) land here
    for name in FAKE_KEYS:
        monkeypatch.delenv(name, raising=False)
    doc = Doc(BLOCKS[key], request, monkeypatch, capsys, tmp_path)
    doc.track_providers()
    return doc


# --- README.md -----------------------------------------------------------------------------------------


@example("README.md: A first agent")
async def _first_agent(doc: Doc) -> None:
    async with FakeVendor(auto_tools=True) as vendor:
        await doc.run(vendor=vendor, replace=[("range(1000)", "range(5)")], main=())
        bodies = [r.body for r in vendor.requests]
    out = doc.out()
    assert '"city": "example", "celsius": 21' in out and "openai" in out, out
    assert len(bodies) == 2 + 2 + 5 * 2, "a tool call and an answer per run"


def png() -> bytes:
    """A 1x1 PNG."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(b"\0\xff\0\0"))
        + chunk(b"IEND", b"")
    )


@example("README.md: Settings, images and documents")
async def _settings_images(doc: Doc) -> None:
    (doc.cwd / "chart.png").write_bytes(png())
    async with FakeVendor() as vendor:
        await doc.run(vendor=vendor, main=())
        (request,) = vendor.requests
    assert request.wire == "anthropic" and request.body is not None
    assert request.body["thinking"] == {"type": "enabled", "budget_tokens": 1500}
    assert request.body["max_tokens"] == 2000
    kinds = [part["type"] for part in request.body["messages"][0]["content"]]
    assert kinds == ["text", "image", "document"], kinds
    out = doc.out()
    assert "Does the chart match the report?" in out and out.rstrip().endswith("None"), out


def scripted(*items: Any, name: str = "scripted") -> ScriptedProvider:
    return ScriptedProvider(list(items), name=name)


@example("README.md: The recommended stack [1]")
async def _readme_chain_one_line(doc: Doc) -> None:
    a, b, a_eu, a_us = (scripted("a", name=n) for n in ("a", "b", "a_eu", "a_us"))
    namespace = await doc.run({"a": a, "b": b, "a_eu": a_eu, "a_us": a_us})
    assert (await namespace["chain"].complete(user("hi"))).content == "a"


@example("README.md: The recommended stack [2]")
async def _readme_chain_spelled_out(doc: Doc) -> None:
    names = {
        "with_fallback": with_fallback,
        "with_circuit_breaker": with_circuit_breaker,
        "with_retry": with_retry,
        "with_timeout": with_timeout,
    }
    # The block is one expression: what resilient_chain(a, b) builds.  It runs, and the chain it makes serves.
    chain = doc.evaluate({**names, "a": scripted("from a", name="a"), "b": scripted("from b", name="b")})
    assert (await chain.complete(user("hi"))).content == "from a"


@example("README.md: Example [1]")
async def _readme_resilient_example(doc: Doc) -> None:
    async with FakeVendor() as vendor:
        # a context window exceeded: the chain moves on at once (fallback_on names "context"; no retry)
        vendor.script(FakeError(400, "prompt is too long: 250000 tokens > 200000 maximum"), wire="anthropic")
        await doc.run(vendor=vendor, main=())
    lines = doc.out().splitlines()
    assert lines[0].startswith("openai ") and "Summarise the incident." in lines[0], lines
    assert "fallback.moved" in lines[1], lines


@example("README.md: Example [2]")
async def _readme_cloud_chain(doc: Doc) -> None:
    given = {
        "BedrockProvider": BedrockProvider,
        "AzureOpenAIProvider": AzureOpenAIProvider,
        "OpenAIResponsesProvider": OpenAIResponsesProvider,
        "resilient_chain": resilient_chain,
        "entra_token": lambda: "entra-doc-example-token",
    }
    async with FakeVendor() as vendor:
        vendor.script(FakeError(503, should_retry=False), wire="bedrock")  # down, and not worth asking again
        namespace = await doc.run(given, vendor=vendor)
        response = await namespace["chain"].complete(user("Which region?"))
        wires = [r.wire for r in vendor.requests]
    assert wires == ["bedrock", "openai"], wires
    assert "Which region?" in response.content


@example("README.md: Typed results")
async def _readme_typed_results(doc: Doc) -> None:
    provider = scripted([ToolCall("c1", "final_result", {"action": "replace", "priority": 2})])
    namespace = await doc.run({"provider": provider})
    assert namespace["result"].output.action == "replace", namespace["result"].error


@example("README.md: Agents together")
async def _readme_agents_together(doc: Doc) -> None:
    @tool
    async def web_search(query: str) -> str:
        """Searches the web."""
        return "results"

    @tool
    async def invoice_total(invoice: str) -> float:
        """An invoice's total."""
        return 20.0

    provider = scripted([ToolCall("c1", "refund", {"order": "17", "amount": 20.0})], "Refunded order 17.")
    namespace = await doc.run({"provider": provider, "web_search": web_search, "invoice_total": invoice_total})
    result = namespace["result"]
    assert result.content == "Refunded order 17." and result.agent == "support", result.error
    assert [c.name for c in result.tool_calls] == ["refund"]
    assert (doc.cwd / "chats.db").exists()


@example("README.md: MCP tools")
async def _readme_mcp_tools(doc: Doc) -> None:
    provider = scripted(
        [
            ToolCall("c1", "github_add", {"a": 2, "b": 3}),
            ToolCall("c2", "search", {"query": "anyio", "filters": {"language": "python", "min_stars": 1}}),
        ],
        "Done.",
    )
    with http_server_process() as url:
        namespace = await doc.run(
            {"provider": provider, "token": "ghp-doc-example", "key": TOKEN},
            replace=[
                # no npm, no network: the suite's own MCP server, over stdio and over streamable HTTP
                (
                    '"npx", ["-y", "@modelcontextprotocol/server-github"]',
                    f"{sys.executable!r}, [{str(SERVER)!r}, 'stdio']",
                ),
                ('"https://docs.example.com/mcp"', repr(url)),
                ("tools=[...]", "tools=[]"),  # a placeholder for the agent's own tools
            ],
        )
    offered = [t.name for t in provider.requests[0].tools]
    assert "github_add" in offered and "search" in offered and "add" not in offered, offered
    results = [m.content for m in provider.requests[1].messages if m.role == "tool"]
    assert results[0] == "5" and "anyio" in results[1], results
    assert namespace["agent"] is not None


@example("README.md: Past one machine")
async def _readme_ray(doc: Doc) -> None:
    await _ray_example(doc)


async def _ray_example(doc: Doc) -> None:
    doc.request.getfixturevalue("local_ray")
    async with FakeVendor() as vendor:
        await doc.run(
            vendor=vendor,
            replace=[
                ("ray.init()", "ray.init(ignore_reinit_error=True)"),  # the suite's local Ray, started once
                ("workers=4", "workers=1"),
            ],
            main=(["Hello", "Hi"],),
        )
        bodies = [r.body for r in vendor.requests]
    assert len(bodies) == 4, "two runs twice: run_many, then as_completed"


@example("README.md: In a service")
async def _readme_service(doc: Doc) -> None:
    async with FakeVendor() as vendor:
        namespace = await doc.run(vendor=vendor)
        module = load_example("service_starlette")
        async with serving(namespace["app"], module) as base:  # (its "/" is a 404: enough to know it is up)
            async with httpx.AsyncClient(base_url=base, timeout=10) as client:
                answer = (await client.post("/ask", json={"prompt": "hi"})).json()
                streamed = (await client.get("/stream", params={"prompt": "hi there"})).text
    assert answer["answer"] == "Echo: hi" and answer["run_id"], answer
    texts = [json.loads(line[6:]) for line in streamed.splitlines() if line.startswith("data: ")]
    assert "".join(texts) == "Echo: hi there", streamed


# --- docs/agents.md ------------------------------------------------------------------------------------


@example("docs/agents.md: Delegation: an agent as a tool")
async def _agents_delegation(doc: Doc) -> None:
    @tool
    async def web_search(query: str) -> str:
        """Searches the web."""
        return "anyio runs on trio or asyncio"

    provider = scripted(
        [ToolCall("c1", "searcher", {"input": "anyio and trio"})],  # the researcher delegates
        "anyio runs on top of trio or asyncio.",  # the searcher answers
        "anyio is a layer over trio and asyncio.",  # the researcher answers
    )
    namespace = await doc.run({"Agent": Agent, "provider": provider, "web_search": web_search, "db": object()})
    result = namespace["result"]
    assert result.content == "anyio is a layer over trio and asyncio.", result.error
    assert result.children[0].content == "anyio runs on top of trio or asyncio."


@example("docs/agents.md: Handoffs: the conversation goes on with another agent")
async def _agents_handoffs(doc: Doc) -> None:
    @tool
    async def invoice_total(invoice: str) -> float:
        """An invoice's total."""
        return 20.0

    @dataclasses.dataclass
    class Ticket:
        summary: str

    p = scripted([ToolCall("c1", "transfer_to_billing", {})], "Invoice A-17 is 20 EUR.")
    namespace = await doc.run({"Agent": Agent, "p": p, "invoice_total": invoice_total, "Ticket": Ticket})
    result = namespace["result"]
    assert (result.agent, result.handoffs) == ("billing", ("billing",)), result.error
    assert result.content == "Invoice A-17 is 20 EUR."


@example("docs/agents.md: Approvals that pause")
async def _agents_approvals(doc: Doc) -> None:
    @tool(requires_approval=True, name="refund")
    async def refund_it(order: str, amount: float) -> str:
        """Refund an order."""
        return f"refunded {order}"

    # the agent the block runs holds a tool like the block's own `refund` (it is made before the block defines it)
    provider = scripted([ToolCall("c1", "refund", {"order": "17", "amount": 9.5})], "Refunded order 17.")
    namespace = await doc.run({"tool": tool, "agent": Agent(provider, tools=[refund_it])})
    assert namespace["result"].content == "Refunded order 17.", namespace["result"].error
    assert doc.out().startswith("refund {'order': '17', 'amount': 9.5} "), "the call and why it waits"


@example("docs/agents.md: Running from code that is not async")
async def _agents_run_sync(doc: Doc) -> None:
    provider = scripted("Lisbon.", "Oslo.")
    # Blocking calls: in a worker thread (run_sync refuses inside the test's own event loop).
    namespace = await doc.run({"Agent": Agent, "provider": provider}, thread=True)
    assert doc.out() == "Lisbon.\nOslo.\n"
    assert namespace["result"].content == "Lisbon."
    assert namespace["rt"].closed and namespace["service_agent"].runtime is namespace["rt"]
    assert [r.messages[-1].content for r in provider.requests] == [
        "What's the capital of Portugal?",
        "And of Norway?",
    ]


# --- docs/costs.md -------------------------------------------------------------------------------------


@example("docs/costs.md: Prices [1]")
async def _costs_prices(doc: Doc) -> None:
    namespace = await doc.run()
    # The printed repr: the comment lines that end the block, wrapped where the page is narrower than it.
    lines = doc.block.source.rstrip().splitlines()
    comment = [line.removeprefix("#").strip() for line in lines[lines.index("") + 1 if "" in lines else 0 :]
               if line.startswith("#")]
    printed = " ".join(comment)
    assert repr(namespace["pricing"].price_for("openai", "gpt-4o")) == printed


@example("docs/costs.md: Prices [2]")
async def _costs_own_prices(doc: Doc) -> None:
    table = pricing.price_for("openai", "gpt-4o")
    try:
        await doc.run({"pricing": pricing})
    finally:
        pricing.clear_prices()
    assert pricing.price_for("openai", "gpt-4o") == table


@example("docs/costs.md: Limits")
async def _costs_limits(doc: Doc) -> None:
    async with FakeVendor() as vendor:
        agent = Agent(
            OpenAIProvider("gpt-4o-mini", api_key=FAKE_KEYS["OPENAI_API_KEY"], base_url=vendor.openai_base_url)
        )
        async with Runtime() as rt:
            given = {
                "agent": agent,
                "prompt": "Hello",
                "rt": rt,
                "inputs": ["a", "b"],
                "Runtime": Runtime,
                "CostLimitExceeded": CostLimitExceeded,
                "CostBudget": CostBudget,
            }
            namespace = await doc.run(given)
    assert namespace["result"].error is None and namespace["result"].cost.total > 0
    assert [r.error for r in namespace["results"]] == [None, None]
    assert namespace["batch"].calls == 2 and 0 < namespace["batch"].spent < 5.00


@example("docs/costs.md: Hedged requests")
async def _costs_hedge(doc: Doc) -> None:
    given = {
        "OpenAIProvider": OpenAIProvider,
        "resilient_chain": resilient_chain,
        "primary": scripted("primary"),
        "other_deployment": scripted("other"),
        "a": scripted("a", name="a"),
        "b": scripted("b", name="b"),
    }
    async with FakeVendor() as vendor:
        namespace = await doc.run(given, vendor=vendor)
        assert (await namespace["provider"].complete(user("hi"))).content == "primary"
        assert (await namespace["chain"].complete(user("hi"))).content == "a"


@example("docs/costs.md: Batch [1]")
async def _costs_batch(doc: Doc) -> None:
    async with FakeVendor() as vendor:
        await doc.run(
            {"prompts": ["What is 2 + 2?", "And 3 + 3?"]},
            vendor=vendor,
            replace=[
                ("window=5.0", "window=0.1"),
                ("poll_every=30.0", "poll_every=0.05"),  # seconds, shrunk
                ("tools=[...]", "tools=[]"),  # a placeholder for the agent's tools
            ],
        )
        assert vendor.batches.count == 1 and not vendor.batches.single_requests, "both calls in one batch"
    out = doc.out()
    assert out.startswith("Cost(input=") and "currency='USD'" in out, out


# --- docs/durability.md --------------------------------------------------------------------------------


@tool
async def charge(cents: int) -> str:
    """Charge the card."""
    return f"charged {cents}"


def payer(provider: ScriptedProvider) -> Agent[str]:
    return Agent(provider, tools=[charge], name="payer")


async def a_recorded_run() -> str:
    """A run of agent "payer" in runs.db and events.jsonl: two charges, then the answer (three steps).  Its id."""
    model = scripted([ToolCall("c1", "charge", {"cents": 100})], [ToolCall("c2", "charge", {"cents": 200})], "Paid.")
    with JsonlRecorder("events.jsonl") as record:
        async with SqliteJournal("runs.db") as journal, Runtime(journal=journal, recorders=[record]) as rt:
            result = await payer(model).run("pay the invoice", runtime=rt)
    assert result.steps == 3 and result.error is None and result.run_id is not None
    return result.run_id


@example("docs/durability.md: Durable runs, replay and fork")
async def _durability_intro(doc: Doc) -> None:
    run_id = await a_recorded_run()  # the run the block replays and forks
    given = {
        "provider": scripted([ToolCall("c1", "charge", {"cents": 250})], "Paid 250."),
        "charge": charge,
        "run_id": run_id,
        "other_agent": payer(scripted("Charged nothing more.")),
    }
    namespace = await doc.run(given)
    assert namespace["result"].content == "Paid 250."
    assert namespace["again"].content == "Paid."
    assert namespace["what_if"].content == "Charged nothing more."
    # without the fork's events the fork step is inferred: the first step that differs (docs/durability.md)
    assert f"of run {run_id} (first differing step 3)" in doc.out()


@example("docs/durability.md: A fork beside its original")
async def _durability_fork(doc: Doc) -> None:
    run_id = await a_recorded_run()
    frugal = payer(scripted([ToolCall("c9", "charge", {"cents": 50})], "Charged 50 instead."))
    given = {
        "InMemoryRecorder": InMemoryRecorder,
        "fork": fork,
        "explain_fork": explain_fork,
        "run_id": run_id,
        "frugal": frugal,
    }
    namespace = await doc.run(given)
    assert namespace["what_if"].content == "Charged 50 instead."
    out = doc.out()
    assert f"of run {run_id} (live from step 2)" in out and "the answer differs" in out, out


@example("docs/durability.md: PostgreSQL")
async def _durability_postgres(doc: Doc) -> None:
    dsn = doc.request.getfixturevalue("postgres_dsn")
    namespace = await doc.run(
        {"provider": scripted("Paid."), "charge": charge},
        replace=[('"postgresql://app:secret@db.internal:5432/app"', repr(dsn))],  # the suite's own server
    )
    assert namespace["session"].key == "user:42"


# --- docs/ray.md, docs/reliability.md, docs/resilience.md -------------------------------------------------


@example("docs/ray.md: Past one machine: agentactors on Ray")
async def _ray_intro(doc: Doc) -> None:
    await _ray_example(doc)


@example("docs/ray.md: Failures")
async def _ray_idempotent_tool(doc: Doc) -> None:
    class Payments:
        def __init__(self) -> None:
            self.keys: set[str] = set()

        async def create_once(self, *, idempotency_key: str, customer: str, amount: int) -> bool:
            if idempotency_key in self.keys:
                return False
            self.keys.add(idempotency_key)
            return True

    payments = Payments()
    namespace = await doc.run({"tool": tool, "ToolContext": ToolContext, "payments": payments})
    charge = namespace["charge"]
    call = ToolCall("c1", "charge", {"customer": "ada", "amount": 5})
    agent = Agent(scripted([call], [call], "Charged once."), tools=[charge])
    result = await agent.run("charge ada 5, twice")
    assert [m.content for m in result.messages if m.role == "tool"] == ["charged", "already charged"]


@example("docs/reliability.md: Interrupts (KeyboardInterrupt) [1]")
async def _reliability_interrupt(doc: Doc) -> None:
    @tool
    async def stop(which: str) -> str:
        """Stops the process (a Ctrl-C of the tool's own)."""
        raise KeyboardInterrupt

    def answer(request: LLMRequest) -> Any:
        last = request.messages[-1]
        if last.content == "stop":
            return [ToolCall("c1", "stop", {"which": "now"})]
        return f"answer to {last.content}"

    agent = Agent(ScriptedProvider(answer), tools=[stop])

    async def main() -> None:
        await agent.run_many(["one", "stop", "three"], concurrency=1)

    # a program's own anyio.run: in a worker thread, off the test's event loop
    namespace = await doc.run({"anyio": anyio, "main": main, "results_of": results_of}, thread=True)
    results = namespace["results"]
    assert len(results) == 3 and results[0].content == "answer to one", results


@example("docs/resilience.md: The recommended stack [1]")
async def _resilience_chain_one_line(doc: Doc) -> None:
    await _readme_chain_one_line(doc)


@example("docs/resilience.md: The recommended stack [2]")
async def _resilience_chain_spelled_out(doc: Doc) -> None:
    await _readme_chain_spelled_out(doc)


@example("docs/resilience.md: Example")
async def _resilience_example(doc: Doc) -> None:
    await _readme_resilient_example(doc)


# --- docs/serve.md -------------------------------------------------------------------------------------


def echo_agent(name: str = "assistant") -> Agent[str]:
    return Agent(ScriptedProvider(lambda request: f"{name}: {request.messages[-1].content}"), name=name)


@asynccontextmanager
async def served(app: Any, probe: str = "/") -> AsyncIterator[str]:
    async with serving(app, load_example("service_starlette"), probe=probe) as base:
        yield base


@example("docs/serve.md: The runtime")
async def _serve_runtime(doc: Doc) -> None:
    given = {
        "Runtime": Runtime,
        "Agent": Agent,
        "asynccontextmanager": asynccontextmanager,
        "Starlette": Starlette,
        "Mount": Mount,
        "openai_app": openai_app,
        "provider": ScriptedProvider(lambda request: "from the bound agent"),
    }
    namespace = await doc.run(given, replace=[("tools=[...]", "tools=[]")])  # a placeholder for the agent's tools
    async with served(namespace["app"], probe="/openai/v1/models") as base, httpx.AsyncClient(base_url=base) as client:
        body = {"model": "assistant", "messages": [{"role": "user", "content": "Hello"}]}
        answer = (await client.post("/openai/v1/chat/completions", json=body)).json()
    assert answer["choices"][0]["message"]["content"] == "from the bound agent", answer


@example("docs/serve.md: OpenAI-compatible API [1]")
async def _serve_openai_app(doc: Doc) -> None:
    namespace = await doc.run({"agent": echo_agent("assistant"), "other": echo_agent("researcher")})
    async with served(namespace["app"], probe="/v1/models") as base, httpx.AsyncClient(base_url=base) as client:
        models = (await client.get("/v1/models", headers={"Authorization": "Bearer sk-local-1"})).json()
        refused = await client.get("/v1/models")
    assert [m["id"] for m in models["data"]] == ["assistant", "researcher"] and refused.status_code == 401


@example("docs/serve.md: OpenAI-compatible API [2]")
async def _serve_openai_client(doc: Doc) -> None:
    app = openai_app({"assistant": echo_agent("assistant")}, api_keys=["sk-local-1"])  # the block above's
    async with served(app, probe="/v1/models") as base:
        await doc.run(replace=[("http://127.0.0.1:8000", base)], thread=True)  # a sync client: in a worker thread
    assert doc.out() == "assistant: Hello\nassistant: Hello", "the answer, then the same streamed"


@example("docs/serve.md: Conversations kept by the server: `X-Session-Id`")
async def _serve_openai_sessions(doc: Doc) -> None:
    provider = ScriptedProvider(lambda request: f"{len(request.messages)} messages")
    app = openai_app({"assistant": Agent(provider, name="assistant")}, api_keys=["sk-local-1"], sessions=True)
    async with served(app, probe="/v1/models") as base:
        await doc.run({"OpenAI": OpenAI}, replace=[("http://127.0.0.1:8000", base)], thread=True)
    assert [[m.content for m in r.messages] for r in provider.requests] == [
        ["Weather in Bergen?"],
        ["Weather in Bergen?", "1 messages", "And in Oslo?"],
    ], "the second turn goes on with the first's history, kept by the server"


def _mcp_given() -> str:
    """What the MCP blocks take from their surroundings: `agent`, `search` and `word_count`, as source."""
    return textwrap.dedent(
        """
        from agentactors import Agent, ScriptedProvider, tool

        agent = Agent(ScriptedProvider(lambda request: "assistant: " + request.messages[-1].content), name="assistant")
        search = Agent(ScriptedProvider(lambda request: "found it"), name="search")

        @tool
        def word_count(text: str) -> int:
            "Count the words of a text."
            return len(text.split())
        """
    )


@example("docs/serve.md: MCP server [1]")
async def _serve_mcp_server(doc: Doc) -> None:
    given: dict[str, Any] = {}
    exec(_mcp_given(), given)
    namespace = await doc.run(given)
    async with Client(namespace["server"]) as client:  # in-process
        tools = [t.name for t in (await client.list_tools()).tools]
        counted = await client.call_tool("word_count", {"text": "one two three"})
    assert tools == ["assistant", "search", "word_count"], tools
    assert counted.content[0].text == "3"  # type: ignore[union-attr]


@example("docs/serve.md: MCP server [2]")
async def _serve_mcp_stdio(doc: Doc) -> None:
    # (mcp.client.stdio is imported at the top, not under capsys: its client binds sys.stderr when imported.)
    # the program Claude Desktop would launch: the block above and this one, as printed, in a process of its own
    program = "\n".join([_mcp_given(), BLOCKS["docs/serve.md: MCP server [1]"].source, doc.block.source])
    params = StdioServerParameters(command=sys.executable, args=["-c", program], cwd=str(doc.cwd))
    async with Client(params) as client:
        result = await client.call_tool("assistant", {"input": "Hello"})
        counted = await client.call_tool("word_count", {"text": "one two three"})
    assert result.content[0].text == "assistant: Hello"  # type: ignore[union-attr]
    assert counted.content[0].text == "3"  # type: ignore[union-attr]


@example("docs/serve.md: MCP server [3]")
async def _serve_mcp_client(doc: Doc) -> None:
    given: dict[str, Any] = {}
    exec(_mcp_given(), given)
    app = mcp_server([given["agent"]], name="my-agents").streamable_http_app()
    async with served(app, probe="/mcp") as base:
        await doc.run(replace=[("http://127.0.0.1:8000", base)])
    assert doc.out() == "assistant: Hello\n"


@example("docs/serve.md: AG-UI [1]")
async def _serve_agui_app(doc: Doc) -> None:
    namespace = await doc.run({"agent": echo_agent(), "SqliteStore": SqliteStore})
    body = {"threadId": "t1", "runId": "r1", "messages": [{"id": "m1", "role": "user", "content": "Hello"}]}
    async with served(namespace["app"], probe="/") as base, httpx.AsyncClient(base_url=base) as client:
        events = (await client.post("/", json=body)).text
    assert '"TEXT_MESSAGE_CONTENT"' in events and '"RUN_FINISHED"' in events, events


@example("docs/serve.md: AG-UI [2]")
async def _serve_agui_client(doc: Doc) -> None:
    async with served(agui_app(echo_agent()), probe="/") as base:
        await doc.run(replace=[("http://127.0.0.1:8000", base)], thread=True)
    assert doc.out() == "assistant: Hello"


@example("docs/serve.md: Answering it: `resume` (with `sessions=True`)")
async def _serve_agui_resume(doc: Doc) -> None:
    moved: list[int] = []

    @tool(requires_approval=True)
    def transfer(amount: int) -> str:
        """Move money (a person approves each call)."""
        moved.append(amount)
        return f"moved {amount}"

    provider = ScriptedProvider([[ToolCall("call-9", "transfer", {"amount": 5})], "Moved 5."])
    agent = Agent(provider, tools=[transfer], name="bank")
    async with Runtime() as rt, served(agui_app(agent, runtime=rt, sessions=True), probe="/") as base:
        asked = [("http://127.0.0.1:8000", base), ('input(f"{interrupt[\'message\']} -- approve? [y/N] ")', '"y"')]
        await doc.run(replace=asked, thread=True)
    assert doc.out() == "RUN_FINISHED\n" and moved == [5], "the person's yes ran the call"


@example("docs/serve.md: Tracing")
async def _serve_tracing(doc: Doc) -> None:
    namespace = await doc.run({"Runtime": Runtime, "openai_app": openai_app, "agent": echo_agent()})
    exporter = InMemorySpanExporter()
    namespace["tracer_provider"].add_span_processor(SimpleSpanProcessor(exporter))
    body = {"model": "assistant", "messages": [{"role": "user", "content": "Hello"}]}
    async with namespace["rt"]:  # a runtime= is the caller's to enter (the block says so); unentered, runs fail
        async with served(namespace["app"], probe="/v1/models") as base, httpx.AsyncClient(base_url=base) as client:
            answer = (await client.post("/v1/chat/completions", json=body)).json()
    assert answer["choices"][0]["message"]["content"] == "assistant: Hello"
    names = [span.name for span in exporter.get_finished_spans()]
    assert any(n.startswith("invoke_agent") for n in names) and any(n.startswith("POST") for n in names), names


@example("docs/actors.md: Events and the record")
async def _actors_otel_batch(doc: Doc) -> None:
    exporter = InMemorySpanExporter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        namespace = await doc.run({"Runtime": Runtime, "exporter": exporter})
        try:
            async with namespace["rt"]:
                await echo_agent().run("Hello")
            assert namespace["tracer_provider"].force_flush()
        finally:
            namespace["tracer_provider"].shutdown()
    assert [s.name for s in exporter.get_finished_spans()] == ["chat", "invoke_agent assistant"]
    assert not [w for w in caught if "SimpleSpanProcessor" in str(w.message)], "a BatchSpanProcessor: no warning"


# --- docs/sessions.md, docs/settings.md ------------------------------------------------------------------


@example("docs/sessions.md: Sessions")
async def _sessions_intro(doc: Doc) -> None:
    namespace = await doc.run({"agent": echo_agent("support"), "user_id": 42})
    assert namespace["result"].content == "support: Where is my order?"
    assert [m.content for m in namespace["session"].history] == ["Where is my order?", "support: Where is my order?"]


@example("docs/sessions.md: Approvals that pause")
async def _sessions_approvals(doc: Doc) -> None:
    @tool(requires_approval=True)
    async def refund(order: str) -> str:
        """Refund an order."""
        return f"refunded {order}"

    provider = scripted([ToolCall("call-id", "refund", {"order": "42"})], "Refunded order 42.")
    async with Runtime() as rt:
        session = rt.session(Agent(provider, tools=[refund]), "user-42")
        namespace = await doc.run({"session": session})
    assert namespace["result"].content == "Refunded order 42.", namespace["result"].error


@example("docs/settings.md: Settings")
async def _settings_settings(doc: Doc) -> None:
    async with FakeVendor() as vendor:
        namespace = await doc.run(vendor=vendor)
        (request,) = vendor.requests
    assert namespace["result"].error is None, namespace["result"].error
    assert request.body is not None
    sent = {k: request.body.get(k) for k in ("seed", "temperature", "max_completion_tokens", "reasoning_effort")}
    # gpt-5.1 takes a temperature only while its effort is "none" (docs/settings.md): this run's "low" drops it
    assert sent == {"seed": 7, "temperature": None, "max_completion_tokens": 800, "reasoning_effort": "low"}, sent


@example("docs/settings.md: Content parts")
async def _settings_parts(doc: Doc) -> None:
    namespace = await doc.run({"png_bytes": png()})
    message = namespace["message"]
    assert message.content == "Does the chart match the report?"
    assert len(message.parts) == 3 and len(message.media) == 2


# --- docs/testing.md -----------------------------------------------------------------------------------


@example("docs/testing.md: `ScriptedProvider` [1]")
async def _testing_scripted_list(doc: Doc) -> None:
    namespace = await doc.run()
    assert namespace["result"].content == "Order 17 has shipped.", namespace["result"].error
    assert namespace["failed"].error.status == 529
    assert doc.out().splitlines() == ["Order 17 has shipped.", "2 1", "order 17: shipped", "transient 529"]


@example("docs/testing.md: `ScriptedProvider` [2]")
async def _testing_scripted_callable(doc: Doc) -> None:
    await doc.run()
    assert doc.out() == "you said: hi echo echo-1\n"


@example("docs/testing.md: `ScriptedProvider` [3]")
async def _testing_scripted_stream_cut(doc: Doc) -> None:
    await doc.run()
    assert doc.out().splitlines() == ["Hello there.", "'The answer is' 3"]


@example("docs/testing.md: `ScriptedProvider` [4]")
async def _testing_scripted_declarations(doc: Doc) -> None:
    await doc.run()
    assert doc.out().splitlines() == ["request 0", "new lookup"]


@example("docs/wire.md: Configuring the cloud endpoints [1]")
async def _wire_responses(doc: Doc) -> None:
    async with FakeVendor() as vendor:
        await doc.run(vendor=vendor)
        assert [(r.wire, r.path) for r in vendor.requests] == [("responses", "/v1/responses")]
    assert doc.out() == "Echo: Say hello.\n"


@example("docs/wire.md: Configuring the cloud endpoints [2]")
async def _wire_azure(doc: Doc) -> None:
    doc.monkeypatch.setenv("AZURE_AD_TOKEN", "entra-doc-example-token")
    async with FakeVendor() as vendor:
        await doc.run(vendor=vendor)
        sent = [(r.wire, r.path.split("?")[0], "api-key" in r.headers, "authorization" in r.headers)
                for r in vendor.requests]
    assert sent == [  # the first with its key, the second with the Entra token
        ("openai", "/openai/deployments/gpt-4o-prod/chat/completions", True, False),
        ("responses", "/openai/v1/responses", False, True),
    ], sent
    assert doc.out() == "Echo: Say hello.\n" * 2


@example("docs/wire.md: Configuring the cloud endpoints [3]")
async def _wire_bedrock(doc: Doc) -> None:
    async with FakeVendor() as vendor:
        await doc.run(vendor=vendor)
        assert [r.wire for r in vendor.requests] == ["bedrock"]
        assert "authorization" in vendor.requests[0].headers  # signed (the record keeps no credential)
    assert doc.out() == "Echo: Say hello.\n"


@example("docs/wire.md: Configuring the cloud endpoints [4]")
async def _wire_vertex(doc: Doc) -> None:
    """Gemini on Google's default credentials as printed: a service-account key file whose token endpoint is local."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    from tests.support.echo_vendor import EchoVendor

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption()).decode()
    for name in ("GOOGLE_CLOUD_PROJECT", "ANTHROPIC_VERTEX_PROJECT_ID", "GOOGLE_CLOUD_LOCATION", "CLOUD_ML_REGION"):
        doc.monkeypatch.delenv(name, raising=False)
    doc.monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    doc.monkeypatch.setenv("GOOGLE_ACCESS_TOKEN", "ya29.doc-example-claude")
    async with EchoVendor(access_token="ya29.doc-example-gemini") as tokens, FakeVendor() as vendor:
        account = doc.cwd / "service-account.json"
        account.write_text(json.dumps({
            "type": "service_account", "project_id": "sa-proj", "private_key_id": "kid", "private_key": pem,
            "client_email": "sa@sa-proj.iam.gserviceaccount.com", "client_id": "1",
            "token_uri": f"{tokens.base_url}/token",
        }))
        doc.monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(account))
        url = repr(vendor.base_url)
        await doc.run(replace=[('location="us-central1")', f'location="us-central1", base_url={url})'),
                               ('region="us-east5",', f'region="us-east5", base_url={url},')])
        sent = [r.path.split(":")[0] for r in vendor.requests]
        assert len(tokens.token_requests) == 1, "Gemini's token came from the key file, as printed"
    assert sent == [
        "/v1/projects/my-proj-123/locations/us-central1/publishers/google/models/gemini-2.5-flash",
        "/v1/projects/my-proj-123/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929",
    ], sent
    assert doc.out() == "Echo: Say hello.\n" * 2


@example("docs/testing.md: Wires and URLs")
async def _testing_wires(doc: Doc) -> None:
    namespace = await doc.run()
    paths = [r.path.split("?")[0] for r in namespace["fv"].requests]
    assert doc.out().splitlines() == [
        "['openai', 'responses', 'openai', 'anthropic', 'anthropic', 'gemini', 'gemini', 'bedrock']"
    ]
    assert paths == [
        "/v1/chat/completions",
        "/v1/responses",
        "/openai/deployments/prod-chat/chat/completions",
        "/v1/messages",
        "/v1/projects/p/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5:rawPredict",
        "/v1beta/models/gemini-2.5-flash:generateContent",
        "/v1/projects/p/locations/us-central1/publishers/google/models/gemini-2.5-flash:generateContent",
        "/model/us.amazon.nova-pro-v1%3A0/converse",
    ], paths


@example("docs/testing.md: Scripting answers [1]")
async def _testing_script(doc: Doc) -> None:
    namespace = await doc.run()
    assert doc.out().splitlines() == ["429 transient 2.0", "Bonjour.", "Paris.", "Echo: Hello 0"]
    assert [(r.wire, r.status) for r in namespace["fv"].requests] == [
        ("anthropic", 429), ("anthropic", 200), ("openai", 200), ("openai", 200)
    ]


@example("docs/testing.md: Scripting answers [2]")
async def _testing_auto_tools(doc: Doc) -> None:
    namespace = await doc.run()
    lines = doc.out().splitlines()
    assert lines[0] == "[('get_weather', {'city': 'example'})]", lines
    assert lines[1].startswith('Here is what the tools said (get_weather: {"city": "example", ') and lines[1].endswith(
        "That answers: Weather in Lisbon?"
    ), lines
    assert lines[2] == 'get_weather {"city": "example", "celsius": 21}', lines
    assert namespace["result"].steps == 2


@example("docs/testing.md: What it records")
async def _testing_records(doc: Doc) -> None:
    await doc.run()
    assert doc.out().splitlines() == [
        "[REDACTED] True ()",
        "Be brief. What is in the picture? 300",
        "{'temperature': 0.2}",
        "image url https://example.com/cat.png",
    ]


@example("docs/testing.md: HTTPS")
async def _testing_https(doc: Doc) -> None:
    authority = TestAuthority(doc.cwd)  # ca.pem, server.pem, server.key in the example's directory
    doc.monkeypatch.setenv("SSL_CERT_FILE", "")  # restored after the test (the block sets it)
    # A path of this test's own: the providers' TLS context is made once per value of SSL_CERT_FILE.
    namespace = await doc.run(replace=[('"ca.pem"', repr(str(authority.ca_file)))])
    assert doc.out().splitlines() == ["https", "Echo: Hello"]
    assert namespace["fv"].requests[0].outcome == "ok"


@example("docs/testing.md: `FaultPlan`")
async def _testing_fault_plan(doc: Doc) -> None:
    namespace = await doc.run()
    printed = doc.out().splitlines()
    # The expected lines are the block's own comments: what it prints is what it says it prints.
    said = [line.removeprefix("# ") for line in doc.block.source.splitlines() if line.startswith("# ")]
    assert printed == said, printed
    assert namespace["fv"].stats["faults"] == {k.value: 2 for k in namespace["FaultKind"]}
    # "the same on every wire": the block's own loop, on the other wires' providers (529 is Anthropic's alone)
    outcome, kinds = namespace["outcome"], namespace["FaultKind"]
    async with FakeVendor() as fv:
        others = [
            OpenAIProvider("gpt-4.1", api_key="test-key", base_url=fv.openai_base_url, timeout=0.5),
            OpenAIResponsesProvider("gpt-4.1", api_key="test-key", base_url=fv.openai_base_url, timeout=0.5),
            GeminiProvider("gemini-2.5-flash", api_key="test-key", base_url=fv.base_url, timeout=0.5),
            BedrockProvider("us.amazon.nova-pro-v1:0", region="us-east-1", access_key_id="AKIDEXAMPLE",
                            secret_access_key="test-secret", base_url=fv.base_url, timeout=0.5),
        ]
        for provider in others:
            async with provider:
                for kind in kinds:
                    fv.faults = namespace["FaultPlan"](rate=1.0, seed=7, weights={kind: 1}, hang=2)
                    line = f"{kind} | {await outcome(provider, False)} | {await outcome(provider, True)}"
                    assert line == next(s for s in said if s.startswith(f"{kind} ")).replace("529", "503"), line


@example("docs/testing.md: Outages")
async def _testing_outages(doc: Doc) -> None:
    namespace = await doc.run()
    assert doc.out().splitlines() == ["503 transient outage", "False Echo: Hello"]
    assert [r.fault for r in namespace["fv"].requests] == ["outage", None]


@example("docs/testing.md: Virtual time")
async def _testing_virtual_time(doc: Doc) -> None:
    started = anyio.current_time()
    await doc.run(thread=True)  # anyio.run, on each backend: in a thread of its own
    assert doc.out().splitlines() == ["asyncio ('ok', 30.0)", "trio ('ok', 30.0)"]
    assert anyio.current_time() - started < 20, "30 virtual seconds, twice, in far less real time"


_PYTEST_RUNS: dict[str, str] = {}


async def _pytest_section(doc: Doc) -> None:
    """The conftest and the test module of "pytest", as files of a project of their own, run by pytest (once)."""
    if "out" not in _PYTEST_RUNS:
        conftest, module = (BLOCKS[f"docs/testing.md: pytest [{n}]"].source for n in (1, 2))
        (doc.cwd / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
        (doc.cwd / "conftest.py").write_text(conftest, encoding="utf-8")
        (doc.cwd / "test_service.py").write_text(module, encoding="utf-8")
        argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", "-rA"]
        done = await anyio.run_process(argv, cwd=doc.cwd, check=False, stderr=-2)
        _PYTEST_RUNS["out"] = done.stdout.decode()
    out = _PYTEST_RUNS["out"]
    for name in ("test_the_retry_waits_what_the_vendor_asks", "test_the_provider_speaks_the_wire"):
        for backend in ("asyncio", "trio"):
            assert f"PASSED test_service.py::{name}[{backend}]" in out, out
    assert "4 passed" in out and "warning" not in out, out


@example("docs/testing.md: pytest [1]")
async def _testing_pytest_conftest(doc: Doc) -> None:
    await _pytest_section(doc)


@example("docs/testing.md: pytest [2]")
async def _testing_pytest_module(doc: Doc) -> None:
    await _pytest_section(doc)


@example("docs/testing.md: Recipe: testing a resilient chain")
async def _testing_recipe(doc: Doc) -> None:
    namespace = await doc.run()
    await namespace["test_the_chain_fails_over_to_openai"]()


def user(text: str) -> LLMRequest:
    return LLMRequest([Message.user(text)])


@pytest.mark.parametrize("key", sorted(EXAMPLES))
async def test_example_runs_as_printed(key: str, doc: Doc) -> None:
    try:
        await EXAMPLES[key](doc)
    finally:
        await doc.close()
