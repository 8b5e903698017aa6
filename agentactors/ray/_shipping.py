"""What crosses between driver and workers: the factory (by value when it must be) and the results.

**The factory.**  Ray pickles a function by reference (module and name) when
its module is importable, which a worker cannot do for a factory defined in
``__main__``, a notebook or a test module that is not on the workers' path.
:func:`pack_factory` registers such a module with
``ray.cloudpickle.register_pickle_by_value`` for the one ``dumps`` (and
unregisters it after), so the factory and what it uses from its module travel
by value.  A module that an installed distribution provides (under a
``site-packages`` / ``dist-packages`` directory or the standard library) goes by
reference: the workers have it too.

**Results.**  A worker pickles its chunk's results itself (:func:`pack_results`),
each into its own blob, so a result that cannot travel does not take its chunk
down, and the driver unpickles each alone (:func:`unpack_results`): one it cannot
load becomes a failed result of its own.  Results go with ``ray.cloudpickle``:
a class the workers got by value with the factory (a typed output, an exception
defined in ``__main__``) goes back by value, and the driver finds its own class
again (cloudpickle tracks the classes it shipped), so ``type(result.output)`` is
the user's class.  An error that does not survive a round trip, or a foreign
one whose text or pickled form (a request's headers it keeps) holds a credential, is replaced by a
:class:`~agentactors.ray.errors.RemoteError` naming its type, its text redacted
*on the worker* — the only process whose registry knows the keys its providers
registered.  agentactors' own errors (redacted when made) round-trip as they are.
"""

from __future__ import annotations

import importlib.util
import inspect
import pickle
import sys
import sysconfig
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import attrs

from .._scrub import scrub_chain
from ..loop.result import RunResult
from ..messages import Message
from ..redaction import redact
from .errors import RemoteError

__all__ = [
    "failed_results",
    "input_messages",
    "pack_factory",
    "pack_results",
    "remote_error",
    "sendable",
    "sendable_error",
    "unpack_factory",
    "unpack_results",
]


def input_messages(prompt: Any) -> tuple[Message, ...]:
    """The messages a failed result of ``prompt`` carries (what a run would have started from)."""
    if isinstance(prompt, str):
        return (Message.user(prompt),)
    if isinstance(prompt, Message):
        return (prompt,)
    try:
        return tuple(m for m in prompt if isinstance(m, Message))
    except TypeError:
        return ()


def _installed_roots() -> tuple[Path, ...]:
    paths = sysconfig.get_paths()
    roots = {paths.get("stdlib"), paths.get("platstdlib"), paths.get("purelib"), paths.get("platlib")}
    return tuple(Path(p).resolve() for p in roots if p)


def _needs_value(module_name: str) -> bool:
    """Whether the workers may be unable to import ``module_name`` (so it must travel by value)."""
    if module_name == "__main__" or module_name.startswith("agentactors"):
        return False  # __main__ goes by value anyway; agentactors is on every worker (checked)
    top = module_name.partition(".")[0]
    if top in sys.builtin_module_names:
        return False
    spec = importlib.util.find_spec(top)
    origin = spec.origin if spec is not None else None
    if origin is None or origin in ("built-in", "frozen"):
        locations = list(spec.submodule_search_locations or []) if spec is not None else []
        if not locations:
            return spec is None
        origin = locations[0]
    path = Path(origin).resolve()
    if any(part in ("site-packages", "dist-packages") for part in path.parts):
        return False
    return not any(path.is_relative_to(root) for root in _installed_roots())


def pack_factory(factory: Callable[..., Any]) -> bytes:
    """``factory`` pickled for the workers, its module by value when the workers may not import it.

    :raises TypeError: it cannot be pickled — naming the ``agent_factory`` and, when one is found, the module
        global or closed-over variable that cannot travel (:func:`_unshippable`), instead of cloudpickle's bare
        ``cannot pickle '_thread.lock' object``.
    """
    import ray.cloudpickle

    cloudpickle: Any = ray.cloudpickle  # untyped
    module_name = getattr(factory, "__module__", None)
    module = sys.modules.get(module_name) if isinstance(module_name, str) else None
    registered = False
    if module is not None and isinstance(module_name, str) and _needs_value(module_name):
        try:
            cloudpickle.register_pickle_by_value(module)
            registered = True
        except ValueError:
            registered = False  # already registered by the user: leave it so
    try:
        try:
            return bytes(cloudpickle.dumps(factory))
        except Exception as exc:
            # Searched while the module is still registered by value: what the workers would get is what fails.
            raise _unshippable(factory, exc, cloudpickle) from exc
    finally:
        if registered and module is not None:
            cloudpickle.unregister_pickle_by_value(module)


