"""BedrockProvider's thin I/O: SigV4 signatures AWS would accept, the credential chain, the region, what each
model can do, forced choices refused before sending, and secrets kept out of reprs and errors."""

from __future__ import annotations

import hashlib
import hmac
import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentactors import BedrockProvider, forced_tool_choice_for
from agentactors.errors import ErrorKind, ProviderError, UnsupportedToolChoiceError
from agentactors.messages import LLMRequest, Message, StreamEnd, ToolChoice, ToolSpec
from agentactors.providers.port import Capabilities

pytestmark = pytest.mark.anyio

KEY_ID, SECRET = "AKIDUNITTEST00000000", "unit/Secret+Key/000000000000000000000000"
TOKEN = "IQoJunit-session-token-0000"
OK = {"output": {"message": {"role": "assistant", "content": [{"text": "ok"}]}}, "stopReason": "end_turn",
      "usage": {"inputTokens": 1, "outputTokens": 1}}
TOOL = ToolSpec("f", "", {"type": "object", "properties": {}})


@pytest.fixture
def no_aws(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """An environment with no AWS configuration at all (and no instance metadata to ask)."""
    for var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_REGION",
                "AWS_DEFAULT_REGION", "AWS_DEFAULT_PROFILE", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
                "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    return tmp_path


class Seen:
    def __init__(self) -> None:
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return httpx.Response(200, json=OK)


async def one_call(**kw: Any) -> httpx.Request:
    seen = Seen()
    async with httpx.AsyncClient(transport=httpx.MockTransport(seen)) as http:
        p = BedrockProvider("us.amazon.nova-pro-v1:0", http_client=http, **kw)
        assert (await p.complete(LLMRequest([Message.user("hi")]))).content == "ok"
    (request,) = seen.requests
    return request


def _hmac(key: bytes, text: str) -> bytes:
    return hmac.new(key, text.encode(), hashlib.sha256).digest()


def expected_signature(request: httpx.Request, secret: str, region: str) -> str:
    """AWS's SigV4 written out from its documentation (non-S3: the path's escapes are escaped again)."""
    auth = request.headers["authorization"]
    signed = auth.split("SignedHeaders=")[1].split(",")[0].split(";")
    amz_date = request.headers["x-amz-date"]
    path = request.url.raw_path.decode().split("?")[0].replace("%", "%25")
    canonical = "\n".join([
        "POST", path, "",
        *[f"{name}:{request.headers[name].strip()}" for name in signed], "",
        ";".join(signed), hashlib.sha256(request.content).hexdigest(),
    ])
    scope = f"{amz_date[:8]}/{region}/bedrock/aws4_request"
    to_sign = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope, hashlib.sha256(canonical.encode()).hexdigest()])
    key = _hmac(_hmac(_hmac(_hmac(f"AWS4{secret}".encode(), amz_date[:8]), region), "bedrock"), "aws4_request")
    return hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()


async def test_the_signature_is_the_one_aws_computes(no_aws: Path) -> None:
    request = await one_call(region="ap-southeast-2", access_key_id=KEY_ID, secret_access_key=SECRET,
                             session_token=TOKEN)
    assert request.url.host == "bedrock-runtime.ap-southeast-2.amazonaws.com"
    assert request.url.raw_path == b"/model/us.amazon.nova-pro-v1%3A0/converse"
    auth = request.headers["authorization"]
    assert auth.startswith(f"AWS4-HMAC-SHA256 Credential={KEY_ID}/{request.headers['x-amz-date'][:8]}/"
                           "ap-southeast-2/bedrock/aws4_request, SignedHeaders=")
    signed = auth.split("SignedHeaders=")[1].split(",")[0].split(";")
    assert {"host", "x-amz-date", "x-amz-security-token", "content-type"} <= set(signed)
    assert request.headers["x-amz-security-token"] == TOKEN
    assert auth.endswith("Signature=" + expected_signature(request, SECRET, "ap-southeast-2"))


