"""``@tool``: a Python function as a tool the model can call, with its schema, validator and context.

A :class:`Tool` knows everything about one tool that does not depend on a run:
its :class:`~agentactors.messages.ToolSpec` (name, description, JSON Schema from
the type hints and docstring), a compiled Draft 2020-12 validator, how to turn
validated JSON arguments into the Python values the function takes, and the
author's declarations (``timeout``, ``result_ceiling``, ``hint``,
``sequential``, ``read_only``).  Running it for a run — timeouts, statuses,
events — is the :class:`~agentactors.tools.executor.ToolExecutorActor`'s job.

A parameter annotated :class:`ToolContext` is injected by the executor and is
not part of the schema.
"""

from __future__ import annotations

import dis
import functools
import inspect
import logging
import sys
import threading
import types
import typing
import weakref
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Generic, ParamSpec, TypeVar, overload

import attrs

from ..actors.threads import WorkerThreads, worker_threads
from ..events import EventSink
from ..messages import ToolSpec
from ..redaction import on_secret_registered
from .docstrings import parse_docstring
from .json_nulls import drop_null_optionals, has_null, null_optionals
from .results import ResultCeiling, ValidationIssue, invalid_arguments_text
from .schema import (
    converter_for,
    describe_schema,
    is_union,
    json_default_value,
    needs_conversion,
    schema_for,
    unwrap_annotated,
    with_default,
    without_credentials,
)
from .validation import ArgumentValidator

__all__ = ["Hint", "Tool", "ToolContext", "tool"]

if TYPE_CHECKING or sys.version_info >= (3, 13):
    from typing import TypeVar as DefaultedTypeVar
else:
    # TypeVar defaults (PEP 696) before 3.13, as agentactors.output.spec imports them.
    from typing_extensions import TypeVar as DefaultedTypeVar

P = ParamSpec("P")
R = TypeVar("R")
#: What ``ToolContext.deps`` is: ``ToolContext[MyDeps]`` in a tool's signature types it for a checker; a bare
#: ``ToolContext`` is ``ToolContext[Any]``, as before.
DepsT = DefaultedTypeVar("DepsT", default=Any)

#: A tool's hint: a fixed text, or ``hint_for(result_text) -> str | None``.
Hint = str | Callable[[str], str | None]


@attrs.frozen(slots=True)
class ToolContext(Generic[DepsT]):
    """What a running tool may know about the call it serves.

    ``run_id``, ``agent`` (the agent's name), ``call_id``, ``tool_name`` and
    ``step`` identify the call; ``deps`` is whatever the agent's caller passed
    for its tools (a database handle, credentials, ...).  ``deps`` is never part
    of a repr, an event or a log line: only what a tool *returns* reaches the model.
    Annotate the parameter ``ctx: ToolContext[MyDeps]`` and a type checker knows
    ``ctx.deps`` is a ``MyDeps`` (the run's ``deps=`` is not checked against it: it
    is taken as given); a bare ``ToolContext`` is ``ToolContext[Any]``.

    ``input_key`` is the caller's stable name for the *input* the run serves
    (``agent.run(..., input_key=...)``; ``None`` when not given).  Unlike
    ``run_id``, which is new for every attempt, it stays the same when the same
    input is run again — e.g. by :class:`agentactors.ray.RayCluster` after a
    worker died (``"{job}:{index}"``) — so a tool with side effects can
    deduplicate on ``(input_key, tool_name, its arguments)``.

    :meth:`emit` sends a custom event to the run's recorders; :meth:`check_cancelled`
    lets a *sync* tool in a worker thread stop early when its call was cancelled
    or timed out (an async tool simply sees the cancellation at its next await).
    """

    call_id: str
    tool_name: str
    run_id: str | None = None
    agent: str | None = None
    step: int | None = None
    deps: DepsT = attrs.field(default=None, repr=False)
    input_key: str | None = None
    _sink: EventSink | None = attrs.field(default=None, repr=False, eq=False, alias="sink")
    _loop_thread: int | None = attrs.field(default=None, repr=False, eq=False, alias="loop_thread")

    @property
    def idempotency_key(self) -> str:
        """A key naming this call for good: ``"{run_id}:{call_id}"``, the same across retries and recovery.

        A run the journal recovers (:mod:`agentactors.journal`) keeps its run id and its calls' ids, so a
        tool that passes this key to an API that deduplicates on it (a payment, an email) has its side
        effect once even when the call is run again after a crash.
        """
        return f"{self.run_id or ''}:{self.call_id}"

    def emit(self, type: str, /, **data: Any) -> None:
        """Emit ``type`` with ``data`` (plus ``call_id`` and ``tool``) to the run's recorders.

        Safe from a sync tool's worker thread (delivered on the event loop); a
        no-op when nobody listens or when the call was abandoned (its timeout struck, or it was
        cancelled: nothing of a call reaches the recorders after its ``tools.finished``).

        :raises ValueError: ``type`` is not a non-empty str.
        """
        if not isinstance(type, str) or not type:
            raise ValueError("an event type must be a non-empty str such as 'tools.progress'")
        sink = self._sink
        if sink is None or not sink:
            return
        data.setdefault("call_id", self.call_id)
        data.setdefault("tool", self.tool_name)
        if self._loop_thread is None or threading.get_ident() == self._loop_thread:
            sink.emit(type, **data)
            return
        import anyio.from_thread  # here, not at the top: only a sync tool's worker thread needs it

        try:
            # Abandoned already (its host's scope is cancelled): nothing to send.  Not the only check: the
            # call may be abandoned between this one and the delivery, which checks again (_deliver).
            anyio.from_thread.check_cancelled()
        except BaseException:
            # The backend's cancellation (its class cannot be asked of anyio off the loop), or RuntimeError: a
            # thread that is not one of the loop's workers.  Either way there is nothing to deliver.
            return
        try:
            anyio.from_thread.run_sync(functools.partial(self._deliver, type, data))
        except RuntimeError:
            # The thread was abandoned (timeout / cancellation) and its loop is gone: drop the event.
            pass

    def _deliver(self, type: str, data: dict[str, Any]) -> None:
        """On the event loop: send what a worker thread emitted, unless the call was abandoned meanwhile.

        The executor ends the context of a call that did not return (:func:`end_call`) before its
        ``tools.finished``, on the loop: what is delivered after that finds no sink here.
        """
        sink = self._sink
        if sink is not None:
            sink.emit(type, **data)

    def check_cancelled(self) -> None:
        """In a sync tool's worker thread: raise the cancellation if the call was cancelled or timed out.

        A no-op on the event loop's thread (async tools see cancellation at their awaits).
        """
        if self._loop_thread is not None and threading.get_ident() != self._loop_thread:
            import anyio.from_thread

            anyio.from_thread.check_cancelled()


