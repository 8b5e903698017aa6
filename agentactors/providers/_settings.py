"""What every wire does with a model setting it cannot carry: drop it, said out loud, or refuse the request.

Two answers, one rule (``docs/settings.md``, "Dropped or refused"):

* a setting that only *tunes* generation (``temperature``, ``top_p``, ``seed``, ``parallel_tool_calls``,
  ``reasoning_effort`` on a model that does not reason, cache retention) is **dropped** when the wire or the
  model has no field for it, and the drop is recorded as an ``llm.setting_dropped`` event: the answer comes
  back, generated without the tuning;
* a setting that *constrains* what comes back (``stop``, ``thinking_budget``), a value the model refuses
  (an effort it does not know, a budget out of its range) and two settings that conflict are **refused**
  with :class:`~agentactors.UnsupportedSettingError` (request kind) before anything is sent: dropping them
  would hand back something the caller did not ask for.

``vendor_options`` may set any vendor field but the few a codec owns (:func:`check_owned`): the model, the
conversation and the streaming flag.  Replacing those would send another model than the tables judged, lose
the conversation, or make the decoder read a JSON answer as a stream (a malformed response, retried).

What a vendor option sets is judged like a setting: the value *sent* is checked (:func:`sent_number`,
:func:`sent_integer`), whichever way it was given, so ``{"temperature": 1.5}`` in Anthropic's options is refused
as ``temperature=1.5`` in the settings is.  Each wire checks its body after merging its options, and only when
there are options (the settings alone were checked on the way in).

A declared tool whose name the vendor's documented rule refuses is refused too, per wire
(:func:`check_tool_names`, :class:`UnsupportedToolNameError`): ``ToolSpec`` takes the widest names any vendor
takes (dots included, which Gemini accepts and the others refuse).

Per-model capability data lives with each wire (``openai/models.py``, ``anthropic/models.py``,
``gemini/models.py``); model names are matched by :func:`match_model`.
"""

from __future__ import annotations

import fnmatch
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol, TypeVar

import attrs

from ..errors import ErrorKind, ProviderError, UnsupportedSettingError
from ..events import emit
from ..messages import ToolSpec

__all__ = [
    "ANTHROPIC_TOOL_NAMES",
    "BEDROCK_TOOL_NAMES",
    "GEMINI_TOOL_NAMES",
    "OPENAI_TOOL_NAMES",
    "Row",
    "ToolNameRule",
    "UnsupportedToolNameError",
    "bare_model",
    "check_owned",
    "check_tool_names",
    "dropped",
    "listed",
    "match_model",
    "refused",
    "sent_integer",
    "sent_number",
]


class Row(Protocol):
    """A row of a per-model capability table: the model-name patterns it applies to."""

    @property
    def patterns(self) -> tuple[str, ...]: ...


RowT = TypeVar("RowT", bound=Row)


def bare_model(model: str) -> str:
    """The model's own name: lower case, without a router's ``vendor/`` or a cloud's ``anthropic.`` prefix.

    ``openai/gpt-5`` (OpenRouter), ``us.anthropic.claude-opus-4-6-v1`` (Bedrock) and ``models/gemini-2.5-pro``
    (Gemini's resource name) are ``gpt-5``, ``claude-opus-4-6-v1`` and ``gemini-2.5-pro``.
    """
    name = model.strip().lower().rsplit("/", 1)[-1]
    marker = name.find("claude-")
    return name[marker:] if marker > 0 else name


# (id(table), model) -> (table, its row): a provider asks for the same model on every request, and a
# table scan is ~40 fnmatch calls.  The table is kept in the value so its id cannot be reused meanwhile.
_MATCHES: dict[tuple[int, str], tuple[Sequence[Any], Any]] = {}
_MATCHES_SIZE = 1024


def match_model(table: Sequence[RowT], model: str) -> RowT | None:
    """The first row of ``table`` one of whose ``fnmatch`` patterns matches ``model``; ``None``: unknown model.

    An unknown model gets every setting as given (the vendor judges it): the tables know the vendor's own
    models, and a compatible server's models are its own business.  The answer is remembered per table
    and model name (the tables are constants).
    """
    key = (id(table), model)
    hit = _MATCHES.get(key)
    if hit is not None and hit[0] is table:
        found: RowT | None = hit[1]
        return found
    name = bare_model(model)
    found = None
    for row in table:
        if any(fnmatch.fnmatchcase(name, pattern) for pattern in row.patterns):
            found = row
            break
    if len(_MATCHES) >= _MATCHES_SIZE:
        _MATCHES.clear()
    _MATCHES[key] = (table, found)
    return found


def dropped(wire: str, model: str, setting: str, value: Any, reason: str) -> None:
    """Record that ``setting`` was left out of the request to ``model``, and why (``llm.setting_dropped``)."""
    emit("llm.setting_dropped", wire=wire, model=model, setting=setting, value=value, reason=reason)


def refused(wire: str, model: str, setting: str, why: str) -> UnsupportedSettingError:
    """The request-kind error for a setting ``model`` cannot take (returned, for the caller to raise)."""
    return UnsupportedSettingError(
        f"{setting}: {why} (model {model!r}); nothing was sent", provider=wire, model=model, setting=setting
    )


def listed(values: Iterable[str]) -> str:
    """``'low', 'medium' or 'high'``: accepted values, for an error text."""
    items = [repr(v) for v in values]
    if not items:
        return "none"
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " or " + items[-1]


