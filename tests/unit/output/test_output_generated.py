"""Generated typed-output runs (hypothesis): a drawn output type, a value of it, a strategy, and how the model answers.

A case is drawn whole: an output type (a small recursive shape — ``str``, ``int`` (big ones too), ``float``,
``bool``, ``Literal[...]``, an ``Enum``, ``list[X]`` (empty ones too), ``dict[str, X]``, ``X | None``, ``int | str``,
and dataclasses, ``TypedDict``\\ s (keys that need quoting: spaces, quotes, backslashes, ``$ref``, ``""``),
pydantic models (aliases that are no identifier) and attrs classes, with required, optional and nested fields, and
unions of classes), a value of it, a strategy (auto, ``ToolOutput``, ``NativeOutput``, ``PromptedOutput``) and what
the model answers: up to three wrong answers (JSON cut off, a value of another type at some depth, a huge one, one
nested past the depth policy, a NaN, a key named twice, prose where a call was asked for) then the value's JSON —
with whitespace, escapes or not, bare or wrapped, fenced — every answer streamed in chunks cut anywhere (mid-string,
mid-escape, mid-number, mid-``\\uXXXX``).  Then, as ``docs/output.md`` says:

* a run whose answer is the value ends ``ok`` with ``result.output == value``, of the type;
* ``partial_output()`` yields values of the type only, never the same one twice running, and ends with the final
  validated value; it never raises, wherever a chunk was cut;
* each wrong answer is asked again while ``output_retries`` allows; past it the run ends with
  ``OutputValidationError`` (``attempts`` = retries + 1, ``output=None``) — no crash, no hang, no other error;
* the error's issues are bounded (ten lines and a count, 300 characters each) and never hold the answer's values;
  the answer itself stays in ``result.messages``, as the model sent it.

Virtual time, both backends, a bounded number of examples (``OUTPUT_GENERATED_EXAMPLES`` to hunt longer).
The plain examples of what it found are at the end of this file.
"""

from __future__ import annotations

import dataclasses
import enum
import itertools
import json
import math
import os
from collections.abc import Callable
from typing import Annotated, Any, Literal, NotRequired, Required

import anyio
import attrs
import pydantic
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typing_extensions import TypedDict

from agentactors import (
    Agent,
    LLMRequest,
    LLMResponse,
    NativeOutput,
    OutputValidationError,
    PromptedOutput,
    StopReason,
    ToolCall,
    ToolOutput,
)
from agentactors.output.target import OutputTarget
from agentactors.testing import virtual_backends
from tests.support.trickle import streamed

EXAMPLES = int(os.environ.get("OUTPUT_GENERATED_EXAMPLES", "60"))
SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

#: The mark every wrong value carries where it can: it must never be read back in an issue or the error.
MARK = "ZQXMARK"

Draw = Callable[[st.SearchStrategy[Any]], Any]


# -- shapes: a type, how to draw a value of it (its JSON and the Python value), a wrong one, a conformance check ----


class Shape:
    """One output type the generator can build, with its values."""

    tp: Any

    def value(self, draw: Draw) -> tuple[Any, Any]:
        """A value of the type: ``(json, python)``."""
        raise NotImplementedError

    def wrong(self, draw: Draw, filler: Any) -> Any:
        """A JSON value no value of the type is; ``filler`` (a MARK-bearing JSON value) at the wrong place."""
        raise NotImplementedError

    def conforms(self, value: Any) -> bool:
        """Whether ``value`` is a Python value of the type."""
        raise NotImplementedError


TEXT = st.text(
    st.one_of(
        st.characters(exclude_categories=["Cs"]),
        st.sampled_from(['"', "\\", "\n", "\t", "\x00", "\u2028", "é", "😀", "/", "\x7f"]),
    ),
    max_size=12,
)


@attrs.frozen
class Str(Shape):
    tp: Any = str

    def value(self, draw: Draw) -> tuple[Any, Any]:
        s = draw(TEXT)
        return s, s

    def wrong(self, draw: Draw, filler: Any) -> Any:
        return [filler]

    def conforms(self, value: Any) -> bool:
        return isinstance(value, str)