def _unshippable(factory: Callable[..., Any], exc: Exception, cloudpickle: Any) -> TypeError:
    """The error for a factory that does not pickle: what failed, where (when found), and what to do.

    Only after the whole failed, so a factory that ships pays nothing: each global the factory's code names
    and each variable it closes over is pickled alone, and one that fails is searched the same way when it is a
    function (or wraps one: a ``@tool``), a few levels deep — ``make_agent`` → ``lookup`` → ``LOCK``.
    """
    name = getattr(factory, "__qualname__", None) or type(factory).__qualname__
    path = _culprit(factory, cloudpickle, depth=4, seen=set())
    if path:
        kind, *chain = path
        used = "".join(f" (used by {step!r})" for step in chain[1:])
        where = f"; the {kind} {chain[0]!r}{used} cannot be pickled: create it inside the factory"
        where += " (or in a module the workers import) rather than in the driver"
    else:
        where = "; build what it holds (locks, clients, open files, sockets) inside the factory instead"
    return TypeError(redact(f"the agent_factory {name!r} cannot be shipped to the Ray workers: "
                            f"{type(exc).__name__}: {exc}{where}")[:2000])


def _culprit(fn: Any, cloudpickle: Any, *, depth: int, seen: set[int]) -> list[str] | None:
    """``[kind, name, ...]``: the value that does not pickle (its kind and name), then the functions that use it,
    innermost first (the factory itself not named); ``None`` when no single global or variable is to blame."""
    inner = fn if inspect.isfunction(fn) else getattr(fn, "__wrapped__", None) or getattr(fn, "fn", None)
    if not inspect.isfunction(inner) or id(inner) in seen or depth <= 0:
        return None
    seen.add(id(inner))
    code = inner.__code__
    found: list[tuple[str, str, Any]] = []
    for var, cell in zip(code.co_freevars, inner.__closure__ or (), strict=False):
        try:
            found.append(("variable", var, cell.cell_contents))
        except ValueError:  # an empty cell
            continue
    module_globals = inner.__globals__
    found += [("module global", n, module_globals[n]) for n in _global_names(code) if n in module_globals]
    for kind, var, value in found:
        try:
            cloudpickle.dumps(value)
        except Exception:
            deeper = _culprit(value, cloudpickle, depth=depth - 1, seen=seen)
            return [*deeper, var] if deeper else [kind, var]
    return None


def _global_names(code: Any) -> list[str]:
    """The global names ``code`` and the code nested in it (comprehensions, inner functions) use."""
    names = list(code.co_names)
    for const in code.co_consts:
        if inspect.iscode(const):
            names += _global_names(const)
    return names


def unpack_factory(blob: bytes) -> Callable[..., Any]:
    """The factory :func:`pack_factory` packed (on the worker)."""
    import ray.cloudpickle

    factory: Callable[..., Any] = ray.cloudpickle.loads(blob)
    return factory


#: A foreign error that pickles to more than this is not searched: it is replaced (a RemoteError keeps its
#: type and redacted text), so the search costs at most ~10 ms (:func:`redact`: ~0.16 µs a character).
_SCAN_LIMIT = 64 * 1024


def _travels_clean(exc: BaseException, *, scan: bool = True) -> bool:
    """Whether ``exc`` survives a round trip and (``scan``) what it pickles to holds no credential.

    Its text is not all it ships: a ``requests.HTTPError`` pickles its ``.request``, Authorization
    header included; a vendor SDK's error its ``.headers`` dict.  So the pickled bytes themselves are
    searched (pickle keeps a ``str`` as UTF-8, ``bytes`` as they are).  Only on the error path: a
    result without an error costs nothing here.
    """
    import ray.cloudpickle

    cloudpickle: Any = ray.cloudpickle  # untyped
    try:
        blob = bytes(cloudpickle.dumps(exc))
        pickle.loads(blob)
    except Exception:
        return False
    if not scan:
        return True
    if len(blob) > _SCAN_LIMIT:
        return False
    text = blob.decode("utf-8", "replace")
    return redact(text) == text


