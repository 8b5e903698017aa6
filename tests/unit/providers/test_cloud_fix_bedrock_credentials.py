"""Bedrock's credentials checked as ``api_key`` is on the other HTTP providers: an empty, blank or non-str
``access_key_id`` / ``secret_access_key`` / ``session_token`` is refused at construction naming the parameter
(never the value), surrounding whitespace is stripped, and a blank credential variable of the environment is an
unset one (docs/wire.md: "a blank one is unset")."""

from __future__ import annotations

import traceback
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentactors import BedrockProvider
from agentactors.errors import ErrorKind, ProviderError
from agentactors.messages import LLMRequest, Message

pytestmark = pytest.mark.anyio

KEY_ID = "AKIACLOUDFIXKEYID0001"
SECRET = "cloudFix/Secret+Access/Key0000000000000001"
TOKEN = "FwoGZXIvYXdzCLOUDFIXSESSIONTOKEN0000000001"
OK = {"output": {"message": {"role": "assistant", "content": [{"text": "ok"}]}}, "stopReason": "end_turn",
      "usage": {"inputTokens": 1, "outputTokens": 1}}
PARAMETERS = ("access_key_id", "secret_access_key", "session_token")
CREDENTIAL_VARS = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN",
                   "AWS_CREDENTIAL_EXPIRATION", "AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_REGION",
                   "AWS_DEFAULT_REGION", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
                   "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN")


@pytest.fixture
def no_aws(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    for var in CREDENTIAL_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    return tmp_path


class Vendor:
    """A mock transport answering 200 and keeping every request."""

    def __init__(self) -> None:
        self.requests: list[httpx.Request] = []

    def client(self) -> httpx.AsyncClient:
        def handle(request: httpx.Request) -> httpx.Response:
            self.requests.append(request)
            return httpx.Response(200, json=OK)

        return httpx.AsyncClient(transport=httpx.MockTransport(handle))


def chain_text(exc: BaseException) -> str:
    return "".join(traceback.format_exception(exc))


def given(**credentials: Any) -> dict[str, Any]:
    """All three credentials, with ``credentials`` replacing some."""
    return {"access_key_id": KEY_ID, "secret_access_key": SECRET, "session_token": TOKEN, **credentials}


def ask() -> LLMRequest:
    return LLMRequest([Message.user("hi")])


@pytest.mark.parametrize("parameter", PARAMETERS)
@pytest.mark.parametrize("value", ["", "   ", "\n", "\t \r\n"])
def test_an_empty_or_blank_credential_is_refused_naming_it(no_aws: Path, parameter: str, value: str) -> None:
    with pytest.raises(ValueError, match=parameter) as caught:
        BedrockProvider("amazon.nova-micro-v1:0", region="us-east-1", **given(**{parameter: value}))
    assert "empty" in str(caught.value)


@pytest.mark.parametrize("parameter", PARAMETERS)
@pytest.mark.parametrize("value", [1, b"AKIABYTESKEYID000001", 1.5, ["x"]])
def test_a_credential_that_is_not_a_str_is_a_type_error_naming_it(no_aws: Path, parameter: str, value: object) -> None:
    with pytest.raises(TypeError, match=f"{parameter} .*must be a str, not {type(value).__name__}") as caught:
        BedrockProvider("amazon.nova-micro-v1:0", region="us-east-1", **given(**{parameter: value}))
    assert "len()" not in str(caught.value)


@pytest.mark.parametrize("parameter", PARAMETERS)
def test_a_credential_with_a_character_inside_that_no_key_has_is_refused_without_showing_it(
    no_aws: Path, parameter: str
) -> None:
    value = {"access_key_id": KEY_ID, "secret_access_key": SECRET, "session_token": TOKEN}[parameter]
    broken = value[:10] + "\nX" + value[10:]
    with pytest.raises(ValueError, match=parameter) as caught:
        BedrockProvider("amazon.nova-micro-v1:0", region="us-east-1", **given(**{parameter: broken}))
    text = chain_text(caught.value)
    assert value[:10] not in text and value[10:] not in text
    assert "position 10" in text


async def test_surrounding_whitespace_is_stripped_from_given_credentials(no_aws: Path) -> None:
    vendor = Vendor()
    async with vendor.client() as http:
        p = BedrockProvider("amazon.nova-micro-v1:0", region="us-east-1", access_key_id=f" {KEY_ID}\n",
                            secret_access_key=f"{SECRET}\n", session_token=f"{TOKEN}\r\n", http_client=http)
        assert (await p.complete(ask())).content == "ok"
    [sent] = vendor.requests
    assert f"Credential={KEY_ID}/" in sent.headers["authorization"]
    assert sent.headers["x-amz-security-token"] == TOKEN


@pytest.mark.parametrize("blank", ["", "   ", "\n"])
async def test_a_blank_aws_access_key_id_variable_is_unset(
    no_aws: Path, monkeypatch: pytest.MonkeyPatch, blank: str
) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", blank)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    vendor = Vendor()
    async with vendor.client() as http:
        with pytest.raises(ProviderError) as caught:
            await BedrockProvider("amazon.nova-micro-v1:0", region="us-east-1", http_client=http).complete(ask())
    assert (caught.value.kind, caught.value.retryable) == (ErrorKind.account, False)
    assert "no AWS credentials found" in str(caught.value)
    assert vendor.requests == []


@pytest.mark.parametrize("blank", ["", "   ", "\n"])
async def test_a_blank_aws_secret_access_key_variable_is_unset_and_named(
    no_aws: Path, monkeypatch: pytest.MonkeyPatch, blank: str
) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", KEY_ID)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", blank)
    vendor = Vendor()
    async with vendor.client() as http:
        with pytest.raises(ProviderError) as caught:
            await BedrockProvider("amazon.nova-micro-v1:0", region="us-east-1", http_client=http).complete(ask())
    assert (caught.value.kind, caught.value.retryable) == (ErrorKind.account, False)
    assert "AWS_SECRET_ACCESS_KEY" in str(caught.value)
    assert KEY_ID not in chain_text(caught.value)
    assert vendor.requests == []


async def test_a_blank_session_token_variable_is_unset_and_values_are_stripped(
    no_aws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", f"{KEY_ID}\n")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", f" {SECRET}\n")
    monkeypatch.setenv("AWS_SESSION_TOKEN", "  ")
    vendor = Vendor()
    async with vendor.client() as http:
        p = BedrockProvider("amazon.nova-micro-v1:0", region="us-east-1", http_client=http)
        assert (await p.complete(ask())).content == "ok"
    [sent] = vendor.requests
    assert f"Credential={KEY_ID}/" in sent.headers["authorization"]
    assert "x-amz-security-token" not in sent.headers