INTS = st.one_of(
    st.integers(-1000, 1000),
    st.integers(-(10**60), 10**60),
    st.sampled_from([2**63, -(2**63) - 1, 2**64 + 1, 10**300, -(10**300)]),
)


@attrs.frozen
class Int(Shape):
    tp: Any = int

    def value(self, draw: Draw) -> tuple[Any, Any]:
        i = draw(INTS)
        return i, i

    def wrong(self, draw: Draw, filler: Any) -> Any:
        return filler

    def conforms(self, value: Any) -> bool:
        return type(value) is int


@attrs.frozen
class Float(Shape):
    tp: Any = float

    def value(self, draw: Draw) -> tuple[Any, Any]:
        f = draw(st.floats(allow_nan=False, allow_infinity=False))
        return f, f

    def wrong(self, draw: Draw, filler: Any) -> Any:
        return filler

    def conforms(self, value: Any) -> bool:
        return type(value) is float or type(value) is int


@attrs.frozen
class Bool(Shape):
    tp: Any = bool

    def value(self, draw: Draw) -> tuple[Any, Any]:
        b = draw(st.booleans())
        return b, b

    def wrong(self, draw: Draw, filler: Any) -> Any:
        return filler

    def conforms(self, value: Any) -> bool:
        return type(value) is bool


@attrs.frozen
class Pick(Shape):
    """``Literal[...]`` of strings and ints."""

    tp: Any
    picks: tuple[Any, ...]

    def value(self, draw: Draw) -> tuple[Any, Any]:
        p = draw(st.sampled_from(self.picks))
        return p, p

    def wrong(self, draw: Draw, filler: Any) -> Any:
        return filler

    def conforms(self, value: Any) -> bool:
        return any(value == p and type(value) is type(p) for p in self.picks)


@attrs.frozen
class Members(Shape):
    """An ``Enum`` of string values."""

    tp: Any

    def value(self, draw: Draw) -> tuple[Any, Any]:
        m = draw(st.sampled_from(list(self.tp)))
        return m.value, m

    def wrong(self, draw: Draw, filler: Any) -> Any:
        return filler

    def conforms(self, value: Any) -> bool:
        return isinstance(value, self.tp)


@attrs.frozen
class ListOf(Shape):
    tp: Any
    item: Shape

    def value(self, draw: Draw) -> tuple[Any, Any]:
        n = draw(st.integers(0, 3))
        pairs = [self.item.value(draw) for _ in range(n)]
        return [j for j, _ in pairs], [p for _, p in pairs]

    def wrong(self, draw: Draw, filler: Any) -> Any:
        if draw(st.booleans()):
            return {"k": filler}
        good = self.value(draw)[0]
        good.insert(draw(st.integers(0, len(good))), self.item.wrong(draw, filler))
        return good

    def conforms(self, value: Any) -> bool:
        return isinstance(value, list) and all(self.item.conforms(v) for v in value)


@attrs.frozen
class DictOf(Shape):
    tp: Any
    item: Shape

    def value(self, draw: Draw) -> tuple[Any, Any]:
        keys = draw(st.lists(TEXT, max_size=3, unique=True))
        pairs = {k: self.item.value(draw) for k in keys}
        return {k: j for k, (j, _) in pairs.items()}, {k: p for k, (_, p) in pairs.items()}

    def wrong(self, draw: Draw, filler: Any) -> Any:
        if draw(st.booleans()):
            return [filler]
        good = self.value(draw)[0]
        good["badkey"] = self.item.wrong(draw, filler)
        return good

    def conforms(self, value: Any) -> bool:
        return isinstance(value, dict) and all(isinstance(k, str) and self.item.conforms(v) for k, v in value.items())


@attrs.frozen
class Opt(Shape):
    tp: Any
    inner: Shape

    def value(self, draw: Draw) -> tuple[Any, Any]:
        if draw(st.integers(0, 3)) == 0:
            return None, None
        return self.inner.value(draw)

    def wrong(self, draw: Draw, filler: Any) -> Any:
        return self.inner.wrong(draw, filler)

    def conforms(self, value: Any) -> bool:
        return value is None or self.inner.conforms(value)


