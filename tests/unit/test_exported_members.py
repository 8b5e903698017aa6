"""``agentactors.__all__`` is the user API, the package's own, reported as ``agentactors.X``; plumbing is not in it.

Like httpx's ``tests/test_exported_members.py``: every exported name exists, is public and is defined in the
package; nothing public at the root is left out of ``__all__``.  The exported classes and functions report
``agentactors`` as their module, and the rest of this file proves that the relabelling breaks none of what
reads ``__module__``: pickling (Ray will move results and errors between processes), copying,
``attrs.evolve``, ``typing.get_type_hints`` and ``inspect.signature``.  The contract's other names are bound at
the root unlisted, under their own module (tests/unit/test_public_api.py lists them); names that left the root
stay importable from it for one release, with a DeprecationWarning naming their module.
"""

from __future__ import annotations

import ast
import copy
import enum
import importlib
import inspect
import pickle
import pickletools
import typing
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

import attrs
import pytest

import agentactors
from agentactors import (
    AllProvidersFailedError,
    Audio,
    CachePolicy,
    Capabilities,
    CircuitOpenError,
    Complete,
    Document,
    ErrorKind,
    Event,
    ExecuteTools,
    Image,
    LLMRequest,
    LLMResponse,
    Message,
    ModelSettings,
    ProviderError,
    ProviderTimeout,
    ReasoningDelta,
    ResultCeiling,
    RunResult,
    RunState,
    StopReason,
    Stream,
    StreamEnd,
    StreamInterruptedError,
    Text,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    ToolChoice,
    ToolContext,
    ToolResult,
    ToolSpec,
    ToolStatus,
    ToolStatusError,
    UnsupportedContentError,
    UnsupportedSettingError,
    UnsupportedToolChoiceError,
    Usage,
    errors,
    events,
    sessions,
    tool,
)
from agentactors._deprecate import MOVED_NAMES
from agentactors.actors import RuntimeStats
from agentactors.errors import MalformedResponseError
from agentactors.loop.pause import PausedRun
from agentactors.providers.scripted import ScriptExhaustedError, StreamCut
from agentactors.resilience import CircuitState, CircuitStats
from agentactors.tools import ToolNameClashError, ToolsetError
from agentactors.tools.executor import ExecutionContext
from tests.unit.test_public_api import UNLISTED as CONTRACT_UNLISTED

# The root's unlisted names: the contract's, and the errors a live run's control raises (docs/loop.md), which users
# write beside the run's other errors (``from agentactors import RunFinishedError``).
UNLISTED = CONTRACT_UNLISTED | {
    "RunFinishedError", "RunNotFoundError", "RunInterruptedError", "CallNotPendingError", "PauseConsumedError",
}

PACKAGE_DIR = Path(agentactors.__file__).parent
EXPORTED = [name for name in agentactors.__all__ if name != "__version__"]
# Names that left the root, and the module each is imported from now (kept at the root for one release).
MOVED_OUT: dict[str, str] = {
    # plumbing, since the typed-events issue
    "EventSink": "agentactors.events",
    "FanOut": "agentactors.events",
    "emit": "agentactors.events",
    "classify_exception": "agentactors.providers",
    "classify_http_error": "agentactors.providers",
    # machinery and detail, since the structure issue
    "StreamEvent": "agentactors.messages",
    "ScriptExhaustedError": "agentactors.providers.scripted",
    "StreamCut": "agentactors.providers.scripted",
    "MalformedResponseError": "agentactors.errors",
    "DelegationError": "agentactors.errors",
    "SessionFormatError": "agentactors.errors",
    "redact": "agentactors.redaction",
    "register_secret": "agentactors.redaction",
    "CircuitState": "agentactors.resilience",
    "CircuitStats": "agentactors.resilience",
    "Toolset": "agentactors.tools",
    "ToolsetError": "agentactors.tools",
    "ToolNameClashError": "agentactors.tools",
    "RuntimeStats": "agentactors.actors",
    "ExecutionContext": "agentactors.tools.executor",
    **{
        family: "agentactors.events"
        for family in ("ActorEvent", "BreakerEvent", "FallbackEvent", "LLMEvent", "OutputEvent", "ProviderEvent",
                       "RetryEvent", "RunEvent", "SessionEvent", "StepEvent", "ToolEvent")
    },
    "AgentTool": "agentactors.agent",
    "Handoff": "agentactors.agent",
    "PausedRun": "agentactors.loop.pause",
    "SessionRecord": "agentactors.sessions",
}


