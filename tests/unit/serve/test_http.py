"""The serving apps' shared pieces: the bearer allow-list, and importing agentactors.serve without extras."""

from __future__ import annotations

import subprocess
import sys

import pytest

from agentactors.serve._http import authorized, bearer_keys, route_path


def scope(authorization: str | None) -> dict[str, object]:
    headers = [(b"authorization", authorization.encode())] if authorization is not None else []
    return {"type": "http", "headers": headers}


def test_only_an_allowed_bearer_token_passes() -> None:
    keys = bearer_keys(["key-one", "key-two"])
    assert authorized(scope("Bearer key-one"), keys)
    assert authorized(scope("bearer key-two"), keys)
    for header in (None, "", "Bearer", "Bearer ", "Bearer key-on", "Bearer key-one2", "Basic key-one", "key-one"):
        assert not authorized(scope(header), keys), header
    assert authorized(scope(None), bearer_keys(None)), "no allow-list: an open app"


def test_an_allow_list_is_a_list_of_non_empty_keys() -> None:
    with pytest.raises(TypeError):
        bearer_keys("one-key")
    with pytest.raises(ValueError):
        bearer_keys([])
    with pytest.raises(ValueError):
        bearer_keys(["ok", ""])


def test_a_mounted_apps_path_is_its_own() -> None:
    assert route_path({"path": "/openai/v1/models", "root_path": "/openai"}) == "/v1/models"
    assert route_path({"path": "/v1/models", "root_path": ""}) == "/v1/models"
    assert route_path({"path": "/agui", "root_path": "/agui"}) == "/"


def test_importing_serve_needs_no_extra() -> None:
    code = (
        "import sys, agentactors.serve as s; "
        "assert not any(m == 'mcp' or m.startswith(('mcp.', 'starlette', 'ag_ui')) for m in sys.modules), "
        "sorted(m for m in sys.modules if m.startswith(('mcp', 'starlette', 'ag_ui'))); "
        "assert callable(s.openai_app) and callable(s.agui_app) and callable(s.lifespan); "
        "assert sorted(s.__all__) == ['agui_app', 'lifespan', 'mcp_server', 'openai_app']"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
