"""The Vertex constructors take the project from the credentials they will use, as google-auth's ``default()``
(so google-genai, ``anthropic.AnthropicVertex`` and gcloud users) does: with ``GOOGLE_APPLICATION_CREDENTIALS``
naming a service-account key file and no project given (``project=``, ``GOOGLE_CLOUD_PROJECT``, for Claude
``ANTHROPIC_VERTEX_PROJECT_ID`` first), the file's ``project_id`` is the project — validated as an argument is,
an error naming where it came from.  Only without a ``token_provider`` (whose credentials are not the file's),
read where the provider is made without importing google-auth; a file naming no project leaves the error
naming the argument, the variables and the credentials.  The private key never shows.  The real environment is
never read (every variable is set or removed here)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from agentactors.messages import LLMRequest, Message
from agentactors.providers.anthropic.provider import AnthropicProvider
from agentactors.providers.gemini.provider import GeminiProvider
from agentactors.testing.fakevendor import FakeReply, FakeVendor
from tests.support.echo_vendor import EchoVendor

CREDENTIALS = "GOOGLE_APPLICATION_CREDENTIALS"
GOOGLE_PROJECT, ANTHROPIC_PROJECT = "GOOGLE_CLOUD_PROJECT", "ANTHROPIC_VERTEX_PROJECT_ID"
TOKEN = "ya29.from-the-service-account-0123456789"
SA_PROJECT = "sa-proj-123"

Make = Callable[..., Any]
#: wire -> (constructor, model, default location, publisher)
WIRES: dict[str, tuple[Make, str, str, str]] = {
    "gemini": (GeminiProvider.vertex, "gemini-2.5-flash", "us-central1", "google"),
    "claude": (AnthropicProvider.vertex, "claude-sonnet-4-5@20250929", "us-east5", "anthropic"),
}


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in (CREDENTIALS, GOOGLE_PROJECT, ANTHROPIC_PROJECT, "GCLOUD_PROJECT", "GOOGLE_CLOUD_QUOTA_PROJECT",
                "GOOGLE_CLOUD_LOCATION", "CLOUD_ML_REGION"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")  # google-auth's token request goes to a local endpoint
    monkeypatch.setenv("no_proxy", "127.0.0.1")


def service_account(tmp_path: Path, token_uri: str = "http://127.0.0.1:9/token",
                    **fields: Any) -> tuple[Path, list[str]]:
    """A service-account key file with a fresh private key (``fields`` replace its entries; ``None`` removes one);
    its key's base64 lines are what must never show."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption()).decode()
    info: dict[str, Any] = {"type": "service_account", "project_id": SA_PROJECT, "private_key_id": "kid",
                            "private_key": pem, "client_email": f"sa@{SA_PROJECT}.iam.gserviceaccount.com",
                            "client_id": "1", "token_uri": token_uri}
    for name, value in fields.items():
        if value is None:
            info.pop(name, None)
        else:
            info[name] = value
    path = tmp_path / "sa.json"
    path.write_text(json.dumps(info))
    return path, [line for line in pem.splitlines() if line and not line.startswith("-----")]


def shows_no_key(exc: BaseException, key_lines: list[str]) -> bool:
    """Neither the error's text nor anything it keeps (cause, context) holds a line of the private key."""
    assert exc.__cause__ is None and exc.__context__ is None  # a JSONDecodeError's .doc would be the whole file
    text = f"{exc!s} {exc!r} {exc.args!r}"
    return not any(line in text or line[:16] in text for line in key_lines)


