"""Run code in a fresh interpreter that cannot import some top-level modules, as when they are not installed.

Every finder of ``sys.meta_path`` is wrapped to find nothing of theirs before anything else is imported, so
``import x`` raises ``ModuleNotFoundError`` and ``importlib.util.find_spec("x")`` is ``None`` — what a missing
package does (putting ``None`` in ``sys.modules`` would not do: ``"trio" in sys.modules`` is how the library tells
which backend runs).  Children the code starts are not blocked.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from tests.support.paths import ROOT

#: Every top-level module an extra (or the dev install) brings that the core install has not.
OPTIONAL: tuple[str, ...] = (
    "trio", "sniffio", "rich", "mcp", "mcp_types", "httpx2", "opentelemetry", "starlette", "aiohttp", "yarl",
    "multidict", "ray", "pydantic", "pydantic_core", "jiter", "botocore", "boto3", "google", "genai_prices",
    "psycopg", "psycopg_binary", "psycopg_c", "hypercorn", "uvicorn", "openai", "ag_ui", "hypothesis",
)

# Run with -c: argv[1] the blocked modules (comma-separated), argv[2] the code.  The last line of stdout is JSON:
# {"ok": true} or what the code raised.
_RUNNER = textwrap.dedent(
    """
    import sys
    blocked = frozenset(sys.argv[1].split(","))
    loaded = blocked & {name.partition(".")[0] for name in sys.modules}
    assert not loaded, f"loaded before the blocker: {sorted(loaded)}"

    class _Hidden:
        def __init__(self, inner):
            self._inner = inner

        def find_spec(self, name, path=None, target=None):
            if name.partition(".")[0] in blocked:
                return None
            find = getattr(self._inner, "find_spec", None)
            return None if find is None else find(name, path, target)

        def __getattr__(self, attribute):
            return getattr(self._inner, attribute)

    sys.meta_path[:] = [_Hidden(finder) for finder in sys.meta_path]
    import json
    try:
        exec(compile(sys.argv[2], "<case>", "exec"), {"__name__": "__case__"})
    except BaseException as exc:
        out = {
            "ok": False, "type": type(exc).__name__, "import_error": isinstance(exc, ImportError),
            "message": str(exc), "name": getattr(exc, "name", None),
        }
    else:
        out = {"ok": True}
    print(json.dumps(out))
    """
)


def run_without(
    blocked: Iterable[str] | str,
    code: str,
    *,
    env: Mapping[str, str] | None = None,
    cwd: Path = ROOT,
) -> dict[str, Any]:
    """What ``code`` came to in a fresh interpreter that cannot import ``blocked``: ``{"ok": True}``, or the
    exception's ``type``, ``message``, ``name`` and whether it is an ``import_error``; ``stdout``, what it printed."""
    names = ",".join((blocked,) if isinstance(blocked, str) else blocked)
    done = subprocess.run(
        [sys.executable, "-c", _RUNNER, names, textwrap.dedent(code)],
        capture_output=True, text=True, cwd=cwd, timeout=60, env={**os.environ, **(env or {})}, check=False,
    )
    lines = done.stdout.strip().splitlines()
    assert done.returncode == 0 and lines, f"exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    result: dict[str, Any] = json.loads(lines[-1])
    result["stdout"] = "\n".join(lines[:-1])
    return result
