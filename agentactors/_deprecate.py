"""Every moved path, in one place: the old module paths and the old names, and the one warning they give.

A module path or a public name that moves keeps working for one release (``docs/architecture.md``, "The
contract"), with a :class:`DeprecationWarning` that says where it went.  This module holds both tables and the
machinery that answers them (trio's ``_deprecate.py`` is the model):

- :data:`MOVED`, old module path -> new module path.  Rather than leave a stub file at every old place — which
  would put an import of the new layer back into the old one — one import hook answers for every old path:
  importing it imports the new module, registers it under the old name too, and warns.  The module object is
  the same, so ``from agentactors.actors.provider import ProviderActor`` gets the very class
  ``agentactors.gateway.provider`` defines.
- :data:`MOVED_NAMES`, old dotted name -> the module to import it from now (under the same name).  A module
  that lost names gets a module ``__getattr__`` that serves them.  Python calls it only for names the module
  does not bind, so it costs nothing at import nor for any name still there.
- :func:`warn_moved`, the one warning both give.

:func:`install` sets all of it up, once, at the end of the package's ``__init__`` (when every module that lost
names is imported).  Nothing else imports this module: it names the new modules by string, and a module that
imported it would sit in a cycle with them.

Since 0.1.0 is not released, a path or a name is here only when something may still use it: the contract
names (the API blocks of the design), and the paths and names earlier issues published.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import inspect
import sys
import warnings
from collections.abc import Callable, Sequence
from types import FrameType, ModuleType
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    # Only for the checker: importlib.abc imports importlib.resources (~20 ms), and the import system takes any
    # object with the loader's and the finder's methods, so the classes below do not derive from its ABCs.
    from importlib.abc import Loader

__all__ = ["MOVED", "MOVED_NAMES", "UNWARNED", "install", "warn_moved"]

#: Old module path -> new module path.  Remove an entry one release after its move.
MOVED: dict[str, str] = {
    # the repository-layout issue: the loop left actors/, the demo went private
    "agentactors.actors.loop": "agentactors.loop.controller",
    "agentactors.actors.result": "agentactors.loop.result",
    "agentactors.actors.nudges": "agentactors.loop.nudges",
    "agentactors.actors.json_transport": "agentactors.loop.json_transport",
    "agentactors.actors.thinking": "agentactors.loop.thinking",
    "agentactors.actors.context_budget": "agentactors.loop.context_budget",
    "agentactors.providers.openai_stream": "agentactors.providers.openai.stream",
    "agentactors.providers.gemini_schema": "agentactors.providers.gemini.schema",
    "agentactors.demo": "agentactors._demo.main",
    # the structure issue: the kernel alone in actors/, the agent layer a package, one folder per wire.  Old
    # paths that are packages now (agentactors.agent, agentactors.providers.openai, ...) need no entry: the
    # package re-exports what the module held.
    "agentactors._compat": "agentactors._deprecate",
    "agentactors.streaming": "agentactors.agent.run",
    "agentactors.batch": "agentactors.agent.batch",
    "agentactors.delegation": "agentactors.agent.delegation",
    "agentactors.handoffs": "agentactors.agent.handoffs",
    "agentactors.asgi": "agentactors.serve.asgi",
    "agentactors.json_refs": "agentactors.tools.json_refs",
    "agentactors.json_types": "agentactors.tools.json_types",
    "agentactors.run_ticket": "agentactors.gateway.ticket",
    "agentactors.actors.provider": "agentactors.gateway.provider",
    "agentactors.actors.scheduling": "agentactors.gateway.scheduling",
    "agentactors.actors.budgets": "agentactors.gateway.budgets",
    "agentactors.actors.tools": "agentactors.tools.executor",
    "agentactors.loop.handoff": "agentactors.loop.seats",
    "agentactors.providers.base": "agentactors.providers.port",
    "agentactors.providers._classify": "agentactors.providers.errors",
    "agentactors.providers.ratelimits": "agentactors.providers.http.ratelimits",
    "agentactors.providers._transport": "agentactors.providers.http.transport",
    "agentactors.providers._transport_aiohttp": "agentactors.providers.http.aiohttp_transport",
    "agentactors.providers._body": "agentactors.providers.http.body",
    "agentactors.providers._sse": "agentactors.providers.http.sse",
    "agentactors.providers._limits": "agentactors.providers.http.limits",
    "agentactors.providers._keys": "agentactors.providers.http.keys",
    "agentactors.providers._openai_decode": "agentactors.providers.openai.decode",
    "agentactors.providers._openai_stream": "agentactors.providers.openai.stream",
    "agentactors.providers._openai_models": "agentactors.providers.openai.models",
    "agentactors.providers._anthropic_decode": "agentactors.providers.anthropic.decode",
    "agentactors.providers._anthropic_stream": "agentactors.providers.anthropic.stream",
    "agentactors.providers._anthropic_models": "agentactors.providers.anthropic.models",
    "agentactors.providers._gemini_decode": "agentactors.providers.gemini.decode",
    "agentactors.providers._gemini_stream": "agentactors.providers.gemini.stream",
    "agentactors.providers._gemini_models": "agentactors.providers.gemini.models",
    "agentactors.providers._gemini_schema": "agentactors.providers.gemini.schema",
    "agentactors.resilience._base": "agentactors.resilience.decorator",
    "agentactors.resilience._streaming": "agentactors.resilience.streams",
}

#: Old dotted name -> the module users import it from now, where it has the same name.  A name the package
#: root dropped from its API is here when an earlier release listed it; the contract names stay at the root.
MOVED_NAMES: dict[str, str] = {
    # the root's plumbing, out of __all__ since the typed-events issue
    "agentactors.EventSink": "agentactors.events",
    "agentactors.FanOut": "agentactors.events",
    "agentactors.emit": "agentactors.events",
    "agentactors.classify_exception": "agentactors.providers",
    "agentactors.classify_http_error": "agentactors.providers",
    # the root's machinery and detail, out of it since the structure issue (the user API is __all__)
    "agentactors.StreamEvent": "agentactors.messages",
    "agentactors.ScriptExhaustedError": "agentactors.providers.scripted",
    "agentactors.StreamCut": "agentactors.providers.scripted",
    "agentactors.MalformedResponseError": "agentactors.errors",
    "agentactors.DelegationError": "agentactors.errors",
    "agentactors.SessionFormatError": "agentactors.errors",
    "agentactors.redact": "agentactors.redaction",
    "agentactors.register_secret": "agentactors.redaction",
    "agentactors.CircuitState": "agentactors.resilience",
    "agentactors.CircuitStats": "agentactors.resilience",
    "agentactors.Toolset": "agentactors.tools",
    "agentactors.ToolsetError": "agentactors.tools",
    "agentactors.ToolNameClashError": "agentactors.tools",
    "agentactors.RuntimeStats": "agentactors.actors",
    "agentactors.ExecutionContext": "agentactors.tools.executor",
    "agentactors.ActorEvent": "agentactors.events",
    "agentactors.BreakerEvent": "agentactors.events",
    "agentactors.FallbackEvent": "agentactors.events",
    "agentactors.LLMEvent": "agentactors.events",
    "agentactors.OutputEvent": "agentactors.events",
    "agentactors.ProviderEvent": "agentactors.events",
    "agentactors.RetryEvent": "agentactors.events",
    "agentactors.RunEvent": "agentactors.events",
    "agentactors.SessionEvent": "agentactors.events",
    "agentactors.StepEvent": "agentactors.events",
    "agentactors.ToolEvent": "agentactors.events",
    "agentactors.AgentTool": "agentactors.agent",
    "agentactors.Handoff": "agentactors.agent",
    "agentactors.PausedRun": "agentactors.loop.pause",
    "agentactors.SessionRecord": "agentactors.sessions",
    # the domain actors, out of the kernel's package since the structure issue (its modules are MOVED above)
    "agentactors.actors.Complete": "agentactors.gateway",
    "agentactors.actors.ProviderActor": "agentactors.gateway",
    "agentactors.actors.ProviderStream": "agentactors.gateway",
    "agentactors.actors.Stream": "agentactors.gateway",
    "agentactors.actors.estimate_tokens": "agentactors.gateway",
    # agentactors.agent was a module that imported RunResult; it is a package now
    "agentactors.agent.RunResult": "agentactors.loop.result",
    # the classifier, out of the error tree since the exception-tree issue
    "agentactors.errors.classify_error_body": "agentactors.providers.errors",
    "agentactors.errors.classify_exception": "agentactors.providers.errors",
    "agentactors.errors.classify_http_error": "agentactors.providers.errors",
    "agentactors.errors.explicit_retryable": "agentactors.providers.errors",
    "agentactors.errors.parse_retry_after": "agentactors.providers.errors",
    # not a move: the public name of a function whose module is private, served lazily (see UNWARNED)
    "agentactors.errors.scrub_chain": "agentactors._scrub",
}

#: Names of :data:`MOVED_NAMES` served without a warning: they did not move, they are defined elsewhere.
#: ``agentactors.errors.scrub_chain`` is the public name of :func:`agentactors._scrub.scrub_chain`, which
#: imports the error tree (so the tree cannot import it).
UNWARNED: frozenset[str] = frozenset({"agentactors.errors.scrub_chain"})


def warn_moved(old: str, home: str, name: str = "", *, stacklevel: int = 1) -> None:
    """Warn that ``old`` (a module path, or a dotted name when ``name`` is given) now lives in ``home``.

    ``stacklevel`` counts from the caller, as :func:`warnings.warn` does: 1 blames the line that called this.
    """
    new = f"{home}.{name}" if name else home
    kind = "name" if name else "path"
    warnings.warn(
        f"{old} is deprecated: import it from {home} ({old} moved to {new}; the old {kind} is kept for one release)",
        DeprecationWarning,
        stacklevel=stacklevel + 1,
    )


def getattr_for(module: str, *, stacklevel: int = 2) -> Callable[[str], object]:
    """The module ``__getattr__`` that serves the names :data:`MOVED_NAMES` lists for ``module``.

    ``stacklevel`` finds the line that asked for the name: 2 when this is the module's ``__getattr__``, 3 when
    the module's own ``__getattr__`` (which serves other names too) calls it.
    """

    def __getattr__(name: str) -> object:
        old = f"{module}.{name}"
        home = MOVED_NAMES.get(old)
        if home is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        if old not in UNWARNED and not _fromlist_probe(inspect.currentframe(), stacklevel - 1):
            warn_moved(old, home, name, stacklevel=stacklevel)  # blame the line that asked for the name
        return getattr(importlib.import_module(home), name)

    return __getattr__


def _fromlist_probe(frame: FrameType | None, up: int) -> bool:
    """Whether the name is asked for (``up`` frames above ``frame``) by the import system's ``hasattr`` probe of a
    package's from-list (``_handle_fromlist``): ``from package import name`` looks the name up there first, then
    again for the import itself — warning at both, it warned twice for one line.  The second lookup warns."""
    for _ in range(up):
        frame = frame.f_back if frame is not None else None
    if frame is None:
        return False
    code = frame.f_code
    return code.co_name == "_handle_fromlist" and code.co_filename == "<frozen importlib._bootstrap>"


class _AliasLoader:
    """Loads an old path by importing the new module and handing back that same module object."""

    def __init__(self, new: str) -> None:
        self._new = new
        self._spec: importlib.machinery.ModuleSpec | None = None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        # The import system's own frames do not count for a warning's stacklevel: 2 is the importing line.
        warn_moved(spec.name, self._new, stacklevel=2)
        module = importlib.import_module(self._new)
        self._spec = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        """Nothing to run (the new module ran when it was imported): give it back its own ``__spec__``,
        which the import system just replaced with the old path's."""
        if self._spec is not None:
            module.__spec__ = self._spec


class _AliasFinder:
    """Finds the old paths of :data:`MOVED` (and nothing else)."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        new = MOVED.get(fullname)
        if new is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, cast("Loader", _AliasLoader(new)))


_FINDER = _AliasFinder()


def install() -> None:
    """Answer every old path and name: the alias finder on ``sys.meta_path``, a ``__getattr__`` on each module
    that lost names (once; each such module must be imported already).  A module with a ``__getattr__`` of its
    own keeps it, and that one serves the moved names through :func:`getattr_for` (the package root does)."""
    if _FINDER not in sys.meta_path:
        sys.meta_path.append(_FINDER)
    for module in {old.rpartition(".")[0] for old in MOVED_NAMES}:
        namespace = vars(sys.modules[module])
        namespace.setdefault("__getattr__", getattr_for(module))
