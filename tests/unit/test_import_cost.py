"""``import agentactors`` loads what every program needs, not the heavy corners only some programs use.

How long the import takes is measured (benchmarks/_coldstart.py), not asserted: timings on a shared machine
are noise.  What is asserted, in a fresh interpreter each time, is the cause: the heavy modules a top-level
import would bring back.  httpx (with rich and click, which its command line imports when they are installed)
was most of the import, asyncio the next; each is imported where it is used — httpx when an HTTP provider is
made, asyncio by the program that runs on it.  The vendors' providers but OpenAI's and the batch API are
served by the package root on first use; reading one imports its module then, and gives the very object the
module defines.
"""

from __future__ import annotations

import json
import subprocess
import sys

import httpx
import pytest

import agentactors
import agentactors.providers
import agentactors.providers.http
import agentactors.providers.http.provider as http_provider

# Modules `import agentactors` must not load (by what it would cost, or what it belongs to).
HEAVY = (
    "httpx",  # the HTTP client: imported by a provider's first request
    "httpx_sse",  # imports httpx; its decoder is taken by the first stream
    "rich",  # httpx's command line, when installed
    "click",
    "asyncio",  # the asyncio backend: loaded by the program that runs on it, not by this package
    "trio",
    "tenacity",  # with_retry's engine: imported by its first call
    "urllib.request",  # proxies from the environment: read when a provider makes its pool
    "http.client",
    "email.utils",  # HTTP dates: parsed when a vendor sends one
    "ssl",
    "importlib.abc",  # importlib.resources with it
    "sqlite3",  # SqliteStore's and SqliteJournal's driver: imported when one is first named
    "socket",  # the PostgreSQL glue's: likewise
    "hashlib",  # a long output tool name's digest, a session's origin (through secrets), when first made
    "random",  # with_retry's jitter: imported when a retrying provider is made
    "jsonschema",
    "aiohttp",
)
# What the root serves on first use, and the modules that would come with each.
SERVED = {
    "AnthropicProvider": "agentactors.providers.anthropic.provider",
    "AzureOpenAIProvider": "agentactors.providers.azure",
    "BatchProvider": "agentactors.resilience.batch",
    "BedrockProvider": "agentactors.providers.bedrock.provider",
    "GeminiProvider": "agentactors.providers.gemini.provider",
    "OpenAIResponsesProvider": "agentactors.providers.responses.provider",
    "PostgresJournal": "agentactors.journal.postgres",
    "PostgresStore": "agentactors.sessions.postgres",
    "SqliteJournal": "agentactors.journal.sqlite",
    "SqliteStore": "agentactors.sessions.sqlite",
}


