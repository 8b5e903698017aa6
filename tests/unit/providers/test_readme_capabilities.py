"""The README's provider table says what ``provider.capabilities(model)`` answers, cell by cell.

Each row of the table is read from README.md; for each claim a cell makes (the phrase it must contain), the
models it names are put to ``capabilities()``: a table edited without the code, or the code without the
table, fails here.  No network: capabilities are read from the wires' model tables.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from agentactors import AnthropicProvider, AzureOpenAIProvider, GeminiProvider, OpenAIProvider, OpenAIResponsesProvider
from agentactors.providers.port import Capabilities
from tests.support.paths import ROOT

COLUMNS = ("provider", "forced tool choice", "JSON-schema response format", "media", "`parallel_tool_calls`")
COMPAT = "http://127.0.0.1:9/v1"  # any base_url that is not OpenAI's


def _table() -> dict[str, dict[str, str]]:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    header = "| " + " | ".join(COLUMNS) + " |"
    start = lines.index(header)
    rows: dict[str, dict[str, str]] = {}
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split(" | ")]
        assert len(cells) == len(COLUMNS), line
        rows[cells[0].split("`")[1]] = dict(zip(COLUMNS, cells, strict=True))
    return rows


def _bedrock() -> Any:
    from agentactors.providers.bedrock.provider import BedrockProvider

    return BedrockProvider(
        "amazon.nova-pro-v1:0", region="us-east-1", access_key_id="AKIAEXAMPLE", secret_access_key="x"
    )


Flag = Callable[[Capabilities], bool]
FTC: Flag = lambda c: c.forced_tool_choice  # noqa: E731
RF: Flag = lambda c: c.response_format  # noqa: E731
PTC: Flag = lambda c: c.parallel_tool_calls  # noqa: E731

# (row, column, phrases the cell says, the provider, the flag, models where it holds, models where it does not)
CLAIMS: list[tuple[str, str, tuple[str, ...], Callable[[], Any], Flag, tuple[str, ...], tuple[str, ...]]] = [
    ("OpenAIProvider", "forced tool choice", ("not `o1-mini` / `o1-preview`",), lambda: OpenAIProvider(api_key="k"),
     FTC, ("gpt-4o", "gpt-4.1-mini", "o1", "o3-mini", "gpt-5"), ("o1-mini", "o1-preview")),
    ("OpenAIProvider", "forced tool choice", ("behind another `base_url` only with `carries_forced_tool_choice=True`",),
     lambda: OpenAIProvider(api_key="k", base_url=COMPAT), FTC, (), ("gpt-4o", "llama-3.3-70b")),
    ("OpenAIProvider", "forced tool choice", ("`carries_forced_tool_choice=True`",),
     lambda: OpenAIProvider(api_key="k", base_url=COMPAT, carries_forced_tool_choice=True), FTC,
     ("gpt-4o", "llama-3.3-70b"), ("o1-mini",)),
    ("OpenAIProvider", "JSON-schema response format", ("not before `gpt-4o-2024-08-06`", "`o1-mini` / `o1-preview`"),
     lambda: OpenAIProvider(api_key="k"), RF, ("gpt-4o-2024-08-06", "gpt-4o", "gpt-4o-mini", "o1", "gpt-5"),
     ("gpt-4o-2024-05-13", "gpt-4-turbo", "gpt-4", "gpt-3.5-turbo", "o1-mini", "o1-preview")),
    ("OpenAIProvider", "JSON-schema response format",
     ("behind another `base_url` only with `carries_response_format=True`",),
     lambda: OpenAIProvider(api_key="k", base_url=COMPAT), RF, (), ("gpt-4o", "llama-3.3-70b")),
    ("OpenAIProvider", "JSON-schema response format", ("`carries_response_format=True`",),
     lambda: OpenAIProvider(api_key="k", base_url=COMPAT, carries_response_format=True), RF,
     ("gpt-4o", "llama-3.3-70b"), ("gpt-3.5-turbo",)),
    ("OpenAIProvider", "`parallel_tool_calls`", ("sent",), lambda: OpenAIProvider(api_key="k"), PTC,
     ("gpt-4o", "o3-mini"), ()),
    ("OpenAIResponsesProvider", "forced tool choice", ("not `o1-mini` / `o1-preview`",),
     lambda: OpenAIResponsesProvider(api_key="k"), FTC, ("gpt-4o", "o3-mini"), ("o1-mini", "o1-preview")),
    ("OpenAIResponsesProvider", "JSON-schema response format", ("same models",),
     lambda: OpenAIResponsesProvider(api_key="k"), RF, ("gpt-4o-2024-08-06", "o1"),
     ("gpt-4o-2024-05-13", "gpt-3.5-turbo", "o1-mini")),
    ("OpenAIResponsesProvider", "`parallel_tool_calls`", ("sent",), lambda: OpenAIResponsesProvider(api_key="k"), PTC,
     ("gpt-4o",), ()),
    ("AzureOpenAIProvider", "forced tool choice", ("as OpenAI's",),
     lambda: AzureOpenAIProvider("d", endpoint="https://x.openai.azure.com", api_key="k"), FTC,
     ("gpt-4o",), ("o1-mini",)),
    ("AzureOpenAIProvider", "JSON-schema response format", ("as OpenAI's",),
     lambda: AzureOpenAIProvider("d", endpoint="https://x.openai.azure.com", api_key="k"), RF,
     ("gpt-4o",), ("gpt-4o-2024-05-13", "o1-mini")),
    ("AnthropicProvider", "forced tool choice", ("nor on `*-thinking` models",), lambda: AnthropicProvider(api_key="k"),
     FTC, ("claude-sonnet-4-5", "claude-3-5-haiku-latest"), ("claude-3-7-sonnet-thinking",)),
    ("AnthropicProvider", "JSON-schema response format", ("from Claude 4.5 on", "not Claude 3, Sonnet 4, Opus 4 / 4.1"),
     lambda: AnthropicProvider(api_key="k"), RF, ("claude-sonnet-4-5", "claude-haiku-4-5", "claude-opus-4-5"),
     ("claude-3-5-sonnet-latest", "claude-3-haiku-20240307", "claude-sonnet-4-0", "claude-opus-4-0",
      "claude-opus-4-1")),
    ("AnthropicProvider", "`parallel_tool_calls`", ("as `disable_parallel_tool_use`",),
     lambda: AnthropicProvider(api_key="k"), PTC, ("claude-sonnet-4-5",), ()),
    ("GeminiProvider", "forced tool choice", ("not on Gemini 1.0 / Gemma / 2.0 Flash Thinking",),
     lambda: GeminiProvider(api_key="k"), FTC, ("gemini-2.5-pro", "gemini-2.0-flash", "gemini-1.5-pro"),
     ("gemini-1.0-pro", "gemma-3-27b-it", "gemini-2.0-flash-thinking-exp")),
    ("GeminiProvider", "JSON-schema response format", ("not on Gemini 1.x / Gemma / 2.0 Flash Thinking",),
     lambda: GeminiProvider(api_key="k"), RF, ("gemini-2.0-flash", "gemini-2.5-pro", "gemini-3-pro-preview"),
     ("gemini-1.0-pro", "gemini-1.5-pro", "gemma-3-27b-it", "gemini-2.0-flash-thinking-exp")),
    ("GeminiProvider", "`parallel_tool_calls`", ("dropped",), lambda: GeminiProvider(api_key="k"), PTC,
     (), ("gemini-2.5-pro",)),
    ("BedrockProvider", "forced tool choice", ("`any` for Claude, Nova and Mistral Large", "none for the others"),
     _bedrock, FTC,
     ("anthropic.claude-sonnet-4-5-20250929-v1:0", "amazon.nova-pro-v1:0", "mistral.mistral-large-2407-v1:0"),
     ("meta.llama3-70b-instruct-v1:0", "cohere.command-r-plus-v1:0", "mistral.mistral-7b-instruct-v0:2")),
    ("BedrockProvider", "JSON-schema response format", ("on Claude 4.5 on",), _bedrock, RF,
     ("anthropic.claude-sonnet-4-5-20250929-v1:0", "us.anthropic.claude-sonnet-4-5-20250929-v1:0"),
     ("anthropic.claude-3-5-sonnet-20240620-v1:0", "amazon.nova-pro-v1:0", "meta.llama3-70b-instruct-v1:0")),
    ("BedrockProvider", "`parallel_tool_calls`", ("dropped",), _bedrock, PTC,
     (), ("anthropic.claude-sonnet-4-5-20250929-v1:0",)),
]

# (row, phrases of its media cell, the provider, {model: the media kinds it takes})
MEDIA: list[tuple[str, tuple[str, ...], Callable[[], Any], dict[str, frozenset[str]]]] = [
    ("OpenAIProvider", ("images, PDFs (vision models)", "audio (`gpt-audio`)"), lambda: OpenAIProvider(api_key="k"),
     {"gpt-4o": frozenset({"image", "document"}), "gpt-audio": frozenset({"image", "document", "audio"}),
      "o1-mini": frozenset()}),
    ("OpenAIResponsesProvider", ("images, PDFs",), lambda: OpenAIResponsesProvider(api_key="k"),
     {"gpt-4o": frozenset({"image", "document"}), "gpt-audio": frozenset({"image", "document"})}),
    ("AzureOpenAIProvider", ('audio on `api="chat"`',),
     lambda: AzureOpenAIProvider("d", endpoint="https://x.openai.azure.com", api_key="k"),
     {"gpt-audio": frozenset({"image", "document", "audio"})}),
    ("AnthropicProvider", ("images, PDFs",), lambda: AnthropicProvider(api_key="k"),
     {"claude-sonnet-4-5": frozenset({"image", "document"})}),
    ("GeminiProvider", ("images, PDFs, audio", "none on Gemini 1.0"), lambda: GeminiProvider(api_key="k"),
     {"gemini-2.5-pro": frozenset({"image", "document", "audio"}), "gemini-1.0-pro": frozenset()}),
]


@pytest.mark.parametrize(("row", "column", "phrases", "make", "flag", "yes", "no"), CLAIMS)
def test_each_claim_of_the_table_is_what_capabilities_answers(
    row: str, column: str, phrases: tuple[str, ...], make: Callable[[], Any], flag: Flag,
    yes: tuple[str, ...], no: tuple[str, ...],
) -> None:
    cell = _table()[row][column]
    for phrase in phrases:
        assert phrase in cell, f"README's {row} / {column} no longer says {phrase!r}: {cell}"
    provider = make()
    assert [m for m in yes if not flag(provider.capabilities(m))] == []
    assert [m for m in no if flag(provider.capabilities(m))] == []


@pytest.mark.parametrize(("row", "phrases", "make", "kinds"), MEDIA)
def test_the_media_column_is_what_capabilities_answers(
    row: str, phrases: tuple[str, ...], make: Callable[[], Any], kinds: dict[str, frozenset[str]]
) -> None:
    cell = _table()[row]["media"]
    for phrase in phrases:
        assert phrase in cell, f"README's {row} media cell no longer says {phrase!r}: {cell}"
    provider = make()
    assert {m: frozenset(provider.capabilities(m).media) for m in kinds} == kinds


def test_azure_responses_takes_no_audio() -> None:
    provider = AzureOpenAIProvider("d", endpoint="https://x.openai.azure.com", api_key="k", api="responses")
    assert "audio" not in provider.capabilities("gpt-audio").media


def test_every_provider_of_the_table_is_checked() -> None:
    assert set(_table()) == {c[0] for c in CLAIMS} | {m[0] for m in MEDIA} | {"BedrockProvider"}
