"""The optional subpackages' exports report the subpackage as their home, as the root's report ``agentactors``.

``agentactors.mcp``, ``.otel``, ``.ray`` and ``.testing`` define their classes in private (or internal) modules
and export them from the package; each ``__init__`` relabels them with :func:`agentactors._reexport.adopt`, so
reprs and tracebacks say ``agentactors.ray.WorkerLost``, not ``agentactors.ray.errors.WorkerLost``.  As for the
root (``test_exported_members.py``), the rest proves that the relabelling breaks none of what reads
``__module__``: pickling (Ray moves results and errors between processes), copying, ``attrs.evolve`` and
``typing.get_type_hints``.  And ``import agentactors`` still imports none of them, nor their extras.
"""

from __future__ import annotations

import ast
import copy
import enum
import importlib
import inspect
import pickle
import pickletools
import subprocess
import sys
import typing
from collections.abc import Callable, Mapping
from pathlib import Path
from types import ModuleType

import attrs
import pytest

import agentactors

PACKAGE_DIR = Path(agentactors.__file__).parent
SUBPACKAGES = ("agentactors.mcp", "agentactors.otel", "agentactors.ray", "agentactors.testing")
# The third-party package each one needs (its extra), which `import agentactors` must not import.
EXTRAS = {"agentactors.mcp": "mcp", "agentactors.otel": "opentelemetry", "agentactors.ray": "ray"}


def _load(package: str) -> ModuleType:
    """The subpackage, or a skip when its extra is not installed."""
    module: ModuleType = pytest.importorskip(package)
    return module