def end_call(context: ToolContext) -> None:
    """The call ``context`` serves has ended without returning (the executor's, on the loop, before the call's
    ``tools.finished``): what its tool emits from now on — a sync tool's abandoned thread still runs — is
    dropped (:meth:`ToolContext.emit`).

    The context is frozen for its readers; its sink is the executor's to withdraw.  Only a call that raised
    (timed out, cancelled, failed) comes here: one that returned costs nothing more.
    """
    object.__setattr__(context, "_sink", None)


def _check_timeout(label: str, field: str, value: float | None) -> float | None:
    """``value`` as float seconds, or ``None``; refused (naming the tool) unless a positive number.

    Infinity is accepted (it means what it says: no limit); an int too large for a float is refused as a
    ValueError like any other bad value (``float()`` raised ``OverflowError``, which no caller catches).
    """
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise ValueError(f"tool {label!r}: {field} must be a positive number of seconds or None, not {value!r}")
    try:
        return float(value)
    except OverflowError:
        raise ValueError(f"tool {label!r}: {field} is too large ({value!r}): use None for no limit") from None


def _label(fn: object, name: object, spec: object) -> str:
    """The name a construction error calls the tool by: before the spec is built (or when it cannot be)."""
    if isinstance(spec, ToolSpec):
        return spec.name
    if isinstance(name, str) and name:
        return name
    return str(getattr(fn, "__name__", None) or type(fn).__name__)


def _is_context(annotation: Any) -> bool:
    """Whether a parameter takes the :class:`ToolContext`: ``ToolContext``, ``ToolContext[MyDeps]``,
    ``ToolContext | None`` (``Optional[...]``: a tool also called directly, without one),
    ``Annotated[ToolContext, ...]``."""
    annotation, _ = unwrap_annotated(annotation)
    if is_union(annotation):
        members = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(members) == 1:
            annotation, _ = unwrap_annotated(members[0])
    if isinstance(annotation, str):  # (an annotation its module's names could not resolve, kept as written)
        return annotation == "ToolContext" or annotation.startswith("ToolContext[")
    return annotation is ToolContext or typing.get_origin(annotation) is ToolContext


