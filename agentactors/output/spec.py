"""What a user writes for a typed result: a bare type (auto) or one of the three output strategies.

``Agent(output_type=T)`` takes ``T`` itself — **auto**: the strategy is chosen per model call
(:mod:`agentactors.output.choice`) — or ``T`` wrapped in one of:

* :class:`ToolOutput` — the answer is a forced call of an output tool whose parameters are ``T``'s schema;
* :class:`NativeOutput` — the vendor's own JSON-schema response format;
* :class:`PromptedOutput` — the schema in the system prompt, JSON parsed from the text answer.

``OutputT`` is the type variable of everything generic in the output type (``Agent``, ``AgentRun``,
``RunResult``); it defaults to ``str``, so an unparameterised ``Agent`` / ``RunResult`` is what it
always was.  A special form (``Literal[...]``, ``A | B``) is not a ``type`` to a type checker: annotate
the agent (``agent: Agent[Pick] = Agent(p, output_type=Pick)  # type: ignore[arg-type]``).
"""

from __future__ import annotations

import builtins
import enum
import reprlib
import sys
from typing import Any, Generic, Literal, TypeAlias

import attrs

if sys.version_info >= (3, 13):  # pragma: no cover - the CI interpreter is 3.11
    from typing import TypeVar
else:
    # TypeVar defaults (PEP 696) before 3.13; typing_extensions is already there for anyio on these versions.
    from typing_extensions import TypeVar

__all__ = [
    "DEFAULT_TOOL_NAME",
    "NativeOutput",
    "OutputSpec",
    "OutputT",
    "PromptedOutput",
    "Strategy",
    "ToolOutput",
    "check_output_type",
    "strategy_of",
]

#: The output type of an agent, a run handle and a result (``str`` when none is given).
OutputT = TypeVar("OutputT", default=str)

#: The three ways an answer can be asked for: a forced output tool, the vendor's format, the prompt.
Strategy: TypeAlias = Literal["tool", "native", "prompted"]

DEFAULT_TOOL_NAME = "final_result"


