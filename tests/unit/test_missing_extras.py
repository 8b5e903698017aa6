"""A feature used without its extra says so where the user wrote it; the core install is whole.

``pip install agentactors`` installs the core only (anyio, httpx, attrs, tenacity, httpx-sse, jsonschema, h11).  A
feature whose extra is missing must raise, at the import or call the user wrote, an :class:`ImportError` whose
message names ``pip install 'agentactors[<extra>]'`` — never a bare ``No module named 'mcp'`` from deep inside,
never an error of another type later (agentactors._extras gives them one shape).  And with every optional module
missing, ``import agentactors`` (and its providers, testing and serve packages) works and a FakeVendor-backed run
succeeds.

Each case runs in a fresh interpreter (``sys.executable -c``) whose import system cannot find the named
top-level modules, as when they are not installed (tests/support/no_extras.py).
"""

from __future__ import annotations

import tomllib

import pytest

from agentactors._extras import EXTRAS, import_extra, missing_extra, needs_extra
from tests.support.no_extras import OPTIONAL, run_without
from tests.support.paths import ROOT

_RAY = """
import anyio
from agentactors.ray import RayCluster  # importing it needs no ray (documented)

async def main():
    async with RayCluster(object, workers=1):
        pass

anyio.run(main)
"""

_JITER = """
import anyio
import attrs
from agentactors import Agent, ScriptedProvider

@attrs.frozen
class Ticket:
    number: int

async def main():
    Agent(ScriptedProvider([]), output_type=Ticket).stream("x").partial_output()

anyio.run(main)
"""

_BEDROCK = """
from agentactors import BedrockProvider
BedrockProvider("us.anthropic.claude-sonnet-4-5-20250929-v1:0", region="us-east-1", access_key_id="AKIAEXAMPLE",
                secret_access_key="secret")
"""

_GEMINI_VERTEX = """
from agentactors import GeminiProvider
GeminiProvider.vertex("gemini-2.5-flash", project="p", location="us-central1")
"""

_ANTHROPIC_VERTEX = """
from agentactors import AnthropicProvider
AnthropicProvider.vertex("claude-sonnet-4-5", project="p", region="us-east5")
"""

_POSTGRES_STORE = """
import anyio
from agentactors.sessions import PostgresStore

async def main():
    await PostgresStore("postgresql://user@127.0.0.1:1/db").load("conversation")

anyio.run(main)
"""

_AIOHTTP = """
import anyio
from agentactors import OpenAIProvider
from agentactors.messages import LLMRequest, Message

async def main():
    async with OpenAIProvider("m", api_key="k", base_url="http://127.0.0.1:1/v1") as provider:
        await provider.complete(LLMRequest([Message.user("hi")]))

anyio.run(main)
"""

#: (blocked top-level modules, the code a user writes, the extra the error must name)
MISSING = [
    pytest.param(("mcp", "mcp_types"), "import agentactors.mcp", "mcp", id="mcp-import"),
    pytest.param(("mcp", "mcp_types"), "from agentactors.mcp import MCPServerStdio", "mcp", id="mcp-from"),
    pytest.param("mcp_types", "from agentactors.mcp import MCPServerHTTP", "mcp", id="mcp-partly-installed"),
    pytest.param("httpx2", "from agentactors.mcp import MCPServerHTTP", "mcp", id="mcp-without-its-httpx2"),
    pytest.param(("mcp", "mcp_types"), "from agentactors.serve import mcp_server", "mcp", id="serve-mcp_server"),
    pytest.param(("mcp", "mcp_types"), "import agentactors.serve.mcp", "mcp", id="serve-mcp-module"),
    pytest.param("opentelemetry", "import agentactors.otel", "otel", id="otel-import"),
    pytest.param("opentelemetry", "from agentactors.otel import OTelRecorder", "otel", id="otel-from"),
    pytest.param("ray", _RAY, "ray", id="ray-cluster-entered"),
    pytest.param("jiter", _JITER, "jiter", id="jiter-partial-output"),
    pytest.param("botocore", _BEDROCK, "bedrock", id="bedrock-provider"),
    pytest.param("google", _GEMINI_VERTEX, "vertex", id="gemini-vertex-without-token-provider"),
    pytest.param("google", _ANTHROPIC_VERTEX, "vertex", id="anthropic-vertex-without-token-provider"),
    pytest.param("psycopg", _POSTGRES_STORE, "postgres", id="postgres-store"),
    pytest.param("trio", "from agentactors.testing import virtual_backends; virtual_backends()", "testing",
                 id="testing-virtual-backends"),
    pytest.param("aiohttp", "import agentactors.providers.http.aiohttp_transport", "aiohttp",
                 id="aiohttp-sender-module"),
]