class Tool(Generic[P, R]):
    """A callable the model can call: the function plus its spec, validator and declarations.

    Build one with :func:`tool` (from a function's signature and docstring) or
    :meth:`from_spec` (an explicit :class:`ToolSpec`).  Calling the Tool calls
    the plain function.

    :raises TypeError: the function is not callable, has no signature Python can read (``int``: wrap it in a
        def), takes ``*args``, is a method decorated in its class body (make the tool of the bound method), has
        a parameter whose annotation has no JSON Schema form, or one whose default that schema refuses
        (``a: int = "x"``; a default the schema cannot record, such as a sentinel object, is not checked).
    :raises ValueError: an invalid name (a lambda's, or a function's no model can call: give one with
        ``name=``), timeout, ceiling, hint or schema.
    """

    __slots__ = (
        "__dict__",  # lets functools.update_wrapper copy __doc__/__name__ for introspection
        "_bound",
        "_context_param",
        "_converters",
        "_direct",
        "_extra",
        "_named",
        "_numbers",
        "_positional",
        "_validator",
        "approval",
        "approval_timeout",
        "description",
        "fn",
        "hint",
        "is_async",
        "never_waits",
        "read_only",
        "requires_approval",
        "result_ceiling",
        "sequential",
        "spec",
        "timeout",
    )

    def __init__(
        self,
        fn: Callable[P, R],
        *,
        name: str | None = None,
        description: str | None = None,
        timeout: float | None = None,
        result_ceiling: ResultCeiling | None = None,
        hint: Hint | None = None,
        sequential: bool = False,
        read_only: bool = False,
        spec: ToolSpec | None = None,
        requires_approval: bool = False,
        approval: str = "pause",
        approval_timeout: float | None = None,
    ) -> None:
        if not callable(fn):
            raise TypeError(f"@tool needs a function, not {type(fn).__name__}")
        # Every declaration is checked here, each error naming the tool: a bad one found at the first call
        # (or in a wire's request body) is far from the line that made it, and may fail only in production.
        label = _label(fn, name, spec)
        if result_ceiling is not None and not isinstance(result_ceiling, ResultCeiling):
            raise TypeError(
                f"tool {label!r}: result_ceiling must be a ResultCeiling or None, not {type(result_ceiling).__name__}"
            )
        if hint is not None and not isinstance(hint, str) and not callable(hint):
            raise TypeError(
                f"tool {label!r}: hint must be a str, a callable hint_for(result_text) -> str | None, or None, "
                f"not {type(hint).__name__}"
            )
        if isinstance(hint, str) and not hint.strip():
            raise ValueError(f"tool {label!r}: hint must not be empty")
        for flag_name, flag in (
            ("sequential", sequential),
            ("read_only", read_only),
            ("requires_approval", requires_approval),
        ):
            if not isinstance(flag, bool):
                raise TypeError(f"tool {label!r}: {flag_name} must be a bool, not {type(flag).__name__}")
        if not isinstance(approval, str) or approval not in ("pause", "wait"):
            raise ValueError(f'tool {label!r}: approval must be "pause" or "wait", not {approval!r}')
        if description is not None and not isinstance(description, str):  # (ToolSpec says so too; first here)
            raise TypeError(f"tool {label!r}: description must be a str, not {type(description).__name__}")
        self.fn: Callable[P, R] = fn
        self.timeout = _check_timeout(label, "timeout", timeout)
        self.result_ceiling = result_ceiling
        self.hint = hint
        self.sequential = sequential
        self.read_only = read_only
        self.requires_approval = requires_approval
        #: How a call awaiting approval waits: ``"pause"`` ends the run paused; ``"wait"`` keeps it alive,
        #: waiting in place for ``run.approve`` / ``run.deny`` (at most ``approval_timeout`` seconds).
        self.approval = approval
        self.approval_timeout = _check_timeout(label, "approval_timeout", approval_timeout)
        self.is_async = _is_async(fn)
        # An async def with no await in its body: a call ends in its first step, so no timeout can strike
        # it and the executor runs it without a cancel scope or timer (it could not interrupt it anyway).
        self.never_waits = _never_waits(fn)
        signature = _signature(fn, label)
        _refuse_unbound_method(fn, signature, label)
        hints = _type_hints(fn)
        self._context_param: str | None = None
        # The positional-only parameters, in order, each with its default (``_NO_DEFAULT``: none).
        self._positional: tuple[tuple[str, Any], ...] = ()
        # The converter of the values of a ``**kwargs: T`` (``None``: none to convert, or no **kwargs).
        self._extra: Callable[[Any, str], Any] | None = None
        # The names a functools.partial bound by keyword: the author's values (a connection, a key), neither
        # shown to the model (as a default) nor for it to replace.
        self._bound: frozenset[str] = _partial_keywords(fn)
        self._named: frozenset[str] = frozenset(
            p.name for p in signature.parameters.values() if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        )
        # Parameter -> its converter (schema.converter_for), for the values JSON cannot carry as they are.
        self._converters: dict[str, Callable[[Any, str], Any]] = {}
        parameters: dict[str, Any] | None = None  # the schema made of the hints (none for an explicit spec)
        if spec is not None:
            if not isinstance(spec, ToolSpec):
                raise TypeError(f"tool {label!r}: spec must be a ToolSpec, not {type(spec).__name__}")
            if name is not None or description is not None:
                raise ValueError(f"tool {label!r}: give either a spec or name/description, not both")
            self._bind_signature(signature, hints, schema_from_hints=False)
        else:
            doc_text, doc_params = parse_docstring(inspect.getdoc(fn))
            parameters = self._bind_signature(signature, hints, schema_from_hints=True, doc_params=doc_params)
            if name is not None:
                tool_name = name
            else:
                tool_name = getattr(fn, "__name__", None) or type(fn).__name__
                _check_own_name(tool_name)
            spec = ToolSpec(
                tool_name, description if description is not None else doc_text, parameters or _EMPTY_SCHEMA
            )
            _check_narrow_by(result_ceiling, parameters, spec.name)
        spec = _offered(spec)
        # Compiled once per tool: validating a call is then one walk of the arguments.
        self._validator = ArgumentValidator(spec.parameters, tool_name=spec.name)
        # Whether the model's null for an optional parameter (strict mode sends one for each it leaves out) may
        # need dropping: at the top of the arguments, and deeper (an optional field of an object parameter).
        self._nulls_top, self._nulls_deep = null_optionals(spec.parameters)
        if parameters:
            _check_defaults(self._validator, parameters, spec.name)
        # Validated JSON arguments go to the function as they are: nothing to convert, reorder or inject.
        # (With a **kwargs, the model could pass a name a partial bound: prepare() drops it.)
        open_bound = bool(self._bound) and any(p.kind is p.VAR_KEYWORD for p in signature.parameters.values())
        self._direct = (
            not self._converters
            and not self._positional
            and self._context_param is None
            and self._extra is None
            and not open_bound
        )
        # When plain int and float parameters are all there is to convert (add(a: int, b: int)): each with its
        # type.  A call whose numbers have their declared types already — what JSON gives — then has nothing to
        # convert, and goes to the function as a direct one does (start()).
        self._numbers: tuple[tuple[str, type], ...] | None = None
        if (
            self._converters
            and not self._positional
            and self._context_param is None
            and self._extra is None
            and not open_bound
        ):
            numbers: list[tuple[str, type]] = []
            for param in self._converters:
                number = _plain_number(hints.get(param, signature.parameters[param].annotation))
                if number is None:
                    break
                numbers.append((param, number))
            else:
                self._numbers = tuple(numbers)
        self.spec = spec
        self.description = spec.description
        functools.update_wrapper(self, fn)

    @classmethod
    def from_spec(cls, spec: ToolSpec, fn: Callable[P, R], **options: Any) -> Tool[P, R]:
        """A tool with an explicit spec; ``fn`` is called with the validated arguments as keywords."""
        return cls(fn, spec=spec, **options)

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def parameters(self) -> dict[str, Any]:
        return self.spec.parameters

    @property
    def takes_context(self) -> bool:
        return self._context_param is not None

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        return self.fn(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<Tool {self.name!r}{' async' if self.is_async else ''}>"

    # --- building the schema -------------------------------------------------------------------

    def _bind_signature(
        self,
        signature: inspect.Signature,
        hints: Mapping[str, Any],
        *,
        schema_from_hints: bool,
        doc_params: Mapping[str, str] | None = None,
    ) -> dict[str, Any] | None:
        properties: dict[str, Any] = {}
        required: list[str] = []
        positional: list[tuple[str, Any]] = []
        extra: dict[str, Any] | None = None  # the schema of a **kwargs' values; None: no **kwargs
        for param in signature.parameters.values():
            if param.name in self._bound:
                continue  # bound by a functools.partial: not the model's
            annotation = hints.get(param.name, param.annotation)
            if _is_context(annotation):
                if self._context_param is not None:
                    raise TypeError(f"{param.name!r}: a tool takes at most one ToolContext parameter")
                self._context_param = param.name
                continue
            if param.kind is param.VAR_POSITIONAL:
                raise TypeError(f"tool functions cannot take *{param.name}: the model passes named arguments")
            if annotation is inspect.Parameter.empty:
                annotation = Any
            if param.kind is param.VAR_KEYWORD:
                # **kwargs: T — the model may pass other names, each value a T (any value without an annotation).
                if needs_conversion(annotation):
                    self._extra = converter_for(annotation)
                if schema_from_hints:
                    try:
                        extra = schema_for(annotation)
                    except TypeError as exc:
                        raise TypeError(f"parameter **{param.name}: {exc}") from None
                continue
            if param.kind is param.POSITIONAL_ONLY:
                default = param.default if param.default is not inspect.Parameter.empty else _NO_DEFAULT
                positional.append((param.name, default))
            if needs_conversion(annotation):
                self._converters[param.name] = converter_for(annotation)
            if not schema_from_hints:
                continue
            try:
                prop = schema_for(annotation)
            except TypeError as exc:
                raise TypeError(f"parameter {param.name!r}: {exc}") from None
            if "description" not in prop and doc_params and doc_params.get(param.name):
                prop["description"] = doc_params[param.name]
            if param.default is inspect.Parameter.empty:
                required.append(param.name)
            else:
                ok, default = json_default_value(param.default)
                if ok:
                    prop = with_default(prop, default)
            properties[param.name] = prop
        self._positional = tuple(positional)
        if not schema_from_hints:
            return None
        schema: dict[str, Any] = {"type": "object", "properties": properties}
        if required:
            schema["required"] = required
        if extra is None:
            schema["additionalProperties"] = False
        elif extra:  # an annotated **kwargs; {} (Any, no annotation) leaves other names open
            schema["additionalProperties"] = extra
        return schema

    # --- validating and calling ----------------------------------------------------------------

    def validate(self, arguments: Mapping[str, Any]) -> list[ValidationIssue]:
        """Every way ``arguments`` break the schema (empty when they are valid); never the values.

        ``null`` for an optional parameter whose type takes no ``None`` is read as omitted (its default
        applies; :mod:`~agentactors.tools.json_nulls`): OpenAI's strict mode sends one for every parameter
        the model leaves out, and models outside it often do.  Looked for only when the arguments break the
        schema (such a ``null`` always does), so a valid call pays nothing for it.
        """
        issues = self._validator.issues(arguments)
        if issues and (self._nulls_top or self._nulls_deep) and has_null(arguments):
            issues = self._validator.issues(drop_null_optionals(arguments, self.spec.parameters))
        return issues

    def _settled(self, arguments: Mapping[str, Any]) -> Mapping[str, Any]:
        """``arguments`` without the ``null``\\ s :meth:`validate` read as omitted (themselves when none).

        Per call: a look at the top-level values when only top-level parameters are optional, a walk of the
        arguments only when an object parameter has optional fields, nothing when no parameter is optional.
        """
        if (self._nulls_top and None in arguments.values()) or (self._nulls_deep and has_null(arguments)):
            settled: Mapping[str, Any] = drop_null_optionals(arguments, self.spec.parameters)
            return settled
        return arguments

    def invalid_text(self, issues: Sequence[ValidationIssue]) -> str:
        """The model-facing text for a call rejected with ``issues``."""
        return invalid_arguments_text(self.name, issues, self.fix_text())

    def fix_text(self) -> str:
        """How to call this tool correctly, in one line for the model."""
        props = self.spec.parameters.get("properties") or {}
        required = set(self.spec.required)
        parts = [f"{p} ({describe_schema(s)}{', required' if p in required else ''})" for p, s in props.items()]
        listed = "; ".join(parts) if parts else "no arguments"
        if len(listed) > 600:
            listed = listed[:599] + "…"
        return f"Fix the arguments and call '{self.name}' again. Its parameters: {listed}."

    def hint_text(self, result_text: str) -> str | None:
        """The hint to append to an error/invalid result (``None`` when there is none).

        A ``hint_for`` callable that raises counts as no hint: a hint must never
        turn a tool result into a crash.
        """
        hint = self.hint
        if hint is None:
            return None
        if isinstance(hint, str):
            return hint
        try:
            value = hint(result_text)
        except Exception:
            return None
        return value if isinstance(value, str) and value.strip() else None

    def prepare(self, arguments: Mapping[str, Any], context: ToolContext | None) -> tuple[list[Any], dict[str, Any]]:
        """Positional and keyword arguments for the function from validated JSON ``arguments``.

        A ``null`` for an optional parameter that takes no ``None`` is left out (see :meth:`validate`).

        :raises ConversionError: an argument could not become its annotated type.
        """
        return self._prepare(self._settled(arguments), context)

    def _prepare(self, arguments: Mapping[str, Any], context: ToolContext | None) -> tuple[list[Any], dict[str, Any]]:
        kwargs = dict(arguments)
        if self._bound:  # (only a **kwargs schema lets one through)
            for key in self._bound.intersection(kwargs):
                del kwargs[key]
        for key, converter in self._converters.items():
            if key in kwargs:
                kwargs[key] = converter(kwargs[key], key)
        extra = self._extra
        if extra is not None:  # the values of a **kwargs: T, under the other names
            for key, value in kwargs.items():
                if key not in self._converters and key not in self._named:
                    kwargs[key] = extra(value, key)
        args: list[Any] = []
        for name, default in self._positional:
            # An omitted one is passed its default, so those after it keep their places; one with no default
            # ends the positional arguments (Python then names what is missing).
            if name in kwargs:
                args.append(kwargs.pop(name))
            elif default is _NO_DEFAULT:
                break
            else:
                args.append(default)
        if self._context_param is not None:
            kwargs[self._context_param] = context
        return args, kwargs

    def start(self, arguments: Mapping[str, Any], context: ToolContext | None = None) -> Awaitable[Any]:
        """An async tool's awaitable for validated ``arguments``, not yet awaited (the executor drives it).

        :raises ConversionError: see :meth:`prepare`.
        :raises TypeError: the tool is sync (use :meth:`invoke`, which runs it in a worker thread).
        """
        if not self.is_async:
            raise TypeError(f"tool {self.name!r} is sync: use invoke(), which runs it in a worker thread")
        fn: _AsyncFn = self.fn  # type: ignore[assignment]  # is_async says so (and typing.cast is a call)
        if (self._nulls_top and None in arguments.values()) or (self._nulls_deep and has_null(arguments)):
            arguments = drop_null_optionals(arguments, self.spec.parameters)  # (_settled, inline: every call)
        if self._direct:
            return fn(**arguments)
        numbers = self._numbers
        if numbers is not None:
            for key, number in numbers:
                value = arguments.get(key)
                if value is not None and type(value) is not number:
                    break  # (a float for an int, an int for a float: prepare() converts it)
            else:
                return fn(**arguments)  # every number of its declared type: nothing to convert
        args, kwargs = self._prepare(arguments, context)
        return fn(*args, **kwargs)

    async def invoke(
        self,
        arguments: Mapping[str, Any],
        context: ToolContext | None = None,
        *,
        threads: WorkerThreads | None = None,
        on_abandoned: Callable[[int], object] | None = None,
    ) -> Any:
        """Run the tool with validated ``arguments``: async on the loop, sync in a worker thread.

        A sync tool runs in one of ``threads`` (default: the event loop's
        :func:`~agentactors.actors.threads.worker_threads`), which bounds how many run
        at once; ``on_abandoned(alive)`` is told when a call is abandoned.

        :raises ConversionError: see :meth:`prepare`.
        :raises Exception: whatever the tool raises.

        Cancellation: an async tool sees it at its next await.  A sync tool's call is abandoned
        (its result discarded, its thread slot freed at once); the thread runs on until the
        function returns, counted as abandoned, and can notice with :meth:`ToolContext.check_cancelled`.
        """
        if self.is_async:
            return await self.start(arguments, context)
        args, kwargs = self.prepare(arguments, context)
        fn = self.fn

        def call() -> tuple[Any]:
            # Boxed: trio refuses a worker function that returns a coroutine, and we want to await it.
            return (fn(*args, **kwargs),)

        pool = threads if threads is not None else worker_threads()
        (value,) = await pool.run_sync(call, on_abandoned=on_abandoned)
        if inspect.isawaitable(value):
            # A sync wrapper around an async function (a decorator without functools.wraps):
            # the coroutine it returned belongs on the event loop.
            value = await value
        return value


_EMPTY_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}