def check_owned(wire: str, model: str, options: Mapping[str, Any], owned: frozenset[str]) -> None:
    """Refuse ``vendor_options[wire]`` keys the codec owns (``owned``), a ``None`` (remove) included.

    The error names the keys, never their values (a vendor option may hold a credential).
    """
    clash = sorted(str(key) for key in options if key in owned)
    if clash:
        raise refused(
            wire, model, "vendor_options",
            f"vendor_options[{wire!r}] may not set {listed(clash)}: the codec owns the model (the provider's, or "
            "LLMRequest.model), the conversation (the request's messages) and streaming (stream() or complete())",
        )


def _from(key: str, options: Mapping[str, Any], wire: str) -> str:
    return f" (vendor_options[{wire!r}][{key!r}])" if key in options else ""


def _shown(value: Any) -> str:
    # A number is shown; anything else only by its type (a vendor option may hold a credential).
    if isinstance(value, int | float) and not isinstance(value, bool):
        return repr(value)
    return f"a {type(value).__name__}"


def sent_number(
    wire: str, model: str, setting: str, key: str, value: Any, options: Mapping[str, Any], *,
    low: float, high: float | None,
) -> None:
    """Refuse a body field ``key`` (the setting ``setting``) whose value is not a finite number in [low, high].

    ``None`` (not sent) passes.  ``options`` (this wire's vendor options) say whether the value came from them,
    which the error then names.
    """
    if value is None:
        return
    number_ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    if not number_ok or value < low or (high is not None and value > high):
        span = f"{low:g} to {high:g}" if high is not None else f"at least {low:g}"
        raise refused(wire, model, setting, f"{key} takes a number from {span}, not {_shown(value)}"
                      f"{_from(key, options, wire)}")


def sent_integer(
    wire: str, model: str, setting: str, key: str, value: Any, options: Mapping[str, Any], *,
    low: int, high: int,
) -> None:
    """Refuse a body field ``key`` whose value is not an int in [low, high] (``None``, not sent, passes)."""
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise refused(wire, model, setting, f"{key} takes an integer from {low} to {high}, not {_shown(value)}"
                      f"{_from(key, options, wire)}")


class UnsupportedToolNameError(ProviderError):
    """A declared tool whose name the wire's vendor refuses (a 400), refused before anything is sent.

    ``ToolSpec`` takes the widest names any vendor takes (letters, digits, ``_``, ``.``, ``-``); OpenAI,
    Anthropic and Bedrock take no dots.  ``tool`` is the name, ``rule`` the vendor's documented rule.  A request
    fault, like every refusal before sending: never retried, moved to a fallback or counted by a breaker (the
    tools are the program's own, and a chain whose primary refused them all would run on its fallback for good).
    """

    def __init__(self, message: str, *, provider: str, model: str | None = None, tool: str, rule: str) -> None:
        super().__init__(message, provider=provider, model=model, kind=ErrorKind.request, retryable=False)
        self.tool = tool
        self.rule = rule


@attrs.frozen(slots=True)
class ToolNameRule:
    """A vendor's documented rule for a tool's name: the pattern a name must match whole, and the rule in words."""

    pattern: re.Pattern[str]
    text: str


#: OpenAI's function name ("a-z, A-Z, 0-9, or contain underscores and dashes, with a maximum length of 64"):
#: Chat Completions, Responses and Azure.
OPENAI_TOOL_NAMES = ToolNameRule(re.compile(r"[A-Za-z0-9_-]{1,64}"),
                                 "letters, digits, '_' and '-', 1 to 64 characters (^[a-zA-Z0-9_-]{1,64}$)")
#: Anthropic's tool name ("Must match the regex ^[a-zA-Z0-9_-]{1,64}$", the define-tools guide).
ANTHROPIC_TOOL_NAMES = ToolNameRule(re.compile(r"[A-Za-z0-9_-]{1,64}"),
                                    "letters, digits, '_' and '-', 1 to 64 characters (^[a-zA-Z0-9_-]{1,64}$)")
#: Converse's ToolSpecification.name ("Minimum length of 1. Maximum length of 64. Pattern: [a-zA-Z0-9_-]+").
BEDROCK_TOOL_NAMES = ToolNameRule(re.compile(r"[A-Za-z0-9_-]{1,64}"),
                                  "letters, digits, '_' and '-', 1 to 64 characters ([a-zA-Z0-9_-]+, length 1-64)")
#: FunctionDeclaration.name ("Must start with a letter or an underscore. Must be a-z, A-Z, 0-9, or contain
#: underscores, dots, colons and dashes, with a maximum length of 64": the stricter of the Gemini API's and
#: Vertex AI's words, as the one wire serves both).
GEMINI_TOOL_NAMES = ToolNameRule(re.compile(r"[A-Za-z_][A-Za-z0-9_.:-]{0,63}"),
                                 "a letter or '_' first, then letters, digits, '_', '.', ':' and '-', "
                                 "at most 64 characters")


def check_tool_names(wire: str, model: str, tools: Iterable[ToolSpec], rule: ToolNameRule) -> None:
    """Raise :class:`UnsupportedToolNameError` for the first tool whose name ``rule`` refuses."""
    for spec in tools:
        if rule.pattern.fullmatch(spec.name) is None:
            raise UnsupportedToolNameError(
                f"tool {spec.name!r}: this vendor takes tool names of {rule.text}; rename the tool (e.g. "
                f"{re.sub(r'[^A-Za-z0-9_-]', '_', spec.name)[:64]!r}); nothing was sent",
                provider=wire, model=model, tool=spec.name, rule=rule.text,
            )