def _fresh(code: str) -> object:
    """What ``code`` (run in a new interpreter, after ``import agentactors``) prints as JSON."""
    out = subprocess.run(
        [sys.executable, "-c", "import json, sys\nimport agentactors\n" + code],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_importing_agentactors_loads_none_of_the_heavy_modules() -> None:
    loaded = _fresh(f"print(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))")
    assert loaded == []


def test_making_an_http_provider_imports_httpx_so_its_first_request_does_not() -> None:
    seen = _fresh(
        "before = 'httpx' in sys.modules\n"
        "agentactors.OpenAIProvider('gpt-4o-mini', api_key='sk-test', base_url='http://127.0.0.1:9/v1')\n"
        "print(json.dumps([before, 'httpx' in sys.modules]))"
    )
    assert seen == [False, True]


def test_the_names_served_on_first_use_are_not_imported_with_the_package() -> None:
    loaded = _fresh(
        f"homes = {sorted(SERVED.values())!r}\n"
        "print(json.dumps(sorted(h for h in homes if h in sys.modules)))"
    )
    assert loaded == []


def test_a_served_name_is_imported_when_first_read_and_bound_from_then_on() -> None:
    seen = _fresh(
        "home = 'agentactors.providers.anthropic.provider'\n"
        "before = home in sys.modules or 'AnthropicProvider' in vars(agentactors)\n"
        "from agentactors import AnthropicProvider\n"
        "same = AnthropicProvider is sys.modules[home].AnthropicProvider\n"
        "print(json.dumps([before, same, vars(agentactors)['AnthropicProvider'] is AnthropicProvider,\n"
        "                  repr(AnthropicProvider), 'AnthropicProvider' in dir(agentactors)]))"
    )
    assert seen == [False, True, True, "<class 'agentactors.AnthropicProvider'>", True]


def test_a_served_class_reports_the_package_whichever_import_loaded_it() -> None:
    """Imported through its own module (the root never asked), the class still says agentactors.X."""
    seen = _fresh(
        "from agentactors.providers import AzureOpenAIProvider\n"
        "from agentactors.resilience.batch import BatchProvider\n"
        "print(json.dumps([AzureOpenAIProvider.__module__, BatchProvider.__module__,\n"
        "                  'AzureOpenAIProvider' in vars(agentactors)]))"
    )
    assert seen == ["agentactors", "agentactors", False]


@pytest.mark.parametrize(("name", "home"), sorted(SERVED.items()))
def test_a_served_name_is_the_object_its_module_defines(name: str, home: str) -> None:
    import importlib

    obj = getattr(agentactors, name)
    assert obj is getattr(importlib.import_module(home), name)
    assert obj.__module__ == "agentactors"


def test_the_providers_package_serves_its_providers_on_first_use_too() -> None:
    for name in ("AzureOpenAIProvider", "BedrockProvider", "OpenAIResponsesProvider"):
        assert getattr(agentactors.providers, name) is getattr(agentactors, name)
        assert name in dir(agentactors.providers)
    with pytest.raises(AttributeError, match=r"module 'agentactors\.providers' has no attribute 'NoSuchProvider'"):
        agentactors.providers.NoSuchProvider  # noqa: B018


def test_the_default_timeout_is_one_httpx_timeout_made_when_first_read() -> None:
    timeout = agentactors.providers.http.DEFAULT_TIMEOUT
    assert timeout == httpx.Timeout(connect=15.0, read=600.0, write=60.0, pool=60.0)
    assert timeout is http_provider.DEFAULT_TIMEOUT is agentactors.providers.http.DEFAULT_TIMEOUT
    from agentactors.providers.http import DEFAULT_TIMEOUT

    assert DEFAULT_TIMEOUT is timeout


def test_the_packages_serving_stores_and_journals_serve_them_on_first_use_too() -> None:
    seen = _fresh(
        "import agentactors.journal, agentactors.sessions\n"
        "homes = ['agentactors.sessions.sqlite', 'agentactors.sessions.postgres', 'agentactors.journal.sqlite',\n"
        "         'agentactors.journal.postgres']\n"
        "before = [h for h in homes if h in sys.modules]\n"
        "from agentactors.sessions import PostgresStore, SqliteStore\n"
        "from agentactors.journal import PostgresJournal, SqliteJournal\n"
        "print(json.dumps([before, [h for h in homes if h in sys.modules] == homes,\n"
        "                  SqliteStore is agentactors.SqliteStore, SqliteJournal is agentactors.SqliteJournal,\n"
        "                  'SqliteStore' in dir(agentactors.sessions), 'PostgresJournal' in dir(agentactors.journal)]))"
    )
    assert seen == [[], True, True, True, True, True]


def test_a_store_served_by_its_subpackage_is_labelled_as_the_root_labels_it() -> None:
    seen = _fresh(
        "from agentactors.sessions import SqliteStore\n"
        "from agentactors.journal import PostgresJournal\n"
        "print(json.dumps([repr(SqliteStore), repr(PostgresJournal)]))"
    )
    assert seen == ["<class 'agentactors.SqliteStore'>", "<class 'agentactors.PostgresJournal'>"]