# --- no credential in what is offered to the model ------------------------------------------------------------

# Every tool's spec, while anything holds it (an agent's requests hold the very object): a secret registered
# later is dropped from it then (_drop_late_secrets).  Weak: a spec gone takes its entry with it.  By id: a
# ToolSpec compares by value, and holds a dict, so it has no hash.
_offered_specs: weakref.WeakValueDictionary[int, ToolSpec] = weakref.WeakValueDictionary()
_offered_lock = threading.Lock()


def _offered(spec: ToolSpec) -> ToolSpec:
    """``spec`` as it may go to the model's vendor (and into every ``llm.request`` event and record): without a
    ``default`` or an ``examples`` item that holds a credential (:func:`~.schema.without_credentials`: dropped,
    not masked — the function still gets its own default when the model omits the argument).

    Then a new spec (the caller's, and its dicts, are not touched); else ``spec`` itself.  Either way it is kept
    watched, for the secrets registered after it was made (a provider made later, with the key a default holds).
    """
    clean = without_credentials(spec.parameters)
    if clean is not None:
        spec = ToolSpec(spec.name, spec.description, clean)
    with _offered_lock:
        _offered_specs[id(spec)] = spec
    return spec


def _drop_late_secrets() -> None:
    """After a secret is registered: drop it from every live tool's spec (:func:`_offered`).

    The spec's ``parameters`` is *replaced* by a cleaned copy, never changed in place: whoever reads it meanwhile
    (a request being encoded in another thread) reads the old dict or the new one whole.  The spec object is kept
    — it is the one an agent's requests and recorded events hold — so every later request carries the clean one.
    Registrations are rare (a provider's construction): walking every live spec then costs nothing per run.
    """
    with _offered_lock:
        specs = list(_offered_specs.values())
    for spec in specs:
        try:
            clean = without_credentials(spec.parameters)
        except Exception:  # a schema that cannot even be walked: the validator refused it already (never here)
            continue
        if clean is not None:
            object.__setattr__(spec, "parameters", clean)


