"""mcp_server in process (the SDK's in-memory connection): what each tool lists and answers."""

from __future__ import annotations

import datetime
import json
from typing import Any, Literal

import anyio
import attrs
import jsonschema
import pydantic
import pytest
from mcp import Client

from agentactors import Agent, NativeOutput, ScriptedProvider, ToolDenied, tool
from agentactors.errors import ErrorKind, ProviderError
from agentactors.serve import mcp_server

pytestmark = pytest.mark.anyio


@attrs.frozen
class Verdict:
    label: str
    score: float


@tool
def search(query: str, limit: int = 3) -> dict[str, Any]:
    """Search the catalogue.

    :param query: what to look for.
    """
    return {"query": query, "hits": [f"{query}-{i}" for i in range(limit)]}


@tool
def guarded(path: str) -> str:
    """Read a file, or refuse."""
    raise ToolDenied(f"{path} is outside the workspace")


def hello(name: str) -> str:
    """Greet someone."""
    return f"hello {name}"


async def test_tools_keep_their_schemas_and_agents_take_input() -> None:
    agent = Agent(ScriptedProvider(["ok"]), name="helper")
    async with Client(mcp_server([agent, search, hello])) as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
    assert list(listed) == ["helper", "search", "hello"]
    assert listed["search"].input_schema == search.parameters
    assert listed["search"].description == search.description
    assert listed["helper"].input_schema["required"] == ["input"]
    assert listed["hello"].input_schema["properties"] == {"name": {"type": "string"}}


async def test_an_agents_answer_is_text_and_a_typed_one_also_structured() -> None:
    text_agent = Agent(ScriptedProvider(["plain answer"]), name="text")
    typed = Agent(ScriptedProvider(['{"label": "spam", "score": 0.9}']), output_type=Verdict, name="typed")
    agents: dict[str, Agent[Any]] = {"text": text_agent, "judge": typed}
    async with Client(mcp_server(agents)) as client:
        plain = await client.call_tool("text", {"input": "hi"})
        judged = await client.call_tool("judge", {"input": "is it spam?"})
    assert not plain.is_error and plain.content[0].text == "plain answer"  # type: ignore[union-attr]
    assert plain.structured_content is None
    assert not judged.is_error and judged.structured_content == {"label": "spam", "score": 0.9}


async def test_a_tools_result_and_failures() -> None:
    async with Client(mcp_server([search, guarded])) as client:
        found = await client.call_tool("search", {"query": "tea", "limit": 2})
        assert found.structured_content == {"query": "tea", "hits": ["tea-0", "tea-1"]}
        invalid = await client.call_tool("search", {"limit": "many"})
        assert invalid.is_error and "query" in invalid.content[0].text  # type: ignore[union-attr]
        denied = await client.call_tool("guarded", {"path": "/etc/passwd"})
        assert denied.is_error and denied.content[0].text == "/etc/passwd is outside the workspace"  # type: ignore[union-attr]


async def test_a_failing_run_is_an_is_error_result_with_a_concise_message() -> None:
    failure = ProviderError("quota exhausted for this key", provider="vendor", kind=ErrorKind.account)
    agent = Agent(ScriptedProvider([failure]), name="broke")
    async with Client(mcp_server([agent])) as client:
        result = await client.call_tool("broke", {"input": "hi"})
        missing = await client.call_tool("broke", {})
    assert result.is_error
    text = result.content[0].text  # type: ignore[union-attr]
    # told by its kind, never by the vendor's text (which may carry its endpoint's URL or an account)
    assert "account" in text and "quota exhausted" not in text and "Traceback" not in text and len(text) <= 500
    assert missing.is_error and "input" in missing.content[0].text  # type: ignore[union-attr]


def test_what_cannot_be_offered() -> None:
    with pytest.raises(ValueError, match="needs a name"):
        mcp_server([Agent(ScriptedProvider(["x"]))])
    with pytest.raises(ValueError, match="two tools named"):
        mcp_server([search, search])
    with pytest.raises(TypeError):
        mcp_server([42])  # type: ignore[list-item]
    with pytest.raises(ValueError):
        mcp_server([])


moved: list[int] = []


@tool(requires_approval=True)
def transfer(amount: int) -> str:
    """Move money (a person approves each call)."""
    moved.append(amount)
    return f"moved {amount}"


