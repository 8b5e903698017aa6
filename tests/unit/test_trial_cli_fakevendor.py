"""``python -m agentactors fakevendor --host ""`` is a usage error, not a server nobody can reach nor a traceback.

Found by a user's trial of the command line: an empty ``--host`` (an unset ``$HOST`` in a script) was taken and
served on every interface with ``http://:PORT`` as the base URL printed for the clients; refused where the
FakeVendor is made, it became a traceback.  It is now argparse's error: the usage line, one reason, exit 2.
"""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize("host", ["", "   "])
def test_an_empty_host_is_a_usage_error(host: str) -> None:
    done = subprocess.run([sys.executable, "-m", "agentactors", "fakevendor", "--host", host, "--port", "0"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.splitlines()[-1].startswith("python -m agentactors fakevendor: error: argument --host:")
    assert done.stdout == ""