def _exported(kind: Callable[[object], bool]) -> list[str]:
    return sorted(name for name in EXPORTED if kind(getattr(agentactors, name)))


def _is_class_or_function(obj: object) -> bool:
    return isinstance(obj, type) or inspect.isfunction(obj)


# --- the shape of __all__ -------------------------------------------------------------------------


def test_all_has_no_duplicates() -> None:
    duplicates = sorted({name for name in agentactors.__all__ if agentactors.__all__.count(name) > 1})
    assert not duplicates


def test_every_exported_name_exists_and_is_public() -> None:
    for name in agentactors.__all__:
        assert name in vars(agentactors), f"{name} is in __all__ but not bound in the package"
        assert not name.startswith("_") or name == "__version__", f"{name} is private"


def _top_level_definitions() -> dict[str, list[str]]:
    """name -> the package modules that define it at top level (class, def or assignment), read with ast."""
    defined: dict[str, list[str]] = {}
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        module = ".".join(parts)
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            names: list[str] = []
            if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                names = [node.name]
            elif isinstance(node, ast.Assign):
                names = [t.id for t in node.targets if isinstance(t, ast.Name)]
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                names = [node.target.id]
            for name in names:
                defined.setdefault(name, []).append(module)
    return defined


def test_every_exported_member_is_defined_in_the_package() -> None:
    """Defined by one of the package's submodules (not re-exported from a dependency), and that very object."""
    defined = _top_level_definitions()
    for name in EXPORTED:
        obj = getattr(agentactors, name)
        homes = [m for m in defined.get(name, ()) if m != "agentactors" and m != "agentactors.__main__"]
        assert any(getattr(importlib.import_module(m), name, None) is obj for m in homes), (
            f"{name} is not defined by any agentactors submodule (candidates: {homes})"
        )


def test_exported_classes_and_functions_report_the_package_as_their_module() -> None:
    for name in _exported(_is_class_or_function):
        obj = getattr(agentactors, name)
        assert obj.__module__ == "agentactors", f"{name} reports {obj.__module__}"
        # pickle finds a class or function again by module + qualified name: they must name the export.
        assert obj.__qualname__ == name, f"{name} is exported under another name than its own ({obj.__qualname__})"
    assert repr(agentactors.Runtime) == "<class 'agentactors.Runtime'>"
    assert repr(agentactors.ProviderError("boom", provider="p", kind="transient")).startswith("ProviderError(")


def test_no_public_root_name_is_missing_from_all() -> None:
    """Submodules aside (``agentactors.events`` is bound by importing it), every public root name is exported,
    or is one of the contract's names kept at the root unlisted."""
    public = {
        name
        for name, value in vars(agentactors).items()
        if not name.startswith("_") and not isinstance(value, ModuleType)
    }
    assert public == set(EXPORTED) | UNLISTED


def test_the_unlisted_names_keep_their_own_module() -> None:
    """Only the listed names are relabelled: the machinery says where it is defined (an old error name is the
    listed class itself, relabelled under its new name)."""
    listed = [getattr(agentactors, name) for name in EXPORTED]
    for name in UNLISTED:
        obj = getattr(agentactors, name)
        if any(obj is other for other in listed):
            assert obj.__name__ != name and obj.__module__ == "agentactors", name
        elif isinstance(obj, type) or inspect.isfunction(obj):
            assert obj.__module__ != "agentactors", name
            assert getattr(importlib.import_module(obj.__module__), obj.__qualname__) is obj