@attrs.frozen
class IntOrStr(Shape):
    tp: Any = int | str

    def value(self, draw: Draw) -> tuple[Any, Any]:
        v = draw(st.one_of(INTS, TEXT))
        return v, v

    def wrong(self, draw: Draw, filler: Any) -> Any:
        return [filler]

    def conforms(self, value: Any) -> bool:
        return isinstance(value, str) or type(value) is int


@attrs.frozen
class Field:
    key: str  # the JSON key
    attr: str  # the Python name (the key for a TypedDict)
    shape: Shape
    required: bool


@attrs.frozen
class Obj(Shape):
    """A dataclass, a ``TypedDict``, a pydantic model or an attrs class."""

    tp: Any
    kind: str
    fields: tuple[Field, ...]

    def value(self, draw: Draw) -> tuple[Any, Any]:
        js: dict[str, Any] = {}
        py: dict[str, Any] = {}
        for f in self.fields:
            if f.required:
                j, p = f.shape.value(draw)
                js[f.key], py[f.attr] = j, p
                continue
            how = draw(st.sampled_from(["absent", "null", "value"]))
            if how == "absent":
                continue
            j, p = (None, None) if how == "null" else f.shape.value(draw)
            # (an optional field is X | None here, whose schema takes null: null is its value, never "absent")
            js[f.key], py[f.attr] = j, p
        return js, self.build(py)

    def build(self, py: dict[str, Any]) -> Any:
        if self.kind == "typeddict":
            return py
        if self.kind == "pydantic":
            return self.tp.model_validate({f.key: py[f.attr] for f in self.fields if f.attr in py})
        return self.tp(**py)

    def wrong(self, draw: Draw, filler: Any) -> Any:
        good = self.value(draw)[0]
        f = draw(st.sampled_from([f for f in self.fields if f.required]))
        good[f.key] = f.shape.wrong(draw, filler)
        return good

    def conforms(self, value: Any) -> bool:
        if self.kind == "typeddict":
            if not isinstance(value, dict) or not set(value) <= {f.key for f in self.fields}:
                return False
            return all(
                (f.key in value and f.shape.conforms(value[f.key])) if f.required
                else (f.key not in value or f.shape.conforms(value[f.key]))
                for f in self.fields
            )
        return isinstance(value, self.tp) and all(f.shape.conforms(getattr(value, f.attr)) for f in self.fields)


@attrs.frozen
class Union(Shape):
    """``A | B`` of classes, each with a required field of its own (a value is of one member only)."""

    tp: Any
    members: tuple[Obj, ...]

    def value(self, draw: Draw) -> tuple[Any, Any]:
        member: Obj = draw(st.sampled_from(self.members))
        return member.value(draw)

    def wrong(self, draw: Draw, filler: Any) -> Any:
        return draw(st.sampled_from(self.members)).wrong(draw, filler)

    def conforms(self, value: Any) -> bool:
        return any(m.conforms(value) for m in self.members)


# -- drawing a shape --------------------------------------------------------------------------------------------

_names = itertools.count()
# Classes made at run time: their names and fields are data here, which no type checker can follow.
_typed_dict: Any = TypedDict
_create_model: Any = pydantic.create_model

# Keys a TypedDict or a pydantic alias may have that no identifier can: quoting, escapes, JSON Schema's own words.
ODD_KEYS = ["a b", 'q"uote', "back\\slash", "$ref", "", "response", "ключ", "😀", "type", "properties", "\n", "a.b"]
IDENTS = ["name", "naïve", "Ωmega", "名前", "type", "id", "response", "value", "x"]


def _class_name(draw: Draw) -> str:
    n = next(_names)
    name: str = draw(st.sampled_from([f"C{n}", f"Résumé{n}", f"Long{'X' * 70}{n}", f"c_{n}"]))
    return name