def remote_error(exc: BaseException, *, doing: str | None = None) -> RemoteError:
    """A :class:`RemoteError` standing in for ``exc`` (its type's qualified name, its text redacted).

    ``doing`` says what failed with ``exc`` when ``exc`` is not the run's own error (unpickling a result).
    """
    kind = type(exc)
    name = f"{kind.__module__}.{kind.__qualname__}"
    where = f" while {doing}" if doing else ""
    return RemoteError(redact(f"{name}{where}: {exc}")[:2000], type_name=name)


def sendable(result: RunResult[Any]) -> RunResult[Any]:
    """``result`` as it may travel (on the worker): its errors, and its children's, made safe to send.

    An error that does not pickle, a foreign one whose text or pickled form holds a credential (the
    worker's registry knows its providers' keys; the driver's does not), and a ``BaseException`` that
    is not an ``Exception`` (a ``SystemExit`` the driver would re-raise) become a :class:`RemoteError`.
    """
    error = result.error
    if error is not None and not _sendable_as_is(error):
        result = attrs.evolve(result, error=remote_error(error))
    if result.children:
        result = attrs.evolve(result, children=tuple(sendable(child) for child in result.children))
    return result


def sendable_error(exc: BaseException, *, doing: str) -> BaseException:
    """``exc`` as it may travel (on the worker), as :func:`sendable` makes a result's error, but its stand-in
    names ``doing`` — the step that raised it when that is not a run (``"running its agent_factory"``): a
    credential-masked factory failure says it was the factory's, not only ``VendorSDKError: ...``."""
    return exc if _sendable_as_is(exc) else remote_error(exc, doing=doing)


def _sendable_as_is(exc: BaseException) -> bool:
    """Whether ``exc`` travels as it is: an ``Exception`` that pickles, its chain and pickled form clean."""
    return isinstance(exc, Exception) and scrub_chain(exc) is exc and _travels_clean(exc, scan=not _is_ours(exc))


def _is_ours(exc: BaseException) -> bool:
    """agentactors' own errors: redacted when made, so their pickled form is not searched."""
    from ..errors import AgentActorsError, RedactedException, Signal

    return isinstance(exc, AgentActorsError | Signal | RedactedException)


def failed_results(inputs: Sequence[Any], error: BaseException) -> list[RunResult[Any]]:
    """One failed result per input, each carrying ``error`` (a factory's failure, a runtime gone)."""
    return [RunResult("", input_messages(prompt), error=error) for prompt in inputs]


def pack_results(results: Sequence[RunResult[Any]]) -> list[bytes]:
    """A chunk's results for the driver, one blob each; a result that does not pickle becomes a failed one."""
    import ray.cloudpickle

    cloudpickle: Any = ray.cloudpickle  # untyped
    out: list[bytes] = []
    for result in results:
        try:
            blob = bytes(cloudpickle.dumps(sendable(result), protocol=pickle.HIGHEST_PROTOCOL))
        except Exception as exc:  # something else in it (provider data, an output) does not pickle
            failed = RunResult("", result.messages[:0], error=remote_error(exc))
            blob = bytes(cloudpickle.dumps(failed, protocol=pickle.HIGHEST_PROTOCOL))
        out.append(blob)
    return out


def unpack_results(blobs: Sequence[bytes], inputs: Sequence[Any]) -> list[RunResult[Any]]:
    """The results :func:`pack_results` packed (on the driver), for ``inputs`` in order.

    A result that does not unpickle here (a class the driver lacks, a ``__reduce__`` that fails)
    becomes a failed result of its input whose error is a :class:`RemoteError` saying why.
    """
    results: list[RunResult[Any]] = []
    for blob, prompt in zip(blobs, inputs, strict=True):
        try:
            result = pickle.loads(blob)
        except Exception as exc:
            result = RunResult("", input_messages(prompt), error=remote_error(exc, doing="unpickling its result"))
        results.append(result)
    return results
