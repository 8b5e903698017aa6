"""``python -m agentactors`` whose demo finds its vendor child hung (stopped) when it asks for the request log.

Run as a script (``python tests/unit/_demo/_hung_at_log.py demo ...``): before the demo's first request-log
call it stops the vendor child with ``SIGSTOP`` and says so on stderr (``hung vendor child PID``), so that a
test can interrupt the demo while it waits for an answer that will not come.  Ctrl-C gets its usual handler
(a background job of a non-interactive shell inherits SIGINT ignored).
"""

from __future__ import annotations

import os
import signal
import sys
from typing import Any

from agentactors.__main__ import main
from agentactors._demo.vendor import VendorProcess

_log = VendorProcess.log


async def _hung_log(self: VendorProcess, **kwargs: Any) -> Any:
    pid = self.pid
    assert pid is not None
    os.kill(pid, signal.SIGSTOP)
    print(f"hung vendor child {pid}", file=sys.stderr, flush=True)
    return await _log(self, **kwargs)


if __name__ == "__main__":
    VendorProcess.log = _hung_log  # type: ignore[method-assign]
    signal.signal(signal.SIGINT, signal.default_int_handler)
    sys.exit(main(sys.argv[1:]))
