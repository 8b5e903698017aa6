"""Testing support: the FakeVendor server, its scripting types, and virtual time on asyncio.

``FakeVendor`` serves HTTP itself (no server package needed); it is imported on first use so
that ``agentactors.testing`` itself costs nothing to import.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import agentactors._reexport as _reexport

from ._fake_script import (
    Conversation,
    FakeError,
    FakeMalformed,
    FakeReply,
    FakeToolCall,
    FaultKind,
    FaultPlan,
    OfferedTool,
    RecordedRequest,
    SeenPart,
    SeenToolCall,
    SeenToolResult,
)
from ._fake_state import Outage
from .virtual_time import VirtualTimeLoop, virtual_backends

if TYPE_CHECKING:
    from .fakevendor import FakeVendor

__all__ = [
    "Conversation",
    "FakeError",
    "FakeMalformed",
    "FakeReply",
    "FakeToolCall",
    "FakeVendor",
    "FaultKind",
    "FaultPlan",
    "OfferedTool",
    "Outage",
    "RecordedRequest",
    "SeenPart",
    "SeenToolCall",
    "SeenToolResult",
    "VirtualTimeLoop",
    "virtual_backends",
]

# Reprs, tracebacks and pickles name agentactors.testing.X, where users import X from, not the private module
# that defines it (agentactors._reexport says what that takes to keep type hints resolving).  FakeVendor, loaded
# on first use, is relabelled by its own module (fakevendor.py) when that is imported.
_reexport.adopt(globals(), (name for name in __all__ if name != "FakeVendor"), __name__)


# For the interpreter only: a checker that saw it would accept any misspelt name (FakeVendor is declared above).
if not TYPE_CHECKING:

    def __getattr__(name: str) -> Any:
        if name == "FakeVendor":
            try:
                from .fakevendor import FakeVendor
            except ImportError as exc:  # pragma: no cover - depends on the environment
                raise ImportError(
                    "agentactors.testing.FakeVendor needs the 'testing' extra: pip install 'agentactors[testing]'"
                ) from exc
            return FakeVendor
        raise AttributeError(f"module 'agentactors.testing' has no attribute {name!r}")