async def test_credentials_from_the_environment(no_aws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDFROMENVIRONMENT0")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    monkeypatch.setenv("AWS_SESSION_TOKEN", TOKEN)
    monkeypatch.setenv("AWS_REGION", "eu-central-1")
    request = await one_call()
    assert "Credential=AKIDFROMENVIRONMENT0/" in request.headers["authorization"]
    assert "/eu-central-1/bedrock/" in request.headers["authorization"]
    assert request.headers["x-amz-security-token"] == TOKEN
    assert request.url.host == "bedrock-runtime.eu-central-1.amazonaws.com"


async def test_credentials_and_region_from_a_shared_profile(no_aws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (no_aws / "credentials").write_text(f"[work]\naws_access_key_id = AKIDFROMPROFILE00000\n"
                                        f"aws_secret_access_key = {SECRET}\n")
    (no_aws / "config").write_text("[profile work]\nregion = us-west-2\n")
    monkeypatch.setenv("AWS_PROFILE", "work")
    request = await one_call()
    assert "Credential=AKIDFROMPROFILE00000/" in request.headers["authorization"]
    assert request.url.host == "bedrock-runtime.us-west-2.amazonaws.com"
    assert "x-amz-security-token" not in request.headers
    assert request.headers["authorization"].endswith(expected_signature(request, SECRET, "us-west-2"))


async def test_no_credentials_anywhere_is_an_account_error_before_sending(no_aws: Path) -> None:
    seen = Seen()
    async with httpx.AsyncClient(transport=httpx.MockTransport(seen)) as http:
        p = BedrockProvider("amazon.nova-micro-v1:0", region="us-east-1", http_client=http)
        with pytest.raises(ProviderError) as caught:
            await p.complete(LLMRequest([Message.user("hi")]))
    assert caught.value.kind is ErrorKind.account
    assert seen.requests == []


def test_no_region_anywhere_is_refused(no_aws: Path) -> None:
    with pytest.raises(ValueError, match="region"):
        BedrockProvider("amazon.nova-micro-v1:0")
    assert BedrockProvider(base_url="https://bedrock-runtime.sa-east-1.amazonaws.com").region == "sa-east-1"


def test_half_a_key_pair_is_refused_without_showing_it() -> None:
    with pytest.raises(ValueError) as caught:
        BedrockProvider(region="us-east-1", secret_access_key=SECRET)
    assert SECRET not in str(caught.value)


def test_repr_shows_no_credential() -> None:
    p = BedrockProvider("m", region="us-east-1", access_key_id=KEY_ID, secret_access_key=SECRET, session_token=TOKEN)
    assert SECRET not in repr(p) and TOKEN not in repr(p)
    assert "credentials='explicit'" in repr(p)


@pytest.mark.parametrize(
    ("model", "caps"),
    [
        ("us.anthropic.claude-sonnet-4-5-20250929-v1:0",
         Capabilities(forced_tool_choice=True, response_format=True, thinking=True, media={"image", "document"})),
        ("anthropic.claude-3-5-haiku-20241022-v1:0", Capabilities(forced_tool_choice=True, media={"document"})),
        ("us.amazon.nova-micro-v1:0", Capabilities(forced_tool_choice=True)),
        ("amazon.nova-pro-v1:0", Capabilities(forced_tool_choice=True, media={"image", "document"})),
        ("mistral.mistral-large-2407-v1:0", Capabilities(forced_tool_choice=True, media={"document"})),
        ("meta.llama3-1-70b-instruct-v1:0", Capabilities(media={"document"})),
        ("us.deepseek.r1-v1:0", Capabilities(native_tools=False, thinking=True)),
        ("openai.gpt-oss-120b-1:0", Capabilities(thinking=True)),
        ("arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/abc",
         Capabilities(media={"image", "document"})),
    ],
)
def test_capabilities_per_model(model: str, caps: Capabilities) -> None:
    p = BedrockProvider(region="us-east-1", access_key_id=KEY_ID, secret_access_key=SECRET)
    assert p.capabilities(model) == caps
    assert forced_tool_choice_for(p, model) is caps.forced_tool_choice


async def test_forced_choice_is_refused_before_anything_is_sent() -> None:
    seen = Seen()
    async with httpx.AsyncClient(transport=httpx.MockTransport(seen)) as http:
        p = BedrockProvider(region="us-east-1", access_key_id=KEY_ID, secret_access_key=SECRET, http_client=http)
        for model, choice in [("meta.llama3-1-70b-instruct-v1:0", ToolChoice.required()),
                              ("mistral.mistral-large-2407-v1:0", ToolChoice.tool("f"))]:
            request = LLMRequest([Message.user("x")], model=model, tools=[TOOL], tool_choice=choice)
            with pytest.raises(UnsupportedToolChoiceError):
                await p.complete(request)
        claude = "anthropic.claude-3-7-sonnet-20250219-v1:0"
        thinking = LLMRequest([Message.user("x")], model=claude, tools=[TOOL], tool_choice=ToolChoice.required(),
                              thinking_budget=2048)
        with pytest.raises(UnsupportedToolChoiceError):
            p.stream(thinking)
        from agentactors.settings import ModelSettings

        assert p.forced_tool_choice_refusal(claude, ModelSettings(thinking_budget=2048)) is not None
        assert p.forced_tool_choice_refusal(claude, None) is None
    assert seen.requests == []


async def test_a_streamed_request_asks_for_the_event_stream() -> None:
    seen: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json=OK)  # a server that answered in one body: decoded whole

    async with httpx.AsyncClient(transport=httpx.MockTransport(answer)) as http:
        p = BedrockProvider("amazon.nova-pro-v1:0", region="us-east-1", access_key_id=KEY_ID,
                            secret_access_key=SECRET, http_client=http)
        async with p.stream(LLMRequest([Message.user("x")])) as events:
            got = [e async for e in events]
    assert seen[0].url.path.endswith("/converse-stream")
    assert seen[0].headers["accept"] == "application/vnd.amazon.eventstream"
    assert json.loads(seen[0].content)["messages"] == [{"role": "user", "content": [{"text": "x"}]}]
    assert isinstance(got[-1], StreamEnd) and got[-1].response.content == "ok"
