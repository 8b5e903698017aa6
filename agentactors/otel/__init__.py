"""OpenTelemetry for agent runs: spans and metrics that follow the GenAI semantic conventions.

``OTelRecorder`` is a recorder (attach it to a Runtime or an Agent) that turns a run's events into
spans — ``invoke_agent {agent}`` per run, ``chat {model}`` per model call, ``execute_tool {tool}`` per
tool call — and records the GenAI client metrics.  Needs the ``[otel]`` extra (``opentelemetry-api``);
``import agentactors`` never imports OpenTelemetry, and without this recorder attached nothing of it runs.

``agentactors.otel.recorder``
    the recorder: which event opens and closes which span, on the wall clock.
``agentactors.otel._semconv``
    the conventions: attribute names, provider names, finish reasons, messages in the conventions' JSON.
"""

import agentactors._reexport as _reexport
from agentactors._extras import needs_extra

with needs_extra("otel", "agentactors.otel"):  # without opentelemetry-api: an ImportError that names the extra
    from .recorder import OTelRecorder

__all__ = ["OTelRecorder"]

# Reprs, tracebacks and pickles name agentactors.otel.X, where users import X from, not the module that defines
# it (agentactors._reexport says what that takes to keep type hints resolving).
_reexport.adopt(globals(), __all__, __name__)