def _check_name(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is None:
        return
    if not isinstance(value, str):  # the wrong type is a TypeError, as for output_retries
        raise TypeError(f"{attribute.name} must be a non-empty str, not {type(value).__name__} {value!r}")
    if not value:
        raise ValueError(f"{attribute.name} must be a non-empty str, not {value!r}")


def _check_text(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    """``description`` / ``template``: a str or ``None``, refused here rather than where the agent uses it (a
    ``template=5`` was "argument of type 'int' is not iterable" when the agent was built)."""
    if value is not None and not isinstance(value, str):
        raise TypeError(f"{attribute.name} must be a str or None, not {type(value).__name__}")


def _check_bool(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    """``strict``: a bool.  A truthy value of another type (``strict="no"``) was taken as ``True`` and sent."""
    if not isinstance(value, bool):
        raise TypeError(f"{attribute.name} must be a bool, not {type(value).__name__} {value!r}")


# Values that are never a type form: written where a type was meant (``[int]`` for ``list[int]``, ``(int, str)``
# for ``int | str``, ``"int"`` for ``int``).  A class, an alias (``list[int]``) or a special form
# (``Literal[...]``, ``Any``, ``A | B``) is an instance of none of these.
_VALUES = (str, bytes, int, float, complex, list, tuple, set, frozenset, dict, enum.Enum)


def _label(tp: Any) -> str:
    if isinstance(tp, type):
        return tp.__name__
    return repr(tp).replace("typing.", "")


def _either(items: list[Any]) -> str:
    return " | ".join(_label(i) for i in items)


def _instead(value: Any) -> str:
    """What to write instead of ``value`` (a value written where a type was meant)."""
    if isinstance(value, list | set | frozenset):
        kind = type(value).__name__
        items = list(value)
        if items and all(_is_type_form(i) for i in items):
            return f"write {kind}[{_either(items)}] for a {kind} of {_either(items)}"
        if 0 < len(items) <= 8 and all(isinstance(i, str | int) and not isinstance(i, enum.Enum) for i in items):
            picks = ", ".join(reprlib.repr(i) for i in items)
            return f"write Literal[{picks}] for one of these values, or {kind}[Literal[{picks}]] for a {kind} of them"
        return f"write {kind}[X] for a {kind} of X"
    if isinstance(value, tuple):
        if value and all(_is_type_form(i) for i in value):
            either = _either(list(value))
            union = ", ".join(_label(i) for i in value)
            return f"write {either} (or Union[{union}]) for one of them, or tuple[{union}] for exactly these in order"
        return "write A | B (or Union[A, B]) for one of several types, or tuple[A, B] for a pair"
    if isinstance(value, dict):
        return "write dict[str, X] for a mapping, or a TypedDict, dataclass or pydantic model for named fields"
    if isinstance(value, str):
        named = getattr(builtins, value.strip(), None)
        if isinstance(named, type):
            return f"write {named.__name__}, the type itself, not its name"
        return f"write the class itself, not its name, or Literal[{reprlib.repr(value)}] for that one string"
    if isinstance(value, enum.Enum):
        return f"write {type(value).__name__} for any of its members, or Literal[{value!s}] for this one"
    if isinstance(value, bytes):
        return "write str for a text answer"
    kind = type(value).__name__
    return f"write {kind} for any {kind}, or Literal[{reprlib.repr(value)}] for this one value"


def _is_type_form(value: Any) -> bool:
    return value is None or not isinstance(value, _VALUES)


def check_output_type(value: Any, label: str = "output_type") -> None:
    """Refuse a value written where the answer's type was meant (``[int]``, ``(int, str)``, ``5``, ``"int"``).

    Only the plain values no type form can be; whether a type has a JSON Schema form is
    :class:`~agentactors.output.target.OutputTarget`'s to say.  Checked once, when the agent or the spec is made.

    :raises TypeError: naming ``label``, saying what it takes and what to write instead.
    """
    if _is_type_form(value):
        return
    what = f"a {type(value).__name__}" if isinstance(value, list | tuple | set | frozenset | dict) else (
        f"the {type(value).__name__} {reprlib.repr(value)}")  # (cut short: a long string stays out of the text)
    raise TypeError(
        f"{label} takes a type (str, int, a pydantic model or dataclass, list[X], Literal[...], A | B, ...), "
        f"not {what}: {_instead(value)}"
    )


def _check_type(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    check_output_type(value, attribute.name)


@attrs.frozen(slots=True)
class ToolOutput(Generic[OutputT]):
    """The answer as a forced call of an output tool whose parameters are ``output_type``'s schema.

    The request carries the output tool with ``ToolChoice.tool(name)`` when it is the only tool offered,
    else ``ToolChoice.required()`` (the agent's own tools keep working until an output tool is called),
    on every step until an output tool is called with valid arguments, which ends the run.  A union of
    object types offers one output tool per member, named ``{name}_{Member}``.  A model that rejects a
    forced choice fails the run with :class:`~agentactors.UnsupportedToolChoiceError` before anything is
    sent (auto would pick another strategy instead).

    :param output_type: the answer's type (see ``docs/output.md`` for the families).
    :param name: the output tool's name.
    :param description: what the tool's description tells the model (default: from the type).
    """

    output_type: type[OutputT] = attrs.field(validator=_check_type)
    name: str = attrs.field(default=DEFAULT_TOOL_NAME, kw_only=True, validator=_check_name)
    description: str | None = attrs.field(default=None, kw_only=True, validator=_check_text)


@attrs.frozen(slots=True)
class NativeOutput(Generic[OutputT]):
    """The answer as JSON text the vendor constrains to ``output_type``'s schema (its response format).

    OpenAI ``response_format`` (``json_schema``), Anthropic ``output_config.format``, Gemini
    ``generationConfig.responseJsonSchema``.  A wire or model that cannot carry it fails the run with a
    request-kind :class:`~agentactors.ProviderError` before anything is sent.

    :param output_type: the answer's type.
    :param name: the format's name on OpenAI's wire (default: from the type).
    :param strict: OpenAI's strict mode (the schema fitted to it: every property required, optional ones
        nullable); the other wires ignore it.
    """

    output_type: type[OutputT] = attrs.field(validator=_check_type)
    name: str | None = attrs.field(default=None, kw_only=True, validator=_check_name)
    strict: bool = attrs.field(default=True, kw_only=True, validator=_check_bool)


@attrs.frozen(slots=True)
class PromptedOutput(Generic[OutputT]):
    """The answer as JSON text the system prompt asks for; parsed from the answer, fenced or not.

    Works on every model (nothing but text is asked of the wire) and guarantees nothing until validated:
    the loop validates and re-asks like the other strategies.

    :param output_type: the answer's type.
    :param template: the instruction added to the system prompt; ``{schema}`` in it is replaced by the
        JSON Schema (appended after it when the template has no ``{schema}``).  Default: see
        :data:`agentactors.output.prompt.DEFAULT_TEMPLATE`.
    """

    output_type: type[OutputT] = attrs.field(validator=_check_type)
    template: str | None = attrs.field(default=None, kw_only=True, validator=_check_text)


#: What ``Agent(output_type=...)`` takes: a type, or a type in one of the strategies.
OutputSpec: TypeAlias = ToolOutput[Any] | NativeOutput[Any] | PromptedOutput[Any]


def strategy_of(spec: object) -> Strategy | None:
    """The strategy an explicit spec names; ``None`` for a bare type (auto)."""
    if isinstance(spec, ToolOutput):
        return "tool"
    if isinstance(spec, NativeOutput):
        return "native"
    if isinstance(spec, PromptedOutput):
        return "prompted"
    return None