@pytest.mark.parametrize(("blocked", "code", "extra"), MISSING)
def test_a_missing_extra_is_an_import_error_naming_it(blocked: tuple[str, ...] | str, code: str, extra: str) -> None:
    result = run_without(blocked, code)
    assert not result["ok"], f"no error without {blocked}"
    assert result["import_error"], result
    assert f"pip install 'agentactors[{extra}]'" in result["message"], result


def test_the_aiohttp_sender_asked_for_but_missing_is_an_import_error_naming_it() -> None:
    """``AGENTACTORS_HTTP_TRANSPORT=aiohttp`` without aiohttp: the first request says what to install."""
    result = run_without(("aiohttp", "yarl", "multidict"), _AIOHTTP, env={"AGENTACTORS_HTTP_TRANSPORT": "aiohttp"})
    assert result["import_error"], result
    assert "pip install 'agentactors[aiohttp]'" in result["message"], result


def test_prices_without_the_table_are_none_as_documented() -> None:
    """Without genai-prices a model has no price unless one is set (docs/costs.md): ``None``, not an error; the
    ``agentactors.pricing`` logger says once, at INFO, which extra would give it one."""
    result = run_without(
        "genai_prices",
        """
        import logging
        from agentactors import pricing

        class Kept(logging.Handler):
            def __init__(self):
                super().__init__()
                self.lines = []

            def emit(self, record):
                self.lines.append((record.levelno, record.getMessage()))

        kept = Kept()
        logging.getLogger("agentactors.pricing").addHandler(kept)
        logging.getLogger("agentactors.pricing").setLevel(logging.INFO)
        assert pricing.price_for("openai", "gpt-4o") is None
        assert pricing.price_for("openai", "gpt-4.1") is None
        assert [level for level, _ in kept.lines] == [logging.INFO], kept.lines
        assert "pip install 'agentactors[prices]'" in kept.lines[0][1], kept.lines
        pricing.set_price("openai", "gpt-4o", pricing.Price(input=2.5, output=10.0))
        assert pricing.price_for("openai", "gpt-4o") is not None
        """,
    )
    assert result["ok"], result


def test_the_demo_without_rich_prints_plain_lines() -> None:
    """``python -m agentactors demo`` on the core install (no rich: the [cli] extra): plain lines, even on a
    terminal, and the run succeeds."""
    result = run_without(
        OPTIONAL,
        """
        import io, os, tempfile
        from agentactors._demo.view import PlainView, make_view

        class Terminal(io.StringIO):
            def isatty(self):
                return True

        assert isinstance(make_view(file=Terminal()), PlainView)
        from agentactors.__main__ import main
        record = os.path.join(tempfile.mkdtemp(), "events.jsonl")
        assert main(["demo", "--agents", "10", "--no-progress", "--record", record]) == 0
        """,
    )
    assert result["ok"], result
    assert "goodput" in result["stdout"]


def test_the_core_install_is_whole() -> None:
    """Every optional module missing: the packages import, FakeVendor serves, an agent's run succeeds."""
    result = run_without(
        OPTIONAL,
        """
        import sys
        import anyio
        import agentactors, agentactors.providers, agentactors.testing, agentactors.serve, agentactors.ray
        import agentactors.serve.asgi
        from agentactors.serve import agui_app, lifespan, openai_app
        from agentactors import Agent, OpenAIProvider
        from agentactors.testing import FakeReply, FakeVendor

        async def main():
            async with FakeVendor() as fv:
                fv.script(FakeReply("hello from the core"))
                agent = Agent(OpenAIProvider("gpt-4o-mini", api_key="k", base_url=fv.openai_base_url))
                result = await agent.run("hi")
            assert result.error is None, result.error
            assert result.output == "hello from the core", result.output

        anyio.run(main)

        import dataclasses
        from agentactors import ScriptedProvider

        @dataclasses.dataclass
        class Ticket:
            number: int

        Agent(ScriptedProvider([]), output_type=Ticket)  # typed output: pydantic is never imported for it
        """,
    )
    assert result["ok"], result