def _exports(package: str) -> list[tuple[str, str]]:
    """``(package, name)`` for every name of the subpackage's ``__all__`` (read with ast: nothing is imported)."""
    init = PACKAGE_DIR / package.split(".", 1)[1] / "__init__.py"
    for node in ast.parse(init.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            return [(package, name) for name in ast.literal_eval(node.value)]
    raise AssertionError(f"{package} has no __all__")


EXPORTS = [pair for package in SUBPACKAGES for pair in _exports(package)]


def _ids(pairs: list[tuple[str, str]]) -> list[str]:
    return [f"{package.rpartition('.')[2]}.{name}" for package, name in pairs]


def _is_class_or_function(obj: object) -> bool:
    return isinstance(obj, type) or inspect.isfunction(obj)


# Classes and functions: what reports a module (an exported type alias such as mcp's ToolFilter has none).
DEFINED = [
    (package, name) for package, name in EXPORTS if _is_class_or_function(getattr(_load(package), name))
]


# --- the shape of each __all__ --------------------------------------------------------------------


@pytest.mark.parametrize("package", SUBPACKAGES)
def test_all_is_public_without_duplicates_and_every_name_exists(package: str) -> None:
    module = _load(package)
    assert len(set(module.__all__)) == len(module.__all__), f"{package}.__all__ has duplicates"
    for name in module.__all__:
        assert not name.startswith("_"), f"{package}.{name} is private"
        assert getattr(module, name, None) is not None, f"{package}.{name} is in __all__ but not importable"


def _top_level_definitions(package: str) -> dict[str, list[str]]:
    """name -> the modules of ``package`` that define it at top level (class, def or assignment)."""
    folder = PACKAGE_DIR / package.split(".", 1)[1]
    defined: dict[str, list[str]] = {}
    for path in sorted(folder.rglob("*.py")):
        if path.name == "__init__.py":
            continue
        module = ".".join(path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts)
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


@pytest.mark.parametrize(("package", "name"), EXPORTS, ids=_ids(EXPORTS))
def test_every_export_is_defined_by_a_module_of_its_subpackage(package: str, name: str) -> None:
    obj = getattr(_load(package), name)
    homes = _top_level_definitions(package).get(name, [])
    assert any(getattr(importlib.import_module(m), name, None) is obj for m in homes), (
        f"{package}.{name} is not defined by a module of {package} (candidates: {homes})"
    )


# --- the relabelling ------------------------------------------------------------------------------


@pytest.mark.parametrize(("package", "name"), DEFINED, ids=_ids(DEFINED))
def test_exported_classes_and_functions_report_their_subpackage(package: str, name: str) -> None:
    obj = getattr(_load(package), name)
    assert obj.__module__ == package, f"{package}.{name} reports {obj.__module__}"
    # pickle finds a class or function again by module + qualified name: they must name the export.
    assert obj.__qualname__ == name
    assert pickle.loads(pickle.dumps(obj)) is obj
    if isinstance(obj, type) and not isinstance(obj, enum.EnumType):  # an enum's repr is <enum 'Name'>
        assert repr(obj) == f"<class '{package}.{name}'>"


@pytest.mark.parametrize(("package", "name"), DEFINED, ids=_ids(DEFINED))
def test_type_hints_of_exported_classes_and_functions_resolve(package: str, name: str) -> None:
    """String annotations resolve in the module that wrote them, though the class now reports the subpackage."""
    obj = getattr(_load(package), name)
    typing.get_type_hints(obj)
    typing.get_type_hints(obj, include_extras=True)


def test_type_hints_resolve_to_the_types_written() -> None:
    from agentactors.testing import Conversation, FakeReply, FakeToolCall, OfferedTool

    assert typing.get_type_hints(Conversation)["tools"] == tuple[OfferedTool, ...]
    assert typing.get_type_hints(FakeReply)["stream_error"] == _load("agentactors.testing").FakeError | None
    assert typing.get_type_hints(FakeToolCall)["arguments"] == Mapping[str, typing.Any] | str


# --- data and errors travel -----------------------------------------------------------------------


def _samples() -> dict[str, Callable[[], object]]:
    """One instance of every exported attrs class and exception class, by ``package.Name``."""

    def testing() -> ModuleType:
        return _load("agentactors.testing")

    def ray() -> ModuleType:
        return _load("agentactors.ray")

    return {
        "agentactors.mcp.MCPToolError": lambda: _load("agentactors.mcp").MCPToolError("tool 'search' failed: gone"),
        # the old names (WorkerLost, VersionMismatch) build the same classes
        "agentactors.ray.WorkerLostError": lambda: ray().WorkerLost("worker died", worker="w-1", attempts=2),
        "agentactors.ray.WorkerUnavailableError": lambda: ray().WorkerUnavailableError(
            "no answer", worker="w-1", attempts=1
        ),
        "agentactors.ray.RemoteError": lambda: ray().RemoteError("boom", type_name="mymod.Unpicklable"),
        "agentactors.ray.VersionMismatchError": lambda: ray().VersionMismatch("driver 0.1.0, worker 0.0.9"),
        "agentactors.ray.SharedBudget": lambda: ray().SharedBudget(8, 600.0, burst=2.0, lease=4),
        "agentactors.testing.FakeToolCall": lambda: testing().FakeToolCall("lookup", {"q": "x"}, id="call_1"),
        "agentactors.testing.FakeError": lambda: testing().FakeError(429, "slow down", retry_after=1.0),
        "agentactors.testing.FakeMalformed": lambda: testing().FakeMalformed("{not json", status=200),
        "agentactors.testing.FakeReply": lambda: testing().FakeReply(
            "hi", tool_calls=testing().FakeToolCall("lookup", '{"q": "x"}'), stream_error=testing().FakeError(500)
        ),
        "agentactors.testing.FaultPlan": lambda: testing().FaultPlan(0.5, seed=7, weights={"rate_limit": 1.0}),
        "agentactors.testing.OfferedTool": lambda: testing().OfferedTool("lookup", "Look it up.", {"type": "object"}),
        "agentactors.testing.SeenToolCall": lambda: testing().SeenToolCall("call_1", "lookup", {"q": "x"}),
        "agentactors.testing.SeenToolResult": lambda: testing().SeenToolResult("call_1", "lookup", "42"),
        "agentactors.testing.SeenPart": lambda: testing().SeenPart("image", "image/png", "data", size=8),
        "agentactors.testing.Conversation": lambda: testing().Conversation(
            "be brief", "hi", 2, tools=(testing().OfferedTool("lookup"),), settings={"temperature": 0.5}
        ),
        "agentactors.testing.RecordedRequest": lambda: testing().RecordedRequest(
            0, "openai", "POST", "/v1/chat/completions", "m", False, {"model": "m"}, 14, {"host": "x"}, True,
            conversation=testing().Conversation(last_user_text="hi"),
        ),
    }


SAMPLES = _samples()


def _is_data_or_error(obj: object) -> bool:
    return isinstance(obj, type) and (attrs.has(obj) or issubclass(obj, BaseException))


@pytest.mark.parametrize("package", SUBPACKAGES)
def test_every_exported_attrs_class_and_error_has_a_sample(package: str) -> None:
    module = _load(package)
    expected = {f"{package}.{name}" for name in module.__all__ if _is_data_or_error(getattr(module, name))}
    assert {key for key in SAMPLES if key.startswith(package + ".")} == expected


def _same(a: object, b: object) -> bool:
    """Equal by value, looking into attrs instances and exceptions (which compare by identity)."""
    if type(a) is not type(b):
        return False
    if attrs.has(type(a)):
        return all(_same(getattr(a, f.name), getattr(b, f.name)) for f in attrs.fields(type(a)))  # type: ignore[arg-type]
    if isinstance(a, BaseException):
        assert isinstance(b, BaseException)
        return str(a) == str(b) and repr(a) == repr(b) and _same(vars(a), vars(b))
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


@pytest.mark.parametrize("key", sorted(SAMPLES))
def test_pickle_and_copy_round_trip(key: str) -> None:
    package, _, name = key.rpartition(".")
    obj = SAMPLES[key]()
    assert type(obj) is getattr(_load(package), name)
    for protocol in range(2, pickle.HIGHEST_PROTOCOL + 1):
        clone = pickle.loads(pickle.dumps(obj, protocol=protocol))
        assert _same(clone, obj), f"protocol {protocol}: {clone!r} != {obj!r}"
    if not isinstance(obj, BaseException) or type(obj).__reduce__ is BaseException.__reduce__:
        # The pickle names the class where users import it from (an error with a __reduce__ of its own names
        # the function that rebuilds it instead).
        assert (package, name) in _pickled_globals(pickle.dumps(obj, protocol=2))
    assert _same(copy.copy(obj), obj)
    assert _same(copy.deepcopy(obj), obj)
    if attrs.has(type(obj)):
        evolved = attrs.evolve(obj)  # type: ignore[misc]
        assert type(evolved) is type(obj) and _same(evolved, obj)


@pytest.mark.parametrize(
    ("package", "name"),
    [("agentactors.testing", "FaultKind")],
)
def test_enum_members_pickle_and_copy_to_themselves(package: str, name: str) -> None:
    cls = getattr(_load(package), name)
    assert isinstance(cls, enum.EnumType)
    member: enum.Enum
    for member in cls:
        for protocol in range(2, pickle.HIGHEST_PROTOCOL + 1):
            assert pickle.loads(pickle.dumps(member, protocol=protocol)) is member
        assert copy.copy(member) is member and copy.deepcopy(member) is member


def test_the_lazily_loaded_fakevendor_reports_the_testing_package() -> None:
    """FakeVendor is imported on first use (it needs the testing extra); its module relabels it when loaded."""
    from agentactors.testing import FakeVendor
    from agentactors.testing.fakevendor import FakeVendor as same

    assert FakeVendor is same
    assert FakeVendor.__module__ == "agentactors.testing"
    assert pickle.loads(pickle.dumps(FakeVendor)) is FakeVendor


# --- importing agentactors imports none of them ---------------------------------------------------


def test_importing_agentactors_imports_no_subpackage_nor_its_extra() -> None:
    code = (
        "import sys, agentactors\n"
        f"names = {sorted([*SUBPACKAGES[:3], *EXTRAS.values()])!r}\n"
        "print(sorted(n for n in names if n in sys.modules or any(m.startswith(n + '.') for m in sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]"