def test_the_moved_names_are_the_deprecation_table() -> None:
    """agentactors._deprecate holds every moved name; this file's table says the same of the root."""
    root = {old.removeprefix("agentactors."): home for old, home in MOVED_NAMES.items() if old.count(".") == 1}
    assert root == MOVED_OUT


def test_type_checkers_see_every_name_that_left_the_root() -> None:
    """The root's ``if TYPE_CHECKING:`` imports are the moved names, so a user's checker accepts what still runs."""
    tree = ast.parse((PACKAGE_DIR / "__init__.py").read_text(encoding="utf-8"))
    guarded = next(
        node for node in tree.body if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
    )
    seen = {alias.asname for node in guarded.body if isinstance(node, ast.ImportFrom) for alias in node.names}
    assert seen == set(MOVED_OUT)


# --- the plumbing that left __all__ ---------------------------------------------------------------


@pytest.mark.parametrize(("name", "home"), sorted(MOVED_OUT.items()))
def test_a_name_that_left_all_is_importable_from_the_root_with_a_warning(name: str, home: str) -> None:
    assert name not in agentactors.__all__
    assert name not in vars(agentactors), "bound at the root, so __getattr__ (and its warning) never runs"
    with pytest.warns(DeprecationWarning, match=rf"agentactors\.{name} is deprecated: import it from {home}\b") as w:
        obj = getattr(agentactors, name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # the home may itself be an alias after a move
        assert obj is getattr(importlib.import_module(home), name)
    assert obj.__module__ != "agentactors", "plumbing keeps the name of the module that defines it"
    assert w[0].filename == __file__, "the warning points at the importing line"


def test_the_from_import_form_warns_too() -> None:
    with pytest.warns(DeprecationWarning, match="import it from agentactors.events"):
        from agentactors import emit
    from agentactors.events import emit as home

    assert emit is home


def test_an_unknown_root_name_is_an_attribute_error_without_a_warning() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(AttributeError, match="module 'agentactors' has no attribute 'no_such_name'"):
            agentactors.no_such_name  # type: ignore[attr-defined]  # noqa: B018  (the point: mypy says so too)
        assert not hasattr(agentactors, "no_such_name")


def test_a_submodule_is_still_imported_by_from_import() -> None:
    """``from agentactors import testing`` asks the root first; its __getattr__ must let the import go on."""
    from agentactors import testing

    assert testing is importlib.import_module("agentactors.testing")


def test_star_import_is_the_user_api_and_does_not_warn() -> None:
    namespace: dict[str, Any] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        exec("from agentactors import *", namespace)
    assert set(namespace) - {"__builtins__"} == set(agentactors.__all__)


# --- what reads __module__ keeps working ----------------------------------------------------------

_ERROR = ProviderError("vendor down", provider="openai", kind="transient", model="m", status=503, request_id="r1")
_REQUEST = LLMRequest([Message.system("be brief"), Message.user("hi")], model="m", max_tokens=10)
_CALL = ToolCall("call_1", "lookup", {"q": "x"}, raw_arguments='{"q": "x"}')
_RESPONSE = LLMResponse("hello", (_CALL,), StopReason.tool_use, Usage(3, 4), model="m", provider="openai")

# One instance of every exported attrs class and exception class, built from simple arguments.
SAMPLES: dict[str, Callable[[], object]] = {
    # data
    "LLMRequest": lambda: _REQUEST,
    "LLMResponse": lambda: _RESPONSE,
    "Message": lambda: Message.assistant("on it", tool_calls=[_CALL]),
    "ToolCall": lambda: _CALL,
    "ToolChoice": lambda: ToolChoice.tool("lookup"),
    "ToolSpec": lambda: ToolSpec("lookup", "Look it up.", {"type": "object", "properties": {}}),
    "Usage": lambda: Usage(1, 2, 3, 4, 5),
    "Cost": lambda: agentactors.Cost(0.5, 0.25),
    # content parts and model settings
    "Text": lambda: Text("look"),
    "Image": lambda: Image(data=b"\x89PNG\r\n\x1a\n" + b"\0" * 8),
    "Document": lambda: Document(data=b"%PDF-1.4\n<< /Type /Pages /Count 2 >>", title="r"),
    "Audio": lambda: Audio(b"ID3" + b"\0" * 8),
    "CachePolicy": lambda: CachePolicy(tools=False, retention="extended"),
    "ModelSettings": lambda: ModelSettings(temperature=0.5, stop="END", cache=True, extra={"openai": {"n": 1}}),
    # providers, tools
    "Capabilities": lambda: Capabilities(forced_tool_choice=True, media=frozenset({"image"})),
    "ResultCeiling": lambda: ResultCeiling(1000, narrow_by=("limit",)),
    "ToolResult": lambda: ToolResult("call_1", "lookup", ToolStatus.ok, "42", 2, 0.5),
    "ToolContext": lambda: ToolContext("call_1", "lookup", run_id="run-1", agent="a", step=1),
    # runs, events
    "RunState": lambda: RunState("run-1", 2, (ToolCall("c1", "lookup", {"q": 1}),), Usage(3, 4), "a"),
    "RunResult": lambda: RunResult(
        "hello",
        [Message.user("hi"), Message.assistant("hello")],
        steps=1,
        generation_failed=True,
        error=_ERROR,
        usage=Usage(3, 4),
        served_by="openai",
        run_id="run-1",
    ),
    "Event": lambda: Event("llm.request", "run-1", 3, 1.5, 1, {"model": "m"}),
    "Explanation": lambda: agentactors.Explanation(
        run_id="run-1", agent="a", question="hi", answer="hello", streamed=False, latency=0.5, steps=1,
        served_by="openai", served_model="m", request=_REQUEST,
        tool_results=(ToolResult("call_1", "lookup", ToolStatus.ok, "42", 2, 0.5),), path=(), timeline=(),
        retries=0, failovers=(),
    ),
    # errors
    "AgentActorsError": lambda: agentactors.AgentActorsError("base"),
    "ActorError": lambda: agentactors.ActorError("no answer"),
    "RunError": lambda: agentactors.RunError("no answer"),
    "ProviderError": lambda: _ERROR,
    "UnsupportedToolChoiceError": lambda: UnsupportedToolChoiceError(provider="openai", model="m"),
    "UnsupportedContentError": lambda: UnsupportedContentError("no audio", provider="anthropic", model="m",
                                                               part="Audio(audio/wav, 1 KB)"),
    "UnsupportedSettingError": lambda: UnsupportedSettingError("no budget", provider="openai", model="m",
                                                               setting="thinking_budget"),
    "CircuitOpenError": lambda: CircuitOpenError(provider="openai", model="m", retry_after=3.0, last_error=_ERROR),
    "StreamInterruptedError": lambda: StreamInterruptedError("cut", provider="openai", partial_text="par"),
    "ProviderTimeoutError": lambda: ProviderTimeout("attempt took 60s", provider="openai", model="m"),
    "AllProvidersFailedError": lambda: AllProvidersFailedError(
        "all failed", [_ERROR, ProviderTimeout("slow", provider="anthropic")]
    ),
    "OverloadedError": lambda: agentactors.Overloaded(
        "refused", provider="openai", model="m", retry_after=0.5, reason="max_waiting"
    ),
    "RunDeadlineExceededError": lambda: agentactors.RunDeadlineExceeded("past 30s", deadline=30.0, step=2),
    "CostLimitExceededError": lambda: agentactors.CostLimitExceeded("spent 1.5", limit=1.0, spent=1.5),
    # typed results
    "ToolOutput": lambda: agentactors.ToolOutput(int, name="answer", description="The answer."),
    "NativeOutput": lambda: agentactors.NativeOutput(int, name="answer", strict=False),
    "PromptedOutput": lambda: agentactors.PromptedOutput(int, template="Answer as {schema}"),
    "OutputContext": lambda: agentactors.OutputContext("run-1", "a", 2, 1, "tool"),
    "ModelRetry": lambda: agentactors.ModelRetry("the total must add up"),
    "OutputValidationError": lambda: agentactors.OutputValidationError(
        "the answer did not validate after 3 attempts", issues=("- age: expected an integer, got a string",),
        attempts=3,
    ),
    # agents together
    "ToolDenied": lambda: agentactors.ToolDenied("nested too deep"),
    "SessionError": lambda: agentactors.SessionError("no turn"),
    "SessionConflictError": lambda: agentactors.SessionConflictError("committed first", key="user-1"),
    "SessionPausedError": lambda: agentactors.SessionPausedError("paused", key="user-1", pending=(_CALL,)),
    "NeedsApproval": lambda: agentactors.NeedsApproval("sends money"),
}

# One instance of every other attrs class and exception class that was exported before the user API narrowed
# (the root keeps some of them unlisted, the rest live in their modules): they round-trip just as well, by the
# name of the module that defines them.
OTHER_SAMPLES: dict[str, Callable[[], object]] = {
    # stream events and the machinery a run is made of
    "ReasoningDelta": lambda: ReasoningDelta("hm"),
    "StreamEnd": lambda: StreamEnd(_RESPONSE),
    "TextDelta": lambda: TextDelta("he"),
    "ToolCallDelta": lambda: ToolCallDelta(0, '{"q"'),
    "ToolCallEnd": lambda: ToolCallEnd(0, _CALL),
    "ToolCallStart": lambda: ToolCallStart(0, "call_1", "lookup"),
    "ResponseFormat": lambda: agentactors.ResponseFormat("Person", {"type": "object", "properties": {}}),
    "Complete": lambda: Complete(_REQUEST),
    "Stream": lambda: Stream(_REQUEST),
    "ExecuteTools": lambda: ExecuteTools([_CALL], ExecutionContext(run_id="run-1", agent="a", step=2)),
    "ExecutionContext": lambda: ExecutionContext(run_id="run-1", max_tool_result_chars=100),
    "RuntimeStats": lambda: RuntimeStats(actors=2, tasks=3, busy=1, queued=0, mailboxes={"provider": 0}),
    "StreamCut": lambda: StreamCut("par", _ERROR),
    "CircuitStats": lambda: CircuitStats("m", CircuitState.open, calls=10, failures=6, last_error=_ERROR),
    # typed events: the families (agentactors.events)
    "ActorEvent": lambda: events.ActorEvent("actor.started", None, 1, 0.5, None, {"actor": "provider"}),
    "BreakerEvent": lambda: events.BreakerEvent("breaker.state_changed", "run-1", 2, 1.0, 1, {"key": "k"}),
    "FallbackEvent": lambda: events.FallbackEvent("fallback.moved", "run-1", 2, 1.0, 1, {"reason": "x"}),
    "LLMEvent": lambda: events.LLMEvent("llm.request", "run-1", 3, 1.5, 1, {"request": _REQUEST}),
    "ProviderEvent": lambda: events.ProviderEvent("provider.throttled", "run-1", 2, 1.0, 1, {"wait": 0.5}),
    "RetryEvent": lambda: events.RetryEvent("retry.scheduled", "run-1", 2, 1.0, 1, {"error": _ERROR}),
    "RunEvent": lambda: events.RunEvent("run.started", "run-1", 1, 0.0, None, {"agent": "a"}),
    "StepEvent": lambda: events.StepEvent("step.started", "run-1", 2, 0.1, 1, {}),
    "ToolEvent": lambda: events.ToolEvent("tools.finished", "run-1", 4, 2.0, 1, {"status": ToolStatus.ok}),
    "OutputEvent": lambda: events.OutputEvent("output.invalid", "run-1", 5, 2.0, 2, {"attempt": 1}),
    "SessionEvent": lambda: events.SessionEvent("session.committed", None, 1, 0.5, None, {"key": "user-1"}),
    # errors
    "ActorStoppedError": lambda: agentactors.ActorStopped("stopped"),
    "AskTimeoutError": lambda: agentactors.AskTimeout("no answer in 1s"),
    "MalformedResponseError": lambda: MalformedResponseError("no choices", provider="openai", model="m"),
    "ScriptExhaustedError": lambda: ScriptExhaustedError("out of script", provider="scripted", kind="request"),
    "ToolStatusError": lambda: ToolStatusError("tool failed", status=ToolStatus.error),
    "ToolsetError": lambda: ToolsetError("toolset 'github' could not list its tools: gone"),
    "ToolNameClashError": lambda: ToolNameClashError("two tools are named 'search'"),
    "DelegationError": lambda: errors.DelegationError("searcher", "ProviderTimeout: slow"),
    "SessionFormatError": lambda: errors.SessionFormatError("format 9 is newer", key="user-1", found=9),
    # sessions and pauses
    "SessionRecord": lambda: sessions.SessionRecord("user-1", (Message.user("hi"),), version=3, run_id="run-1"),
    "PausedRun": lambda: PausedRun(
        "run-1",
        (Message.user("pay"), Message.assistant("", tool_calls=[_CALL])),
        (_CALL,),
        (),
        (_CALL,),
        {"call_1": "sends money"},
        step=1,
        usage=Usage(1, 2),
        tool_calls=(_CALL,),
        agent="payer",
    ),
}

# Exported attrs classes not round-tripped here, and why.
NOT_SAMPLED: dict[str, str] = {
    "Agent": "configuration around a live provider, not data; a worker builds its agents from a factory",
}


def _is_data_or_error(obj: object) -> bool:
    return isinstance(obj, type) and (attrs.has(obj) or issubclass(obj, BaseException))


def test_every_exported_attrs_class_and_error_has_a_sample() -> None:
    expected = set(_exported(_is_data_or_error))
    assert set(SAMPLES) | set(NOT_SAMPLED) == expected
    assert not set(SAMPLES) & set(NOT_SAMPLED)


def _same(a: object, b: object) -> bool:
    """Equal by value, looking into attrs instances and exceptions (which compare by identity)."""
    if type(a) is not type(b):
        return False
    if attrs.has(type(a)):
        return all(_same(getattr(a, f.name), getattr(b, f.name)) for f in attrs.fields(type(a)))  # type: ignore[arg-type]
    if isinstance(a, BaseException):
        assert isinstance(b, BaseException)
        return (
            str(a) == str(b)
            and repr(a) == repr(b)
            and _same(vars(a), vars(b))
            and getattr(a, "__notes__", None) == getattr(b, "__notes__", None)
        )
    if isinstance(a, tuple | list):
        assert isinstance(b, tuple | list)
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, Mapping):
        assert isinstance(b, Mapping)
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return a == b