def _object(draw: Draw, child: Callable[[bool], Shape], plain: bool, own: str | None = None) -> Obj:
    """A class of 1-3 fields; ``plain``: no attrs class in it (pydantic cannot hold one)."""
    kind = draw(st.sampled_from(["dataclass", "typeddict", "pydantic"] + ([] if plain else ["attrs"])))
    n = draw(st.integers(1, 3))
    pool = ODD_KEYS + IDENTS if kind in ("typeddict", "pydantic") else IDENTS
    keys = draw(st.lists(st.sampled_from(pool), min_size=n, max_size=n, unique=True))
    if own is not None:
        keys = [own, *(k for k in keys if k != own)]
    fields: list[Field] = []
    for i, key in enumerate(keys):
        required = i == 0 or draw(st.booleans())
        shape = child(plain or kind == "pydantic")
        if not required and not isinstance(shape, Opt):
            shape = Opt(shape.tp | None, shape)
        attr = key if kind == "typeddict" else (f"f{i}" if kind == "pydantic" else key)
        fields.append(Field(key, attr, shape, required))
    fields.sort(key=lambda f: not f.required)  # a class's fields with defaults come last
    name = _class_name(draw)
    tp: Any
    if kind == "dataclass":
        tp = dataclasses.make_dataclass(
            name,
            [(f.attr, f.shape.tp) if f.required else (f.attr, f.shape.tp, dataclasses.field(default=None))
             for f in fields],
        )
    elif kind == "attrs":
        tp = attrs.make_class(
            name,
            {f.attr: attrs.field(type=f.shape.tp) if f.required else attrs.field(type=f.shape.tp, default=None)
             for f in fields},
        )
    elif kind == "pydantic":
        tp = _create_model(
            name,
            **{f.attr: (Annotated[f.shape.tp, pydantic.Field(alias=f.key)], ... if f.required else None)
               for f in fields},
        )
    else:
        total = draw(st.booleans()) or not any(not f.required for f in fields)
        if total:  # every key required: the optional ones are X | None, given (as null or a value)
            fields = [attrs.evolve(f, required=True) for f in fields]
            tp = _typed_dict(name, {f.key: f.shape.tp for f in fields})
        else:
            tp = _typed_dict(
                name,
                {f.key: (Required[f.shape.tp] if f.required else NotRequired[f.shape.tp]) for f in fields},
            )
    return Obj(tp, kind, tuple(fields))


def _shape(draw: Draw, depth: int, plain: bool = False) -> Shape:
    leaves = ["str", "int", "float", "bool", "pick", "enum", "intstr"]
    nodes = ["list", "dict", "opt", "obj"] if depth < 3 else []
    kind = draw(st.sampled_from(leaves + nodes * 2))

    def child(plain: bool = plain) -> Shape:
        return _shape(draw, depth + 1, plain)

    if kind == "str":
        return Str()
    if kind == "int":
        return Int()
    if kind == "float":
        return Float()
    if kind == "bool":
        return Bool()
    if kind == "intstr":
        return IntOrStr()
    if kind == "pick":
        picks = tuple(draw(st.lists(st.one_of(TEXT, st.integers(-5, 5)), min_size=1, max_size=4, unique=True)))
        # "1" and 1 are two picks; True is 1 to Python, so no bools
        return Pick(Literal.__getitem__(picks), picks)
    if kind == "enum":
        values = draw(st.lists(TEXT, min_size=1, max_size=3, unique=True))
        tp = enum.Enum(f"E{next(_names)}", {f"m{i}": v for i, v in enumerate(values)})  # type: ignore[misc]
        return Members(tp)
    if kind == "list":
        item = child()
        return ListOf(list[item.tp], item)  # type: ignore[name-defined]
    if kind == "dict":
        item = child()
        return DictOf(dict[str, item.tp], item)  # type: ignore[name-defined]
    if kind == "opt":
        inner = child()
        if isinstance(inner, Opt):
            return inner
        return Opt(inner.tp | None, inner)
    return _object(draw, child, plain)


def _top(draw: Draw) -> Shape:
    kind = draw(st.sampled_from(["any", "obj", "obj", "union"]))
    if kind == "any":
        return _shape(draw, 0)
    if kind == "obj":
        return _object(draw, lambda plain: _shape(draw, 1, plain), False)
    n = draw(st.integers(2, 3))
    members = tuple(_object(draw, lambda plain: _shape(draw, 2, plain), False, own=f"only_{next(_names)}")
                    for _ in range(n))
    tp = members[0].tp
    for m in members[1:]:
        tp = tp | m.tp
    return Union(tp, members)