@pytest.mark.anyio
@pytest.mark.timeout(60)
@pytest.mark.parametrize("wire", list(WIRES))
async def test_the_project_comes_from_the_service_account_file(
    wire: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The user study's setup: GOOGLE_APPLICATION_CREDENTIALS and no project variable.  The request is sent to the
    file's project, authorised by the token google-auth got with the same file."""
    make, model, location, publisher = WIRES[wire]
    async with EchoVendor(access_token=TOKEN) as tokens, FakeVendor() as fv:
        path, _ = service_account(tmp_path, f"{tokens.base_url}/token")
        monkeypatch.setenv(CREDENTIALS, str(path))
        fv.script(FakeReply(text="hi"))
        provider = make(model, base_url=fv.base_url)
        async with provider:
            response = await provider.complete(LLMRequest([Message.user("hi")], max_tokens=16))
    assert response.content == "hi"
    (request,) = fv.requests
    assert request.path.startswith(f"/v1/projects/{SA_PROJECT}/locations/{location}/publishers/{publisher}/models/")
    assert len(tokens.token_requests) == 1, "the token came from the same service-account file"
    assert f"project={SA_PROJECT!r}" in repr(provider)


WINNERS = [("gemini", "argument"), ("gemini", GOOGLE_PROJECT), ("claude", "argument"), ("claude", GOOGLE_PROJECT),
           ("claude", ANTHROPIC_PROJECT)]


@pytest.mark.parametrize("file_project", [SA_PROJECT, "not/a project"])
@pytest.mark.parametrize(("wire", "given_by"), WINNERS)
def test_a_project_given_wins_over_the_file(wire: str, given_by: str, file_project: str, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """An argument or a variable wins; the file is then not read (one whose project_id cannot be one is no error)."""
    make, model, _, _ = WIRES[wire]
    path, _ = service_account(tmp_path, project_id=file_project)
    monkeypatch.setenv(CREDENTIALS, str(path))
    if given_by == "argument":
        monkeypatch.setenv(GOOGLE_PROJECT, "env-proj")
        provider = make(model, project="arg-proj")
        assert "project='arg-proj'" in repr(provider)
    else:
        monkeypatch.setenv(given_by, "env-proj")
        assert "project='env-proj'" in repr(make(model))


BAD_FILES: dict[str, dict[str, Any]] = {
    "no project_id": {"project_id": None},
    "an authorized_user file": {"type": "authorized_user", "project_id": None, "quota_project_id": "quota-proj",
                                "refresh_token": "1//refresh", "client_secret": "shh"},
    "project_id of another type": {"type": "external_account"},  # google-auth asks a server: not read here
}


@pytest.mark.parametrize("wire", list(WIRES))
@pytest.mark.parametrize("case", list(BAD_FILES))
def test_a_file_naming_no_project_is_the_clear_error(wire: str, case: str, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    make, model, _, _ = WIRES[wire]
    path, key_lines = service_account(tmp_path, **BAD_FILES[case])
    monkeypatch.setenv(CREDENTIALS, str(path))
    with pytest.raises(ValueError) as caught:
        make(model)
    message = str(caught.value)
    assert "project=" in message and GOOGLE_PROJECT in message and CREDENTIALS in message, message
    assert "project_id" in message
    assert (ANTHROPIC_PROJECT in message) == (wire == "claude")
    assert "shh" not in message and "1//refresh" not in message
    assert shows_no_key(caught.value, key_lines)


@pytest.mark.parametrize("wire", list(WIRES))
@pytest.mark.parametrize("case", ["missing", "not json", "a json list", "a directory"])
def test_a_file_that_cannot_be_read_is_the_clear_error(wire: str, case: str, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Named by its exception's type only: the variable may hold the key file's contents, not a path."""
    make, model, _, _ = WIRES[wire]
    path, key_lines = service_account(tmp_path)
    pem = json.loads(path.read_text())["private_key"]
    target: str = str(path)
    if case == "missing":
        target = str(tmp_path / "nowhere.json")
    elif case == "not json":
        path.write_text(pem)
    elif case == "a json list":
        path.write_text(json.dumps([pem]))
    else:
        target = str(tmp_path)
    monkeypatch.setenv(CREDENTIALS, target)
    with pytest.raises(ValueError) as caught:
        make(model)
    message = str(caught.value)
    assert "project=" in message and GOOGLE_PROJECT in message and CREDENTIALS in message, message
    assert shows_no_key(caught.value, key_lines)


@pytest.mark.parametrize("wire", list(WIRES))
def test_the_variable_holding_the_key_itself_is_never_shown(wire: str, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """A common slip: the key file's contents put in GOOGLE_APPLICATION_CREDENTIALS instead of its path."""
    make, model, _, _ = WIRES[wire]
    path, key_lines = service_account(tmp_path)
    monkeypatch.setenv(CREDENTIALS, path.read_text())
    with pytest.raises(ValueError) as caught:
        make(model)
    assert CREDENTIALS in str(caught.value)
    assert shows_no_key(caught.value, key_lines)


@pytest.mark.parametrize("wire", list(WIRES))
@pytest.mark.parametrize("bad", ["", "  ", "my proj", "my-proj/x", 123])
def test_the_files_project_is_checked_as_an_argument_is(wire: str, bad: object, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    make, model, _, _ = WIRES[wire]
    path, key_lines = service_account(tmp_path, project_id=bad)
    monkeypatch.setenv(CREDENTIALS, str(path))
    with pytest.raises(ValueError) as caught:
        make(model)
    message = str(caught.value)
    assert "project_id" in message and CREDENTIALS in message, message
    assert shows_no_key(caught.value, key_lines)


@pytest.mark.parametrize("wire", list(WIRES))
def test_a_token_provider_is_not_the_files_credentials(wire: str, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """With a token_provider the file's credentials are not used: nor is its project (the error as before)."""
    make, model, _, _ = WIRES[wire]
    path, _ = service_account(tmp_path)
    monkeypatch.setenv(CREDENTIALS, str(path))
    with pytest.raises(ValueError) as caught:
        make(model, token_provider=lambda: TOKEN)
    message = str(caught.value)
    assert "project=" in message and GOOGLE_PROJECT in message
    assert CREDENTIALS not in message


@pytest.mark.parametrize("wire", list(WIRES))
def test_no_project_anywhere_names_the_credentials_too(wire: str) -> None:
    make, model, _, _ = WIRES[wire]
    with pytest.raises(ValueError) as caught:
        make(model)
    message = str(caught.value)
    assert "project=" in message and GOOGLE_PROJECT in message and CREDENTIALS in message, message


def test_making_the_provider_imports_no_google_auth(tmp_path: Path) -> None:
    """The file is read as JSON where the provider is made; google-auth is imported by the first request."""
    path, _ = service_account(tmp_path)
    code = (
        "import sys\n"
        "from agentactors.providers.anthropic.provider import AnthropicProvider\n"
        "from agentactors.providers.gemini.provider import GeminiProvider\n"
        "a = GeminiProvider.vertex('gemini-2.5-flash')\n"
        "b = AnthropicProvider.vertex('claude-sonnet-4-5@20250929')\n"
        "print(repr(a), repr(b), sorted(m for m in sys.modules if m.startswith('google.auth')))\n"
    )
    env = {"PATH": "/usr/bin:/bin", CREDENTIALS: str(path)}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60,
                         check=True, cwd=str(Path(__file__).resolve().parents[3])).stdout
    assert out.count(f"project={SA_PROJECT!r}") == 2 and out.rstrip().endswith("[]"), out