def _pickled_globals(data: bytes) -> set[tuple[str, str]]:
    """The (module, name) pairs a protocol-2 pickle refers to."""
    found: set[tuple[str, str]] = set()
    for opcode, arg, _ in pickletools.genops(data):
        if opcode.name == "GLOBAL":
            module, _, name = str(arg).partition(" ")
            found.add((module, name))
    return found


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_pickle_and_copy_round_trip(name: str) -> None:
    obj = SAMPLES[name]()
    assert type(obj) is getattr(agentactors, name)
    for protocol in range(2, pickle.HIGHEST_PROTOCOL + 1):
        clone = pickle.loads(pickle.dumps(obj, protocol=protocol))
        assert _same(clone, obj), f"protocol {protocol}: {clone!r} != {obj!r}"
    # The pickle names the class where users import it from, so it survives a move between submodules.
    assert ("agentactors", name) in _pickled_globals(pickle.dumps(obj, protocol=2))
    assert _same(copy.copy(obj), obj)
    assert _same(copy.deepcopy(obj), obj)
    if attrs.has(type(obj)):
        evolved = attrs.evolve(obj)  # type: ignore[misc]
        assert type(evolved) is type(obj) and _same(evolved, obj)


@pytest.mark.parametrize("name", sorted(OTHER_SAMPLES))
def test_other_classes_pickle_and_copy_round_trip_by_their_own_module(name: str) -> None:
    obj = OTHER_SAMPLES[name]()
    cls = type(obj)
    assert cls.__name__ == name and cls.__module__ != "agentactors"
    assert getattr(importlib.import_module(cls.__module__), cls.__qualname__) is cls
    for protocol in range(2, pickle.HIGHEST_PROTOCOL + 1):
        clone = pickle.loads(pickle.dumps(obj, protocol=protocol))
        assert _same(clone, obj), f"protocol {protocol}: {clone!r} != {obj!r}"
    assert _same(copy.copy(obj), obj)
    assert _same(copy.deepcopy(obj), obj)
    if attrs.has(cls):
        evolved = attrs.evolve(obj)  # type: ignore[misc]
        assert type(evolved) is cls and _same(evolved, obj)