on_secret_registered(_drop_late_secrets)
_NO_DEFAULT: Any = object()  # a positional-only parameter without a default
_AsyncFn = Callable[..., Awaitable[Any]]


def _is_async(fn: Callable[..., Any]) -> bool:
    target: Any = fn
    while isinstance(target, functools.partial):
        target = target.func
    if inspect.iscoroutinefunction(target) or inspect.iscoroutinefunction(inspect.unwrap(target)):
        return True
    call = getattr(target, "__call__", None)  # noqa: B004 - an object with an async __call__
    return call is not None and inspect.iscoroutinefunction(call)


#: The operations through which a coroutine's own frame can suspend (an ``await``, ``async with``,
#: ``async for``), named as the interpreters from 3.11 on compile them.
_SUSPENDING_OPS = frozenset(
    {"GET_AWAITABLE", "SEND", "YIELD_VALUE", "YIELD_FROM", "BEFORE_ASYNC_WITH", "GET_AITER", "GET_ANEXT"}
)


def _never_waits(fn: Callable[..., Any]) -> bool:
    """Whether ``fn`` is an ``async def`` whose body has no ``await``: its coroutine ends in its first step.

    Read from the function's bytecode, once per tool.  Only a plain function (or a bound method of
    one) is judged; anything else — a partial, a wrapper, an object with ``__call__`` — may wait.
    """
    target: Any = fn.__func__ if isinstance(fn, types.MethodType) else fn
    if type(target) is not types.FunctionType:
        return False
    code = target.__code__
    if not code.co_flags & inspect.CO_COROUTINE:
        return False
    return not any(ins.opname in _SUSPENDING_OPS for ins in dis.get_instructions(code))