def test_a_tool_that_needs_approval_is_refused_not_run_unapproved() -> None:
    # Called directly over MCP, nobody could approve it: it would run on the client's word alone.
    for offered in ([search, transfer], {"pay": transfer}, [tool(requires_approval=True, approval="wait")(hello)]):
        with pytest.raises(ValueError, match="requires_approval") as refused:
            mcp_server(offered)  # type: ignore[arg-type]
        assert "inside an agent" in str(refused.value)
        assert ("'transfer'" in str(refused.value)) or ("'hello'" in str(refused.value)), refused.value
    assert moved == []


async def test_an_agent_that_pauses_for_approval_says_so_and_one_cancelled_too() -> None:
    from agentactors import Runtime, ToolCall
    from tests.unit.serve.test_hostile_requests import RunIds

    moved.clear()
    bank = Agent(ScriptedProvider(lambda r: [ToolCall("c1", "transfer", {"amount": 5})]), tools=[transfer], name="bank")
    async with Client(mcp_server([bank])) as client:
        paused = await client.call_tool("bank", {"input": "pay"})
    text = paused.content[0].text  # type: ignore[union-attr]
    assert paused.is_error and "paused" in text and "1 tool call(s) (transfer)" in text and "approval" in text, text
    assert "run " in text and "no answer" not in text
    assert moved == []

    asked = anyio.Event()

    async def hang(request: Any) -> str:
        asked.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    runs = RunIds()
    async with Runtime(recorders=[runs]) as rt:
        slow = Agent(ScriptedProvider(hang), name="slow")
        results: list[Any] = []
        async with Client(mcp_server([slow], runtime=rt)) as client:

            async def call() -> None:
                results.append(await client.call_tool("slow", {"input": "hi"}))

            async with anyio.create_task_group() as tg:
                tg.start_soon(call)
                with anyio.fail_after(20):
                    await asked.wait()
                rt.run_ref(runs.ids[-1]).cancel()  # an operator, or the runtime draining at shutdown
    cancelled = results[0]
    text = cancelled.content[0].text
    assert cancelled.is_error and "cancelled in the server" in text and "no answer" not in text, text


async def test_a_runtime_nobody_entered_is_run_for_the_servers_lifetime() -> None:
    from agentactors import Runtime

    rt = Runtime()
    agent = Agent(ScriptedProvider(["from the runtime"]), name="helper")
    async with Client(mcp_server([agent], runtime=rt)) as client:
        assert rt.running
        answer = await client.call_tool("helper", {"input": "hi"})
    assert not answer.is_error and answer.content[0].text == "from the runtime"  # type: ignore[union-attr]
    assert rt.closed


async def test_a_closed_runtime_fails_the_servers_startup_saying_so() -> None:
    from agentactors import Runtime

    async with Runtime() as rt:
        pass
    with pytest.raises(RuntimeError, match="given as runtime= has closed"):
        async with Client(mcp_server([Agent(ScriptedProvider(["x"]), name="helper")], runtime=rt)):
            pass


async def test_an_agents_tool_takes_input_alone_and_a_typed_answer_is_its_json_text_too() -> None:
    # An argument the agent's tool does not read is refused, as a @tool's is, not dropped: a caller (often a
    # model) that sent {"input", "language"} would read an answer that ignored half its request as an answer to it.
    from agentactors import ToolCall

    typed = Agent(
        ScriptedProvider([ToolCall("c1", "final_result", {"label": "ham", "score": 0.1})]),
        output_type=Verdict,
        name="judge",
    )
    async with Client(mcp_server([typed])) as client:
        listed = (await client.list_tools()).tools[0]
        extra = await client.call_tool("judge", {"input": "spam?", "language": "fr"})
        judged = await client.call_tool("judge", {"input": "spam?"})
    assert listed.input_schema.get("additionalProperties") is False
    assert extra.is_error and "language" in extra.content[0].text  # type: ignore[union-attr]
    # Under the output-tool strategy the run's text is empty: the text content is the value's JSON (MCP asks a
    # tool with structured content to give it as text too, for clients that read text only).
    assert judged.structured_content == {"label": "ham", "score": 0.1}
    assert json.loads(judged.content[0].text) == {"label": "ham", "score": 0.1}  # type: ignore[union-attr]


# --- typed agents: an outputSchema, and structured content that conforms to it -------------------------------