# -- answers ----------------------------------------------------------------------------------------------------


@attrs.frozen
class Answer:
    """One model answer: a text, or an output tool call with raw arguments; the chunks it streams in."""

    text: str = attrs.field(default="", repr=lambda t: repr(t) if len(t) < 300 else f"<{len(t)} chars: {t[:80]!r}...>")
    call: str | None = None  # the output tool's name
    chunks: tuple[int, ...] = ()  # cut points in the text or the arguments
    wrong: str = ""  # what was wrong with it ("" for the right answer)

    def response(self, index: int) -> LLMResponse:
        if self.call is None:
            return LLMResponse(self.text)
        call = ToolCall.from_raw(f"call_{index}", self.call, self.text, required=True)
        return LLMResponse("", (call,), StopReason.tool_use)


def _dumps(draw: Draw, value: Any) -> str:
    indent = draw(st.sampled_from([None, None, 0, 2, "\t"]))
    separators = draw(st.sampled_from([None, (",", ":"), (" ,  ", " :\n ")]))
    text = json.dumps(value, indent=indent, separators=separators, ensure_ascii=draw(st.booleans()))
    pad = st.sampled_from(["", " ", "\n", "\r\n\t "])
    return str(draw(pad)) + text + str(draw(pad))


def _cuts(draw: Draw, text: str) -> tuple[int, ...]:
    if len(text) < 2:
        return ()
    # Bias towards the hard places: right after a backslash, inside a \\uXXXX, inside a number.
    hard = [i + d for i, ch in enumerate(text) if ch == "\\" for d in (1, 2, 4)]
    hard += [i for i, ch in enumerate(text) if ch.isdigit() or ch in ".eE+-"]
    hard = [i for i in hard if 0 < i < len(text)]
    some = st.integers(1, len(text) - 1)
    points = st.one_of(some, st.sampled_from(hard)) if hard else some
    return tuple(sorted(set(draw(st.lists(points, max_size=25)))))


def _with_dup_key(draw: Draw, obj: dict[str, Any]) -> str:
    """``obj``'s JSON with one of its keys written twice (the same value both times)."""
    items = [json.dumps(k) + ": " + json.dumps(v) for k, v in obj.items()]
    i = draw(st.integers(0, len(items) - 1))
    items.insert(draw(st.integers(0, len(items))), items[i])
    return "{" + ", ".join(items) + "}"


def _nest(depth: int) -> Any:
    value: Any = [MARK]
    for _ in range(depth):
        value = [value]
    return value


WRONG_KINDS = ["cut", "garbage", "type", "huge", "deep", "nan", "dup", "prose"]


@attrs.frozen
class Case:
    shape: Shape
    strategy: str
    retries: int
    answers: tuple[Answer, ...]
    value: Any  # the Python value the right answer is
    wrapped: bool

    @property
    def wrong(self) -> int:
        return sum(1 for a in self.answers if a.wrong)

    def spec(self) -> Any:
        tp = self.shape.tp
        if self.strategy == "tool":
            return ToolOutput(tp)
        if self.strategy == "native":
            return NativeOutput(tp)
        if self.strategy == "prompted":
            return PromptedOutput(tp)
        return tp