def _partial_keywords(fn: Callable[..., Any]) -> frozenset[str]:
    """The names ``functools.partial`` (nested or not) bound by keyword around ``fn``."""
    names: set[str] = set()
    target: Any = fn
    while isinstance(target, functools.partial):
        names.update(target.keywords)
        target = target.func
    return frozenset(names)


def _signature(fn: Callable[..., Any], label: str) -> inspect.Signature:
    """``fn``'s signature, which names the parameters the model fills.

    :raises TypeError: it has none Python can read — a class implemented in C (``int``, ``dict``), some
        builtins — said in terms of what ``@tool`` takes, rather than as ``inspect``'s ``ValueError``.
    """
    try:
        return inspect.signature(fn)
    except (ValueError, TypeError) as exc:
        kind = "the class" if isinstance(fn, type) else f"a {type(fn).__name__}"
        raise TypeError(
            f"@tool needs a function whose parameters Python can read — a def or async def, a bound method, a "
            f"functools.partial of one, or an object with a __call__ method — not {kind} {label!r} ({exc}): "
            "wrap it in a def with typed parameters that calls it"
        ) from None


def _check_own_name(name: str) -> None:
    """Refuse a tool name taken from the function when no model could call it by that name.

    :raises ValueError: a lambda's ``<lambda>``, or a name outside ``ToolSpec``'s rules (``café``), saying to
        give the tool a name of its own with ``name=``.
    """
    if name == "<lambda>":
        raise ValueError(
            "tool name '<lambda>' is invalid: a lambda has no name a model can call it by; "
            "give it one: tool(lambda ...: ..., name='add')"
        )
    try:
        ToolSpec(name)
    except ValueError as exc:
        raise ValueError(f"{exc}; the name is the function's: give the tool one with name='...'") from None