@attrs.frozen
class Refusal:
    reason: str


class Visit(pydantic.BaseModel):
    day: datetime.date
    tags: set[str] = set()
    rooms: int | None = None


class Aliased(pydantic.BaseModel):
    day_of: int = pydantic.Field(alias="dayOf")


class Renamed(pydantic.BaseModel):
    """Serialised under another name than its schema gives the field (a serializer of the user's own)."""

    day_of: int = pydantic.Field(alias="dayOf")

    @pydantic.model_serializer
    def _out(self) -> dict[str, Any]:
        return {"day": self.day_of}


@attrs.frozen
class Holder:
    inner: Renamed


TYPED_OUTPUTS: list[tuple[Any, str, Any, bool]] = [
    # output type, the model's answer, the value's JSON, whether the structured content wraps it in {"result": ...}
    (Verdict, '{"label": "spam", "score": 0.9}', {"label": "spam", "score": 0.9}, False),
    (Visit, '{"day": "2026-05-01", "tags": ["a"]}', {"day": "2026-05-01", "tags": ["a"], "rooms": None}, False),
    (Aliased, '{"dayOf": 3}', {"dayOf": 3}, False),  # by its aliases, as its schema names the fields
    (Verdict | Refusal, '{"reason": "no"}', {"reason": "no"}, False),
    (dict[str, int], '{"a": 1}', {"a": 1}, False),
    (int, "42", 42, True),
    (list[str], '["x", "y"]', ["x", "y"], True),
    (Literal["ham", "spam"], '"ham"', "ham", True),
    (Verdict | None, '{"response": null}', None, True),
    (NativeOutput(str), '{"response": "hello"}', "hello", True),
]


@pytest.mark.parametrize(("output_type", "answer", "value", "wrapped"), TYPED_OUTPUTS)
async def test_a_typed_agent_declares_an_object_output_schema_its_structured_content_conforms_to(
    output_type: Any, answer: str, value: Any, wrapped: bool
) -> None:
    # MCP 2025-06-18+: a tool's outputSchema lets a client validate and consume its structured content, and a tool
    # declaring one must return structured content that conforms.  The SDK's client checks it on every call (a
    # RuntimeError otherwise); the schema's root is an object (required through 2025-11-25), so an output that is
    # not one is wrapped as {"result": ...}, as the spec recommends.  The text content stays the value's JSON.
    typed = Agent(ScriptedProvider([answer]), output_type=output_type, name="typed")
    plain = Agent(ScriptedProvider(["plain"]), name="plain")
    async with Client(mcp_server([typed, plain, search])) as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
        result = await client.call_tool("typed", {"input": "go"})
    schema = listed["typed"].output_schema
    assert schema is not None and schema["type"] == "object"
    assert listed["plain"].output_schema is None, "a text answer declares no structure"
    assert not result.is_error, result.content
    expected = {"result": value} if wrapped else value
    assert result.structured_content == expected
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.validate(result.structured_content, schema, cls=jsonschema.Draft202012Validator)
    if wrapped:
        assert schema["required"] == ["result"] and set(schema["properties"]) == {"result"}
    assert json.loads(result.content[0].text) == value  # type: ignore[union-attr]


async def test_a_typed_agents_failure_is_an_error_without_structured_content() -> None:
    # A tool with an outputSchema answers an error as isError (which clients do not validate): no structure to fake.
    failure = ProviderError("the vendor is down", provider="vendor", kind=ErrorKind.request)
    typed = Agent(ScriptedProvider([failure]), output_type=Verdict, name="typed")
    async with Client(mcp_server([typed])) as client:
        result = await client.call_tool("typed", {"input": "go"})
    assert result.is_error and result.structured_content is None


async def test_an_answer_that_would_not_fit_the_declared_schema_is_an_error_not_content_a_client_refuses() -> None:
    # A value rendered other than its schema says (a serializer of the user's renaming a field, inside another
    # class) would make a client's check fail with an exception of the SDK's: the server says so as an isError.
    typed = Agent(ScriptedProvider(['{"inner": {"dayOf": 3}}']), output_type=Holder, name="typed")
    async with Client(mcp_server([typed])) as client:
        result = await client.call_tool("typed", {"input": "go"})
    assert result.is_error and "outputSchema" in result.content[0].text  # type: ignore[union-attr]
