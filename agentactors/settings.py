"""Model settings: how a model generates, said once, vendor-neutrally, and merged run over agent over provider.

:class:`ModelSettings` is a frozen bag of optional fields (``None`` everywhere means "the vendor's default").
It is validated where it is built — ranges and types — so a typo fails at the line that wrote it, not in a
codec three layers down.  Who sets what:

* a provider's defaults (``OpenAIProvider(..., settings=ModelSettings(seed=7))``),
* an agent's (``Agent(..., settings=...)``), which win over the provider's,
* a run's (``agent.run(..., settings=...)``), which win over both.

Merging is field by field (:meth:`ModelSettings.merge`): a field the winner leaves unset keeps the other's
value.  ``extra`` (the vendor passthrough, shaped like ``LLMRequest.vendor_options``:
``{"anthropic": {...}, "openai": {...}}``) merges one level deeper, wire by wire and key by key, so a run that
adds an OpenAI option keeps the agent's Anthropic ones.

How a field reaches each wire, which fields a model cannot carry (dropped with an ``llm.setting_dropped``
event) and which combinations are refused before sending: ``docs/settings.md``.  This module knows no wire;
the codecs in :mod:`agentactors.providers` read the fields from the request.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any, ClassVar, Literal, TypeAlias

import attrs

__all__ = [
    "EXTRA_WIRES",
    "NO_STOP",
    "REASONING_EFFORTS",
    "CachePolicy",
    "ModelSettings",
    "ReasoningEffort",
    "check_cache",
    "check_max_tokens",
    "check_reasoning_effort",
    "check_seed",
    "check_stop",
    "check_temperature",
    "check_thinking_budget",
    "check_timeout",
    "check_top_p",
    "to_cache",
    "to_stop",
]

ReasoningEffort: TypeAlias = Literal["none", "minimal", "low", "medium", "high", "xhigh", "max"]
#: Every effort any wire knows, lowest first (OpenAI: none…xhigh; Anthropic: low…max).  Which a model accepts
#: is the wire's per-model data; a value outside this list is a typo and fails at construction.
REASONING_EFFORTS: tuple[str, ...] = ("none", "minimal", "low", "medium", "high", "xhigh", "max")

# The widest ranges any wire accepts (OpenAI and Gemini: temperature 0..2; Anthropic and Bedrock 0..1, checked by
# their codecs).
_TEMPERATURE_MAX = 2.0
# OpenAI's seed is an int64, vLLM's a torch long; Gemini's an int32 (checked by its codec).  Token counts are bounded
# the same way: a vendor option past it is refused by the codecs (``sent_integer``), so a setting is too.
_SEED_MIN, _SEED_MAX = -(2**63), 2**63 - 1


def _number(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{name} must be a number, not {type(value).__name__}")
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, not {value!r}")
    return float(value)


def _integer(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    return value


def check_temperature(value: float | None, *, ceiling: bool = True) -> None:
    """``None`` or a finite number in [0, 2] (the widest any wire takes).

    ``ceiling=False`` (what ``LLMRequest`` checks) leaves the upper bound to the wire: a compatible server may
    take more than 2, but no server takes a negative, NaN, infinite or non-numeric temperature.
    """
    if value is None:
        return
    number = _number("temperature", value)
    if not ceiling:
        if number < 0.0:
            raise ValueError(f"temperature must be >= 0, not {value!r}")
    elif not 0.0 <= number <= _TEMPERATURE_MAX:
        raise ValueError(f"temperature must be between 0 and {_TEMPERATURE_MAX:g}, not {value!r}")


def check_top_p(value: float | None) -> None:
    """``None`` or a number in [0, 1]."""
    if value is not None and not 0.0 <= _number("top_p", value) <= 1.0:
        raise ValueError(f"top_p must be between 0 and 1, not {value!r}")


def check_max_tokens(value: int | None, *, int64: bool = False) -> None:
    """``None`` or a positive int; with ``int64`` (what ``ModelSettings`` checks), one that fits a signed 64-bit
    integer (no vendor or server parses a larger one, and a vendor option past it is refused)."""
    if value is not None and _integer("max_tokens", value) <= 0:
        raise ValueError("max_tokens must be positive")
    if int64 and value is not None and value > _SEED_MAX:
        raise ValueError(f"max_tokens must fit a signed 64-bit integer (at most {_SEED_MAX}), not {value!r}")


def check_seed(value: int | None) -> None:
    """``None`` or an int that fits a signed 64-bit integer (the widest seed any vendor or server takes)."""
    if value is not None and not _SEED_MIN <= _integer("seed", value) <= _SEED_MAX:
        raise ValueError(f"seed must fit a signed 64-bit integer ({_SEED_MIN} to {_SEED_MAX}), not {value!r}")


def check_reasoning_effort(value: str | None) -> None:
    """``None`` or one of :data:`REASONING_EFFORTS` (which of them a model accepts is checked per model)."""
    if value is None:
        return
    if not isinstance(value, str):
        raise TypeError(f"reasoning_effort must be a str, not {type(value).__name__}")
    if value not in REASONING_EFFORTS:
        raise ValueError(f"reasoning_effort must be one of {', '.join(REASONING_EFFORTS)}, not {value!r}")


def check_thinking_budget(value: int | None, *, int64: bool = False) -> None:
    """``None`` or an int >= 0 (0: no thinking; each wire checks its own minimum and maximum); with ``int64`` (what
    ``ModelSettings`` checks), one that fits a signed 64-bit integer."""
    if value is not None and _integer("thinking_budget", value) < 0:
        raise ValueError(f"thinking_budget must be >= 0 tokens, not {value!r}")
    if int64 and value is not None and value > _SEED_MAX:
        raise ValueError(f"thinking_budget must fit a signed 64-bit integer (at most {_SEED_MAX}), not {value!r}")


def check_timeout(value: float | None) -> None:
    """``None`` or a positive number of seconds."""
    if value is not None and _number("timeout", value) <= 0:
        raise ValueError(f"timeout must be a positive number of seconds, not {value!r}")


def check_cache(value: CachePolicy | None) -> None:
    """``None`` or a :class:`CachePolicy` (``True`` / ``False`` are converted by :func:`to_cache`)."""
    if value is not None and not isinstance(value, CachePolicy):
        raise TypeError(f"cache must be a bool or a CachePolicy, not {type(value).__name__}")


def check_stop(value: tuple[str, ...]) -> None:
    """Every stop sequence a non-empty str (a ``ValueError`` otherwise, as it has always been: code catches it)."""
    for s in value:
        if not isinstance(s, str) or not s:
            raise ValueError(f"stop sequences must be non-empty strings, not {s!r}")


class _NoStop(tuple[str, ...]):
    """``stop`` emptied on purpose (``ModelSettings(stop=[])``): ``()`` to every reader, but a provider's default
    stop sequences do not fill it (``LLMRequest.with_defaults``), as they fill an unset one."""

    __slots__ = ()

    def __reduce__(self) -> tuple[Any, ...]:
        return (_NoStop, ())


#: ``LLMRequest.stop`` when settings emptied it on purpose (:class:`_NoStop`); equal to ``()``.
NO_STOP: tuple[str, ...] = _NoStop()


def to_stop(value: str | Iterable[str] | None) -> tuple[str, ...] | None:
    """A bare string is one stop sequence, not a sequence of characters; ``None`` stays unset.

    :raises TypeError: neither a str nor an iterable of them (a mapping too: its keys are no stop sequences; and
        bytes, whose items are ints).
    """
    if value is None:
        return None
    if isinstance(value, str):
        return (value,)
    if isinstance(value, Mapping | bytes | bytearray | memoryview) or not isinstance(value, Iterable):
        raise TypeError(f"stop must be a str or a sequence of str, not {type(value).__name__}")
    return tuple(value)


#: The keys ``ModelSettings.extra`` takes: the wire names whose codecs read their options (each wire's ``WIRE``,
#: ``request.options_for(WIRE)``).  Azure's chat and Responses APIs read ``"openai"`` / ``"openai-responses"``,
#: Claude and Gemini on Vertex ``"anthropic"`` / ``"gemini"``.  A test ties this to the codecs' constants.
EXTRA_WIRES: tuple[str, ...] = ("openai", "openai-responses", "anthropic", "gemini", "bedrock")


def _to_extra(value: Mapping[str, Any] | None) -> dict[str, dict[str, Any]] | None:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise TypeError(f"extra must be a mapping of wire name to options, not {type(value).__name__}")
    out: dict[str, dict[str, Any]] = {}
    for wire, options in value.items():
        if not isinstance(wire, str) or not isinstance(options, Mapping):
            raise TypeError(
                'extra is keyed by wire, like LLMRequest.vendor_options: {"openai": {...}, "anthropic": {...}}; '
                f"{wire!r} maps to a {type(options).__name__}"
            )
        if wire not in EXTRA_WIRES:
            # Else no wire reads it: a typo ("opnai") would drop the options without a word.
            raise ValueError(
                f"extra: unknown wire {wire!r}; the wires are {', '.join(map(repr, EXTRA_WIRES))}"
            )
        out[wire] = dict(options)
    return out


@attrs.frozen(slots=True)
class CachePolicy:
    """Prompt caching, vendor-neutrally: which stable prefixes to mark for the vendor's cache.

    :param system: cache the system prompt.
    :param tools: cache the tool definitions.
    :param conversation: cache the conversation so far (a breakpoint on the newest message, so each step
        reads the previous step's prefix from the cache).
    :param retention: ``"default"`` or ``"extended"`` (Anthropic: a 1-hour TTL on the system and tool
        breakpoints; OpenAI: ``prompt_cache_retention: "24h"``).

    ``ModelSettings(cache=True)`` is ``CachePolicy()`` (everything, default retention);
    ``cache=False`` is :meth:`off`.  Wires that cache prefixes on their own (OpenAI, Gemini) need no
    breakpoints; on them only ``retention`` means something.
    """

    system: bool = True
    tools: bool = True
    conversation: bool = True
    retention: Literal["default", "extended"] = attrs.field(default="default")

    _RETENTIONS: ClassVar[frozenset[str]] = frozenset(("default", "extended"))

    @retention.validator
    def _check_retention(self, _: attrs.Attribute[str], value: str) -> None:
        if value not in self._RETENTIONS:
            raise ValueError(f"CachePolicy.retention must be 'default' or 'extended', not {value!r}")

    def __attrs_post_init__(self) -> None:
        for name in ("system", "tools", "conversation"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"CachePolicy.{name} must be a bool")

    @classmethod
    def off(cls) -> CachePolicy:
        """No breakpoints at all (what ``cache=False`` means)."""
        return _OFF

    @property
    def enabled(self) -> bool:
        """Whether anything is to be cached."""
        return self.system or self.tools or self.conversation


_OFF = CachePolicy(system=False, tools=False, conversation=False)


def to_cache(value: bool | CachePolicy | None) -> CachePolicy | None:
    """``True`` → :class:`CachePolicy`\\ (), ``False`` → :meth:`CachePolicy.off`, a policy as is."""
    if value is None or isinstance(value, CachePolicy):
        return value
    if isinstance(value, bool):
        return CachePolicy() if value else _OFF
    raise TypeError(f"cache must be a bool or a CachePolicy, not {type(value).__name__}")


_FIELDS = (
    "temperature",
    "top_p",
    "max_tokens",
    "stop",
    "seed",
    "parallel_tool_calls",
    "reasoning_effort",
    "thinking_budget",
    "cache",
    "timeout",
    "extra",
)


@attrs.frozen(slots=True)
class ModelSettings:
    """How the model generates; every field optional (``None``: the vendor's default).

    :param temperature: sampling temperature, 0–2 (Anthropic and Bedrock take 0–1).
    :param top_p: nucleus sampling, 0–1.
    :param max_tokens: the most output tokens (thinking included where the vendor counts it so).
    :param stop: stop sequences (a bare string is one).
    :param seed: a sampling seed, for reproducible answers where the vendor supports it (a signed 64-bit
        integer; Gemini takes 32 bits).
    :param parallel_tool_calls: whether the model may call several tools in one step.
    :param reasoning_effort: one of :data:`REASONING_EFFORTS`; which a model accepts is checked per model
        before sending (OpenAI ``reasoning_effort``, Anthropic ``output_config.effort`` with adaptive thinking
        or a thinking budget on older models, Gemini ``thinkingLevel`` / ``thinkingBudget``).
    :param thinking_budget: tokens the model may think for (0: no thinking); Anthropic requires at least
        1024 and fewer than ``max_tokens``.
    :param cache: prompt caching: ``True``, ``False`` or a :class:`CachePolicy`.
    :param timeout: seconds: the HTTP timeout of each model call, overriding the provider's (a bound on a
        whole call, retries included, is ``with_timeout``'s job).
    :param extra: vendor-only request fields, keyed by wire (one of :data:`EXTRA_WIRES`), merged into the
        request body as ``LLMRequest.vendor_options`` are.

    :raises TypeError, ValueError: a field of the wrong type or out of range; a key of ``extra`` no wire reads.
    """

    temperature: float | None = attrs.field(default=None)
    top_p: float | None = attrs.field(default=None)
    max_tokens: int | None = attrs.field(default=None)
    stop: tuple[str, ...] | None = attrs.field(default=None, converter=to_stop)
    seed: int | None = attrs.field(default=None)
    parallel_tool_calls: bool | None = attrs.field(default=None)
    reasoning_effort: ReasoningEffort | None = attrs.field(default=None)
    thinking_budget: int | None = attrs.field(default=None)
    cache: CachePolicy | None = attrs.field(default=None, converter=to_cache)
    timeout: float | None = attrs.field(default=None)
    extra: dict[str, dict[str, Any]] | None = attrs.field(default=None, converter=_to_extra)

    def __attrs_post_init__(self) -> None:
        check_temperature(self.temperature)
        check_top_p(self.top_p)
        check_max_tokens(self.max_tokens, int64=True)
        if self.stop is not None:
            check_stop(self.stop)
        check_seed(self.seed)
        if self.parallel_tool_calls is not None and not isinstance(self.parallel_tool_calls, bool):
            raise TypeError(f"parallel_tool_calls must be a bool, not {type(self.parallel_tool_calls).__name__}")
        check_reasoning_effort(self.reasoning_effort)
        check_thinking_budget(self.thinking_budget, int64=True)
        check_timeout(self.timeout)

    def __bool__(self) -> bool:
        """Whether any field is set (an empty ``ModelSettings()`` changes nothing)."""
        return any(getattr(self, name) is not None for name in _FIELDS)

    def merge(self, other: ModelSettings | None) -> ModelSettings:
        """These settings with ``other``'s set fields winning, field by field (``extra`` wire by wire, key by key).

        ``self.merge(None)`` and merging an empty ``ModelSettings()`` return ``self``.
        """
        if other is None or other is self or not other:
            return self
        if not self:
            return other
        changes: dict[str, Any] = {}
        for name in _FIELDS:
            value = getattr(other, name)
            if value is not None:
                changes[name] = value
        # Merged whenever both are set: an empty ``extra`` in ``other`` adds nothing (it must not replace ours).
        if self.extra is not None and other.extra is not None:
            merged = {wire: dict(options) for wire, options in self.extra.items()}
            for wire, options in other.extra.items():
                merged[wire] = {**merged.get(wire, {}), **options}
            changes["extra"] = merged
        return attrs.evolve(self, **changes)

    def request_fields(self) -> dict[str, Any]:
        """The ``LLMRequest`` keyword arguments these settings stand for (set fields only).

        ``extra`` becomes ``vendor_options``; every other field keeps its name.
        """
        out: dict[str, Any] = {}
        for name in _FIELDS:
            value = getattr(self, name)
            if value is None:
                continue
            out["vendor_options" if name == "extra" else name] = value
        if self.stop == ():  # emptied on purpose: no stop sequences, not the provider's default ones
            out["stop"] = NO_STOP
        return out