def _check_narrow_by(ceiling: ResultCeiling | None, parameters: Mapping[str, Any] | None, name: str) -> None:
    """Warn of a ceiling whose ``narrow_by`` names a parameter the model cannot send (``docs/loop.md``).

    Every refusal tells the model to call again narrowing by those names: one the tool does not have (a typo, a
    renamed parameter, a name a ``functools.partial`` bound) sends it on a retry that fails validation, where the
    ceiling was meant to give a clean one.  A warning, not a refusal: the names are suggestions the model reads, and a
    tool that worked before must not stop being made.  Only a schema made of the function's hints, with no
    ``**kwargs``, says every name the model may send (``parameters`` ``None``: the function takes none); an explicit
    spec (an MCP server's ceiling is one for all of its tools) is taken as it is.
    """
    if ceiling is None or not ceiling.narrow_by:
        return
    schema = parameters or _EMPTY_SCHEMA
    if schema.get("additionalProperties", False) is not False:
        return  # a **kwargs: any name may be one the function reads
    known = schema.get("properties", {})
    missing = [param for param in ceiling.narrow_by if param not in known]
    if missing:
        has = ", ".join(repr(p) for p in known) or "none"
        logging.getLogger("agentactors.tools").warning(
            "tool %r: result_ceiling.narrow_by names %s, not a parameter the model can send (its parameters: %s); "
            "a refused result tells the model to narrow by it, and that call fails validation",
            name, ", ".join(map(repr, missing)), has,
        )


def _check_defaults(validator: ArgumentValidator, parameters: Mapping[str, Any], name: str) -> None:
    """Refuse a parameter whose default its own schema refuses (``def f(a: int = "x")``).

    The schema would contradict itself (``{"type": "integer", "default": "x"}``: a model told both may send
    either), and a call that omits the parameter runs the function with a value its annotation says it never
    gets.  Each default the schema records (:func:`~.schema.json_default_value`: its JSON form, what the model
    reads) is checked by the tool's own validator, as the model's arguments are — so whatever that validator
    accepts (an int for a float, ``None`` for an optional parameter) is fine.  A default the schema does not
    record (a sentinel object, ``math.inf``) is the function's own business: it is never shown, never sent.
    One validation of every default at once; the parameters without one are then missing, and those issues
    are not the defaults'.

    :raises TypeError: naming the tool, the parameter, and what its schema expected there.
    """
    properties = parameters.get("properties") or {}
    defaults = {k: prop["default"] for k, prop in properties.items() if isinstance(prop, dict) and "default" in prop}
    if not defaults:
        return
    required = set(parameters.get("required") or ())
    for issue in validator.issues(defaults):
        param = next((k for k in defaults if _is_under(issue.path, k)), None)
        if param is None or (issue.path in required and issue.got == "nothing"):
            continue  # a parameter without a default, missing from the defaults: no issue of theirs
        where = "" if issue.path == param else f" (at {issue.path})"
        raise TypeError(
            f"tool {name!r}: the default of parameter {param!r} does not fit its type{where}: expected "
            f"{issue.expected}, got {issue.got}; give it a default of its type, or annotate the type it has"
        )


def _is_under(path: str, key: str) -> bool:
    """Whether a validation issue's ``path`` (``tags[1]``, ``window.end``) lies under the parameter ``key``."""
    shown = key if len(key) <= 40 else key[:39] + "…"  # as the validator writes a long key
    return path == shown or path.startswith((shown + ".", shown + "["))