def test_an_evolved_instance_takes_the_change() -> None:
    assert attrs.evolve(_RESPONSE, content="bye") == LLMResponse(
        "bye", (_CALL,), StopReason.tool_use, Usage(3, 4), model="m", provider="openai"
    )
    assert attrs.evolve(Usage(), input_tokens=3).input_tokens == 3


@pytest.mark.parametrize("name", _exported(lambda obj: isinstance(obj, enum.EnumType)))
def test_enum_members_pickle_and_copy_to_themselves(name: str) -> None:
    cls = getattr(agentactors, name)
    for member in cls:
        for protocol in range(2, pickle.HIGHEST_PROTOCOL + 1):
            assert pickle.loads(pickle.dumps(member, protocol=protocol)) is member
        assert copy.copy(member) is member and copy.deepcopy(member) is member
        # By value, through the class as users import it.
        assert member.__reduce_ex__(4) == (cls, (member.value,))


def test_the_enums_promised_are_exported() -> None:
    assert {ErrorKind, StopReason, ToolStatus} <= {getattr(agentactors, n) for n in EXPORTED}


@pytest.mark.parametrize("name", _exported(lambda obj: isinstance(obj, type)))
def test_type_hints_of_exported_classes_resolve(name: str) -> None:
    """String annotations resolve in the module that wrote them, though the class now reports the package."""
    cls = getattr(agentactors, name)
    typing.get_type_hints(cls)
    typing.get_type_hints(cls, include_extras=True)