@st.composite
def cases(draw: Draw) -> Case:
    global _names
    _names = itertools.count()  # the same names for the same draws: hypothesis replays a case exactly
    shape = _top(draw)
    wrapped = not isinstance(shape, Obj | Union)
    strategies = ["tool", "native", "prompted"] + ([] if shape.tp is str else ["auto"])
    strategy = draw(st.sampled_from(strategies))
    calls = strategy in ("tool", "auto")  # auto on a fully capable provider: the tool strategy
    target = OutputTarget(shape.tp)
    retries = draw(st.integers(0, 2))

    def tool_of(js: Any) -> str:
        if not isinstance(shape, Union):
            return target.members[0].name
        for m, member in zip(shape.members, target.members, strict=True):
            if m.fields[0].key in js:
                return member.name
        raise AssertionError("a union value of no member")

    def answer(js: Any, wrong: str, *, text: str | None = None, as_text: bool = False) -> Answer:
        """The JSON ``js`` as the strategy's answer (``text``: that exact text instead)."""
        if calls and not as_text:
            arguments = {"response": js} if wrapped else js
            raw = text if text is not None else _dumps(draw, arguments)
            return Answer(raw, tool_of(js), _cuts(draw, raw), wrong)
        bare = not draw(st.booleans()) and not (isinstance(js, dict) and "response" in js)
        body = js if bare or not (wrapped or isinstance(shape, Union)) else {"response": js}
        raw = text if text is not None else _dumps(draw, body)
        if strategy == "prompted" and text is None and draw(st.booleans()):
            raw = draw(st.sampled_from(["", "Here it is:\n", "Sure.\n\n"])) + "```json\n" + raw + "\n```\n"
        return Answer(raw, None, _cuts(draw, raw), wrong)

    answers: list[Answer] = []
    for _ in range(draw(st.integers(0, 3))):
        kind = draw(st.sampled_from(WRONG_KINDS))
        good_js = shape.value(draw)[0]
        if kind == "cut":
            whole = json.dumps({"response": good_js} if wrapped or calls else good_js)
            cut = whole[: draw(st.integers(1, len(whole) - 1))]
            answers.append(answer(good_js, kind, text=cut))
        elif kind == "garbage":
            answers.append(answer(good_js, kind, text=f"{MARK} is not JSON {{"))
        elif kind in ("type", "huge", "deep", "nan"):
            filler: Any = {"type": MARK, "huge": MARK * 3000, "deep": _nest(80), "nan": math.nan}[kind]
            answers.append(answer(shape.wrong(draw, filler), kind))
        elif kind == "dup":
            body = {"response": good_js} if wrapped or calls else good_js
            if not isinstance(body, dict) or not body:
                body = {"response": good_js}
            answers.append(answer(good_js, kind, text=_with_dup_key(draw, body)))
        else:  # prose: where a call is asked for, a text; else prose with no JSON
            answers.append(Answer(f"I think the answer is {MARK}.", None, (), kind))
    good_js, value = shape.value(draw)
    answers.append(answer(good_js, "", as_text=calls and draw(st.integers(0, 4)) == 0))
    return Case(shape, strategy, retries, tuple(answers), value, wrapped)


# -- the model ----------------------------------------------------------------------------------------------------


class Chunked:
    """Answers ``answers`` in order, each streamed in the chunks its cut points make (text, or a call's arguments).

    Fully capable (a forced tool choice, a response format): auto picks the tool strategy.
    """

    name = "chunked"
    default_model = "c-1"
    carries_tools = True
    carries_forced_tool_choice = True

    def __init__(self, answers: tuple[Answer, ...]) -> None:
        self.answers = list(answers)
        self.requests: list[LLMRequest] = []
        self.sent: list[Answer] = []

    def supports_forced_tool_choice(self, model: str | None) -> bool:
        return True

    def supports_response_format(self, model: str | None) -> bool:
        return True

    def _next(self, request: LLMRequest) -> tuple[Answer, LLMResponse]:
        self.requests.append(request)
        answer = self.answers.pop(0)
        self.sent.append(answer)
        return answer, answer.response(len(self.requests))

    async def complete(self, request: LLMRequest) -> LLMResponse:
        return self._next(request)[1]

    def stream(self, request: LLMRequest) -> Any:
        answer, response = self._next(request)

        def pieces(text: str) -> list[str]:
            bounds = [0, *answer.chunks, len(text)]
            return [text[a:b] for a, b in itertools.pairwise(bounds) if b > a]

        return streamed(response, pieces, raw=True)

    async def aclose(self) -> None:
        pass


# -- the run and its checks ---------------------------------------------------------------------------------------


def _same(a: Any, b: Any) -> bool:
    """Equal, floats by value (``-0.0`` is ``0.0``), and of the same types all the way down."""
    if isinstance(a, enum.Enum) or isinstance(b, enum.Enum):
        return a is b
    if type(a) is not type(b) and not (isinstance(a, int | float) and isinstance(b, int | float)):
        return False
    return bool(a == b)