def _refuse_unbound_method(fn: Callable[..., Any], signature: inspect.Signature, label: str) -> None:
    """Refuse a method decorated in its class body (``@tool`` over ``def lookup(self, ...)``).

    The decorator sees a plain function there, and a :class:`Tool` is no descriptor: ``self`` would be a
    parameter the model is asked to fill, and no instance would ever be passed.  The bound method is the tool.
    """
    if type(fn) is not types.FunctionType:
        return
    first = next(iter(signature.parameters.values()), None)
    if first is None or first.name not in ("self", "cls") or first.kind is first.KEYWORD_ONLY:
        return
    owner, _, _ = fn.__qualname__.rpartition(".")
    if owner and not owner.endswith("<locals>"):  # defined in a class body
        raise TypeError(
            f"tool {label!r}: {fn.__qualname__} is a method: make the tool of the bound method, "
            f"tool(obj.{fn.__name__}), not in the class body (a Tool has no self to pass)"
        )


def _type_hints(fn: Callable[..., Any]) -> dict[str, Any]:
    target: Any = fn
    while isinstance(target, functools.partial):
        target = target.func
    if not (inspect.isfunction(target) or inspect.ismethod(target)):
        target = getattr(target, "__call__", target)  # noqa: B004
    try:
        return typing.get_type_hints(target, include_extras=True)
    except Exception as exc:
        name = getattr(fn, "__qualname__", repr(fn))
        raise TypeError(f"cannot resolve the type hints of {name}: {exc}") from exc


# --- the decorator ------------------------------------------------------------------------------


# ``tool(fn)`` and ``tool(fn, name=...)``, as ``@tool`` is applied or called directly: the Tool.
@overload
def tool(
    fn: Callable[P, R],
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    timeout: float | None = None,
    result_ceiling: ResultCeiling | None = None,
    hint: Hint | None = None,
    sequential: bool = False,
    read_only: bool = False,
    requires_approval: bool = False,
    approval: str = "pause",
    approval_timeout: float | None = None,
) -> Tool[P, R]: ...


# ``@tool(name=...)`` (or ``tool()``): no function yet, so the decorator that makes the Tool of the one it is given.
@overload
def tool(
    fn: None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    timeout: float | None = None,
    result_ceiling: ResultCeiling | None = None,
    hint: Hint | None = None,
    sequential: bool = False,
    read_only: bool = False,
    requires_approval: bool = False,
    approval: str = "pause",
    approval_timeout: float | None = None,
) -> Callable[[Callable[P, R]], Tool[P, R]]: ...


def tool(
    fn: Callable[P, R] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    timeout: float | None = None,
    result_ceiling: ResultCeiling | None = None,
    hint: Hint | None = None,
    sequential: bool = False,
    read_only: bool = False,
    requires_approval: bool = False,
    approval: str = "pause",
    approval_timeout: float | None = None,
) -> Tool[P, R] | Callable[[Callable[P, R]], Tool[P, R]]:
    """Turn a function (async or sync) into a :class:`Tool`: ``@tool`` or ``@tool(...)``, or called with the
    function, ``tool(fn)`` / ``tool(fn, name=...)``.

    :param name: the tool's name (default: the function's name).
    :param description: what the model reads (default: the docstring's first paragraph).
    :param timeout: seconds before the call ends with status ``timeout`` (default: the executor's).
    :param result_ceiling: refuse results over this size (status ``invalid``, no data returned).
    :param hint: a text, or ``hint_for(result_text) -> str | None``, appended to error and
        invalid results only.
    :param sequential: run alone, never concurrently with the other calls of a step.
    :param read_only: the tool has no side effects (the loop may suggest batching calls to it).
    :param requires_approval: a call waits for a person's decision: the run pauses
        (``RunResult.paused``) and goes on with ``agent.resume`` or ``session.resolve``.
    :param approval: ``"pause"`` (the default: as above) or ``"wait"``: the run stays alive and waits in
        place, its pending calls in ``run.state().pending``, until ``run.approve(call_id)`` or
        ``run.deny(call_id, reason)`` (``docs/loop.md``, "Live runs").
    :param approval_timeout: with ``"wait"``, seconds to wait for a decision before the call is denied
        (with a reason saying so) and the run goes on; ``None``: wait as long as the run may.
    :raises TypeError, ValueError: see :class:`Tool`.
    """
    options: dict[str, Any] = {
        "name": name,
        "description": description,
        "timeout": timeout,
        "result_ceiling": result_ceiling,
        "hint": hint,
        "sequential": sequential,
        "read_only": read_only,
        "requires_approval": requires_approval,
        "approval": approval,
        "approval_timeout": approval_timeout,
    }
    if fn is not None:
        return Tool(fn, **options)

    def decorate(f: Callable[P, R]) -> Tool[P, R]:
        return Tool(f, **options)

    return decorate


def _plain_number(annotation: Any) -> type | None:
    """``int`` or ``float`` for a parameter annotated with that type (``Annotated`` or not), else ``None``."""
    unwrapped, _ = unwrap_annotated(annotation)
    return unwrapped if unwrapped is int or unwrapped is float else None