def test_the_pytest_plugin_loads_on_the_core_install() -> None:
    """The ``pytest11`` entry point is loaded by every pytest run of a project that installs agentactors."""
    result = run_without(tuple(m for m in OPTIONAL if m != "hypothesis"), "import agentactors.testing.pytest_plugin")
    assert result["ok"], result


# --- the helper itself ---------------------------------------------------------------------------------------


def test_every_extra_named_is_one_of_pyproject() -> None:
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    assert set(EXTRAS) <= set(declared)
    assert set(declared) - set(EXTRAS) == {"dev", "bench"}, "a new extra: say in EXTRAS what it installs"


def test_the_error_keeps_the_missing_modules_name_and_says_what_to_install() -> None:
    cause = ModuleNotFoundError("No module named 'mcp'", name="mcp")
    error = missing_extra("agentactors.mcp", "mcp", cause)
    assert type(error) is ModuleNotFoundError and error.name == "mcp"
    assert str(error) == (
        "agentactors.mcp needs the mcp SDK (2.x): pip install 'agentactors[mcp]' (No module named 'mcp')"
    )
    wrong_version = ImportError("cannot import name 'Client' from 'mcp'", name="mcp")
    assert type(missing_extra("agentactors.mcp", "mcp", wrong_version)) is ImportError


def test_a_missing_module_of_agentactors_itself_is_not_called_a_missing_extra() -> None:
    with pytest.raises(ModuleNotFoundError) as caught:
        with needs_extra("mcp", "agentactors.mcp"):
            raise ModuleNotFoundError("No module named 'agentactors.mcp._gone'", name="agentactors.mcp._gone")
    assert "pip install" not in str(caught.value)
    with pytest.raises(ModuleNotFoundError, match=r"needs the mcp SDK .*agentactors\[mcp\]") as caught:
        with needs_extra("mcp", "agentactors.mcp"):
            raise ModuleNotFoundError("No module named 'mcp'", name="mcp")
    assert caught.value.name == "mcp" and isinstance(caught.value.__cause__, ModuleNotFoundError)
    with pytest.raises(ValueError, match="unrelated"):
        with needs_extra("mcp", "agentactors.mcp"):
            raise ValueError("unrelated")
    with pytest.raises(KeyError):
        needs_extra("mpc", "a typo")


def test_import_extra_imports_or_says_which_extra() -> None:
    assert import_extra("json", "jiter", "x").__name__ == "json"
    with pytest.raises(ModuleNotFoundError, match=r"partial JSON needs jiter: pip install 'agentactors\[jiter\]'"):
        import_extra("agentactors_no_such_module_anywhere", "jiter", "partial JSON")
    with pytest.raises(ModuleNotFoundError) as caught:
        import_extra("agentactors.no_such_module", "jiter", "partial JSON")
    assert "pip install" not in str(caught.value)


@pytest.mark.parametrize(("example", "backend", "said"), [
    ("serve_all", "trio", "serving on trio needs hypercorn: pip install hypercorn"),
    ("serve_all", "asyncio", "serving on asyncio needs uvicorn: pip install uvicorn"),
    ("service_starlette", "asyncio", "this example is served by hypercorn: pip install hypercorn"),
])
def test_an_example_server_missing_says_what_to_install(example: str, backend: str, said: str) -> None:
    """The servers of the service examples are the examples' (not dependencies of the library): checked from a
    wheel with the extras, ``serve_all.py --backend trio`` ended in ``ModuleNotFoundError: hypercorn``."""
    result = run_without(
        ("hypercorn", "uvicorn"),
        f"""
        import sys
        sys.path.insert(0, "examples")
        import anyio
        from {example} import serve
        try:
            anyio.run(serve, object(), 0, backend={backend!r})
        except SystemExit as exc:
            print(exc.code)
        """,
    )
    assert result["ok"], result
    assert said in result["stdout"], result
