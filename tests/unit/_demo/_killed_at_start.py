"""A fake model for ``VendorProcess(model="tests.unit._demo._killed_at_start:model")``: imported by the vendor
child before it is ready, it kills that child (and only that process: ``python -m agentactors._demo.vendor``)."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

if sys.argv and Path(sys.argv[0]).parts[-2:] == ("_demo", "vendor.py"):
    os.kill(os.getpid(), signal.SIGKILL)


def model(request: object) -> str:  # pragma: no cover - the child dies before it answers
    return ""
