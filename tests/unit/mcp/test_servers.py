"""The public server classes: their checks, their reprs (no secrets), their credential registration."""

from __future__ import annotations

import logging

import pytest

from agentactors import ResultCeiling
from agentactors.mcp import MCPServerHTTP, MCPServerStdio
from agentactors.redaction import redact
from agentactors.tools import Toolset


def test_servers_are_toolsets_with_names() -> None:
    stdio = MCPServerStdio("python", ["server.py", "--fast"])
    http = MCPServerHTTP("https://mcp.example.com:8443/mcp")
    assert isinstance(stdio, Toolset) and isinstance(http, Toolset)
    assert stdio.name == "python server.py" and http.name == "mcp.example.com:8443"
    assert MCPServerStdio("uvx", "one-arg").args == ("one-arg",)  # a bare str is one argument
    assert stdio.timeout == 60.0 and stdio.tool_prefix is None


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: MCPServerStdio(""), "command must be a non-empty str"),
        (lambda: MCPServerStdio("x", tool_prefix="1bad"), "tool_prefix must start"),
        (lambda: MCPServerStdio("x", timeout=0), "timeout must be a positive number"),
        (lambda: MCPServerStdio("x", max_restarts=-1), "max_restarts must be a non-negative int"),
        (lambda: MCPServerHTTP("ftp://x"), "url must be an http"),
        (lambda: MCPServerHTTP("http://x", transport="ws"), "transport must be"),  # type: ignore[arg-type]
    ],
)
def test_invalid_options_are_refused(make: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        make()  # type: ignore[operator]
    with pytest.raises(TypeError, match="result_ceiling must be a ResultCeiling"):
        MCPServerStdio("x", result_ceiling=1000)  # type: ignore[arg-type]
    assert MCPServerStdio("x", result_ceiling=ResultCeiling(10)).name == "x"


def test_credential_headers_and_env_values_are_secrets_and_reprs_show_names_only() -> None:
    http = MCPServerHTTP(
        "http://127.0.0.1:9/mcp",
        headers={"Authorization": "Bearer hdr-token-1234567890ab", "X-Api-Key": "key-abcdef123456", "Accept": "a/b"},
    )
    stdio = MCPServerStdio("npx", ["server"], env={"GITHUB_TOKEN": "env-token-0987654321zz", "LANG": "C.UTF-8"})
    for secret in ("hdr-token-1234567890ab", "key-abcdef123456", "env-token-0987654321zz"):
        assert redact(f"saw {secret}") == "saw [REDACTED]"
        assert secret not in repr(http) and secret not in repr(stdio)
    assert redact("a/b and C.UTF-8") == "a/b and C.UTF-8"  # not credentials: left alone
    assert "Authorization" in repr(http) and "GITHUB_TOKEN" in repr(stdio)
    assert http.header_names == ("Authorization", "X-Api-Key", "Accept")


def test_the_http_stacks_loggers_redact_their_records(caplog: pytest.LogCaptureFixture) -> None:
    MCPServerHTTP("http://127.0.0.1:9/mcp", headers={"Authorization": "Bearer log-token-5566778899aa"})
    caplog.set_level(logging.DEBUG)
    logging.getLogger("httpx2").info("sent %s", "Bearer log-token-5566778899aa")
    logging.getLogger("httpcore2.http11").debug("headers %r", [(b"authorization", b"Bearer log-token-5566778899aa")])
    assert "log-token-5566778899aa" not in caplog.text


def test_importing_the_package_does_not_import_the_sdk() -> None:
    import subprocess
    import sys

    code = "import sys, agentactors; assert not [m for m in sys.modules if m == 'mcp' or m.startswith('mcp.')], 'sdk'"
    subprocess.run([sys.executable, "-c", code], check=True)
