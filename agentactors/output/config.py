"""An agent's output configuration, built once: the target, the strategy, what each strategy sends.

:meth:`OutputConfig.build` reads ``Agent(output_type=..., output_retries=..., output_validator=...)``.
It returns ``None`` for the default — ``str`` with no validator — so a text agent carries nothing new
and its runs pay nothing for typed results.
"""

from __future__ import annotations

import re
import threading
import weakref
from collections.abc import Iterable
from typing import Any

import attrs

from ..messages import ResponseFormat, ToolSpec
from ..redaction import on_secret_registered
from ..tools.schema import without_credentials
from .context import OutputValidator, validator_arity
from .prompt import instruction
from .spec import (
    DEFAULT_TOOL_NAME,
    NativeOutput,
    PromptedOutput,
    Strategy,
    ToolOutput,
    check_output_type,
    strategy_of,
)
from .target import OutputTarget, type_label

__all__ = ["OutputConfig"]

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")


def _format_name(tp: Any) -> str:
    name = _UNSAFE.sub("_", type_label(tp)).strip("_")[:64]
    return name or DEFAULT_TOOL_NAME


@attrs.frozen(slots=True, eq=False)
class OutputConfig:
    """What every run of one agent needs to ask for, and check, its typed result.

    ``strategy`` is the explicit one (``None``: auto, chosen per model call); ``target`` is ``None`` for
    a plain ``str`` answer that only an output validator checks.
    """

    target: OutputTarget | None
    strategy: Strategy | None
    retries: int
    validator: OutputValidator | None = None
    arity: int = 2
    tool_specs: tuple[ToolSpec, ...] = ()
    response_format: ResponseFormat | None = None
    prompt: str = ""
    template: str | None = None  # the prompted instruction's template: the prompt is made again from it

    @property
    def plain(self) -> bool:
        """A ``str`` answer checked by the validator alone: no strategy, no schema, the request unchanged."""
        return self.target is None

    @classmethod
    def build(
        cls,
        output_type: Any,
        *,
        retries: int,
        validator: OutputValidator | None,
        tool_names: Iterable[str] = (),
    ) -> OutputConfig | None:
        """The configuration for an agent, or ``None`` when there is nothing to do (``str``, no validator).

        :raises TypeError: an output type that is a value (``[int]``, ``(int, str)``, ``5``, ``"int"``) or has no
            JSON Schema form; ``retries`` not an int; a validator that is not callable.
        :raises ValueError: ``retries`` is negative, or an output tool's name is one of the agent's tools.
        """
        if isinstance(retries, bool) or not isinstance(retries, int):  # True is an int to Python: not a count
            raise TypeError(f"output_retries must be an int >= 0 (how many re-asks), not {retries!r}")
        if retries < 0:
            raise ValueError(f"output_retries must be an int >= 0 (how many re-asks), not {retries!r}")
        arity = validator_arity(validator) if validator is not None else 2
        strategy = strategy_of(output_type)
        tp = output_type.output_type if strategy is not None else output_type
        if tp is None:
            raise TypeError("output_type cannot be None: use str for a text answer")
        check_output_type(tp)  # [int], (int, str), 5, "int": said so, not "unhashable type: 'list'"
        if strategy is None and tp is str:
            if validator is None:
                return None
            return cls(None, None, retries, validator, arity)
        name = output_type.name if isinstance(output_type, ToolOutput) else DEFAULT_TOOL_NAME
        description = output_type.description if isinstance(output_type, ToolOutput) else None
        target = OutputTarget(tp, name=name, description=description)
        taken = set(tool_names)
        clash = [m.name for m in target.members if m.name in taken]
        if clash:
            raise ValueError(f"output tool name {clash[0]!r} is also one of the agent's tools: name one differently")
        specs = tuple(ToolSpec(m.name, m.description, m.schema) for m in target.members)
        native = output_type if isinstance(output_type, NativeOutput) else None
        fmt = ResponseFormat(
            native.name if native is not None and native.name else _format_name(tp),
            target.schema,
            strict=native.strict if native is not None else True,
        )
        template = output_type.template if isinstance(output_type, PromptedOutput) else None
        prompt = instruction(target.schema, template)
        return _watched(cls(target, strategy, retries, validator, arity, specs, fmt, prompt, template))


# --- no credential in what the output sends, also one registered later ---------------------------------------

# Every typed agent's configuration, while anything holds it: a secret registered after it was built is dropped
# from its schemas then (_drop_late_secrets), as agentactors.tools.registry does for a tool's spec.  Weak: an
# agent gone takes its entry with it.
_configs: weakref.WeakSet[OutputConfig] = weakref.WeakSet()
_configs_lock = threading.Lock()


def _watched(config: OutputConfig) -> OutputConfig:
    """``config``, kept watched for the secrets registered after it was built (its schemas were cleaned of the
    ones known then by :func:`~agentactors.tools.schema.schema_for`)."""
    with _configs_lock:
        _configs.add(config)
    return config


def _clean(schema: dict[str, Any]) -> dict[str, Any] | None:
    try:
        return without_credentials(schema)
    except Exception:  # a schema that cannot even be walked: schema_for made it, so never here (a listener must
        return None  # not raise)


def _drop_late_secrets() -> None:
    """After a secret is registered: drop it from every schema a live typed agent sends (called by
    :func:`~agentactors.redaction.on_secret_registered`).

    A ``default`` or an ``examples`` item holding it leaves the output tools' parameters, the native response
    format, the members' schemas and the prompted instruction written from them.  Each is *replaced* by a cleaned
    copy, never changed in place, on the very objects the agent's cached request skeletons hold: a request being
    encoded meanwhile in another thread reads the old dict or the new one whole, and every later request carries
    the clean one.  Dropped, not masked: the type still fills in its own default when the model leaves the field
    out.  Registrations are rare (a provider's construction): walking every live agent then costs no run anything.
    """
    with _configs_lock:
        configs = list(_configs)
    for config in configs:
        target = config.target
        if target is None:
            continue
        changed = False
        for member in {id(m): m for m in (*target.members, target.text_member)}.values():
            clean = _clean(member.schema)
            if clean is not None:
                object.__setattr__(member, "schema", clean)
                changed = True
        for spec in config.tool_specs:
            clean = _clean(spec.parameters)
            if clean is not None:
                object.__setattr__(spec, "parameters", clean)
        fmt = config.response_format
        if fmt is not None and (clean := _clean(fmt.schema)) is not None:
            object.__setattr__(fmt, "schema", clean)
        if changed:
            object.__setattr__(config, "prompt", instruction(target.schema, config.template))


on_secret_registered(_drop_late_secrets)