def test_type_hints_resolve_to_the_types_written() -> None:
    assert typing.get_type_hints(Message)["tool_calls"] == tuple[ToolCall, ...]
    assert typing.get_type_hints(Event)["data"] == Mapping[str, Any]
    assert typing.get_type_hints(LLMRequest)["tool_choice"] is ToolChoice
    assert typing.get_type_hints(ToolChoice)["mode"] == typing.Literal["auto", "none", "required", "tool"]


def test_a_tool_can_take_an_exported_class_as_a_parameter() -> None:
    """The tool-schema builder reads the parameter class's type hints (``Mapping[str, Any]`` in ToolSpec)."""

    @tool
    def register(spec: ToolSpec, call: ToolCall) -> str:
        """Register a tool."""
        return spec.name + call.id

    properties = register.spec.parameters["properties"]
    assert properties["spec"]["properties"]["parameters"] == {"type": "object", "additionalProperties": {}}
    assert properties["call"]["required"] == ["id", "name"]


def _has_python_signature(obj: object) -> bool:
    # An exception class that defines no __init__ or __new__ has the builtin ones, which carry no signature.
    if not (isinstance(obj, type) and issubclass(obj, BaseException)):
        return True
    return any(inspect.isfunction(vars(k).get("__init__") or vars(k).get("__new__")) for k in obj.__mro__)


@pytest.mark.parametrize("name", _exported(lambda obj: callable(obj) and _has_python_signature(obj)))
def test_signatures_of_exported_callables_are_readable(name: str) -> None:
    assert isinstance(inspect.signature(getattr(agentactors, name)), inspect.Signature)
