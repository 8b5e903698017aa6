"""A fake model for ``VendorProcess(model=PROBE)`` that reports on the child's own interpreter.

Its answer says whether the child's ``json`` has the C accelerator and whether the package's own directory
is on the child's ``sys.path`` (where ``agentactors/_json.py`` shadows the standard library's ``_json``: the
bug that went unnoticed for months because everything still worked, only slower).
"""

from __future__ import annotations

import json
import json.decoder
import sys
from pathlib import Path

from agentactors.testing import RecordedRequest

PROBE = "tests.unit._demo._child_probe:probe"

_PACKAGE_DIR = Path(__file__).resolve().parents[3] / "agentactors"


def probe(request: RecordedRequest) -> str:
    """The child's findings as JSON text: the test reads them from the answer."""
    del request
    shadowed = [p for p in sys.path if p and Path(p).resolve() == _PACKAGE_DIR]
    return json.dumps({
        "c_scanstring": getattr(json.decoder, "c_scanstring", None) is not None,
        "json_module": getattr(sys.modules.get("_json"), "__file__", None),
        "package_dir_on_path": shadowed,
    })