async def drive(case: Case) -> tuple[Any, list[Any], Chunked]:
    provider = Chunked(case.answers)
    agent: Agent[Any] = Agent(provider, output_type=case.spec(), output_retries=case.retries, max_steps=10)
    values: list[Any] = []
    # No virtual deadline here: a big answer is checked in a worker thread, which a virtual clock reads as
    # idleness (it would jump to any deadline at once).  A hang is pytest-timeout's to report.
    async with agent.stream("answer") as run:
        async for v in run.partial_output():
            values.append(v)
    return run.result, values, provider


def check(case: Case, result: Any, values: list[Any], provider: Chunked) -> None:
    shape = case.shape
    for v in values:
        assert shape.conforms(v), f"a partial value not of the output type: {v!r}"
    fails = case.wrong > case.retries
    if fails:
        assert not result.ok and result.output is None, result
        err = result.error
        assert isinstance(err, OutputValidationError), repr(err)
        assert err.attempts == case.retries + 1, (err.attempts, case.retries)
        assert len(provider.sent) == case.retries + 1
        assert len(err.issues) <= 11 and all(len(i) <= 300 for i in err.issues), err.issues
        assert MARK not in str(err) and not any(MARK in i for i in err.issues), err
    else:
        assert result.ok and result.error is None, (result, result.error)
        assert not provider.answers, "every answer was asked for"
        assert shape.conforms(result.output), repr(result.output)
        assert _same(result.output, case.value), (result.output, case.value)
        assert values, "no final value"
        assert _same(values[-1], case.value), (values[-1], case.value)
        partials = values[:-1]
        for a, b in itertools.pairwise(partials):
            assert not _same(a, b), f"a partial value repeated: {a!r}"
    # Every answer the model sent is in the conversation, as it sent it.
    said = [m for m in result.messages if m.role == "assistant"]
    for answer in provider.sent:
        if answer.call is None:
            assert any(m.content == answer.text.strip() or answer.text.strip() in m.content for m in said), answer
        else:
            raws = [c.raw_arguments for m in said for c in m.tool_calls]
            assert answer.text in raws, answer


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@SETTINGS
@given(case=cases())
def test_generated_typed_output_keeps_the_documented_promises(backend: str, case: Case) -> None:
    name, options = virtual_backends()[0 if backend == "asyncio" else 1]
    result, values, provider = anyio.run(drive, case, backend=name, backend_options=options)
    check(case, result, values, provider)


# -- what it found, as plain examples --------------------------------------------------------------------------


class _Item(TypedDict):  # typing_extensions' TypedDict: the one pydantic asks for before Python 3.12
    name: str
    count: NotRequired[int]


class _Order(pydantic.BaseModel):
    item: _Item


@pytest.mark.anyio
@pytest.mark.parametrize("strategy", ["tool", "native"])
async def test_a_typing_extensions_typeddict_is_an_output_type(strategy: str) -> None:
    # typing.is_typeddict says no to typing_extensions' TypedDict before 3.13, and only that was asked:
    # building the Agent raised "cannot describe ... as JSON Schema" for a TypedDict, alone or in a model.
    for tp, arguments, value in [
        (_Item, {"name": "bolt"}, {"name": "bolt"}),
        (_Order, {"item": {"name": "nut", "count": 3}}, _Order(item={"name": "nut", "count": 3})),
    ]:
        spec = ToolOutput(tp) if strategy == "tool" else NativeOutput(tp)
        provider = Chunked((Answer(json.dumps(arguments), "final_result" if strategy == "tool" else None),))
        result = await Agent(provider, output_type=spec).run("order")
        assert result.ok and result.output == value, result.error


@pytest.mark.anyio
async def test_a_reasked_answer_does_not_repeat_the_last_partial_value_of_the_refused_one() -> None:
    # Each model call had its own follower, starting from nothing: the re-asked answer's first partial value
    # came again when it equalled the refused answer's last one ([] then [] here), though the docs say a partial
    # value equal to the last is not repeated.
    provider = Chunked((Answer('{"response": [], "response": []}', wrong="dup"), Answer('{"response": []}')))
    async with Agent(provider, output_type=NativeOutput(list[str])).stream("list") as run:
        values = [v async for v in run.partial_output()]
    assert run.result.output == []
    assert values == [[], []]  # one partial value, then the final one (always given)
