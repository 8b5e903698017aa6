"""BedrockProvider configured as users write it: the region from ``region=``, the endpoint or the environment (the
one the requests are signed for must be the endpoint's), VPC and FIPS endpoints, regions that cannot be, and
model ids behind every inference-profile prefix or ARN judged by their family's row."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from agentactors import BedrockProvider
from agentactors.errors import UnsupportedToolChoiceError
from agentactors.messages import LLMRequest, Message, ToolChoice, ToolSpec
from agentactors.providers.bedrock.models import model_row

KEY_ID, SECRET = "AKIDUNITTEST00000000", "unit/Secret+Key/000000000000000000000000"
OK = {"output": {"message": {"role": "assistant", "content": [{"text": "ok"}]}}, "stopReason": "end_turn",
      "usage": {"inputTokens": 1, "outputTokens": 1}}
VPCE = "https://vpce-0a1b2c3d4e5f-abcdefgh.bedrock-runtime.eu-west-1.vpce.amazonaws.com"


@pytest.fixture
def no_aws(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    for var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_REGION",
                "AWS_DEFAULT_REGION", "AWS_DEFAULT_PROFILE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    return tmp_path


@pytest.mark.parametrize("region", ["us-west-2 ", " us-west-2", "US-WEST-2", "us west 2", "https://bedrock",
                                    "bedrock-runtime.us-east-1.amazonaws.com", "us-east-1.", "us-east"])
def test_a_region_that_cannot_be_is_refused_naming_it(no_aws: Path, region: str) -> None:
    with pytest.raises(ValueError, match="region"):
        BedrockProvider("amazon.nova-micro-v1:0", region=region)


def test_a_region_from_the_environment_that_cannot_be_is_refused_naming_the_variable(
    no_aws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_REGION", "us-east-1a")  # an availability zone
    with pytest.raises(ValueError, match="AWS_REGION"):
        BedrockProvider("amazon.nova-micro-v1:0")


@pytest.mark.parametrize("region", ["us-east-1", "us-gov-west-1", "ap-southeast-2", "eu-central-2", "il-central-1",
                                    "cn-north-1", "us-isob-east-1"])
def test_every_region_form_is_taken(no_aws: Path, region: str) -> None:
    assert BedrockProvider(region=region).base_url == f"https://bedrock-runtime.{region}.amazonaws.com"


def test_a_vpc_endpoint_names_its_region(no_aws: Path) -> None:
    assert BedrockProvider(base_url=VPCE).region == "eu-west-1"


def test_the_endpoints_region_wins_over_the_environments(no_aws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Signed for the environment's region, a request to another region's endpoint is a 403 from AWS.
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    assert BedrockProvider(base_url=VPCE).region == "eu-west-1"
    assert BedrockProvider(base_url="https://bedrock-runtime-fips.us-west-2.amazonaws.com").region == "us-west-2"
    assert BedrockProvider(base_url="http://127.0.0.1:9000").region == "us-east-1"  # a host naming none


def test_a_region_argument_against_the_endpoints_region_is_refused(no_aws: Path) -> None:
    with pytest.raises(ValueError) as caught:
        BedrockProvider(region="us-east-1", base_url=VPCE)
    assert "'eu-west-1'" in str(caught.value) and "'us-east-1'" in str(caught.value)
    assert BedrockProvider(region="eu-west-1", base_url=VPCE).region == "eu-west-1"


def test_the_control_plane_endpoint_is_refused_naming_the_runtime_one(no_aws: Path) -> None:
    with pytest.raises(ValueError) as caught:
        BedrockProvider(base_url="https://bedrock.us-east-1.amazonaws.com")
    assert "https://bedrock-runtime.us-east-1.amazonaws.com" in str(caught.value)


def test_no_region_names_the_profile_it_looked_in(no_aws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_PROFILE", "nosuchprofile")
    with pytest.raises(ValueError) as caught:
        BedrockProvider("amazon.nova-micro-v1:0")
    assert "'nosuchprofile'" in str(caught.value) and "region=" in str(caught.value)


@pytest.mark.anyio
async def test_a_vpc_endpoint_request_is_signed_for_its_region(no_aws: Path) -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json=OK)

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as http:
        p = BedrockProvider("eu.amazon.nova-micro-v1:0", base_url=VPCE, access_key_id=KEY_ID,
                            secret_access_key=SECRET, http_client=http)
        assert (await p.complete(LLMRequest([Message.user("hi")]))).content == "ok"
    (request,) = seen
    assert request.url.host == VPCE.removeprefix("https://")
    assert "/eu-west-1/bedrock/aws4_request" in request.headers["authorization"]


PROFILED = [
    ("us.anthropic.claude-sonnet-4-5-20250929-v1:0", "anthropic.claude-sonnet-4-5-20250929-v1:0"),
    ("global.anthropic.claude-sonnet-4-5-20250929-v1:0", "anthropic.claude-sonnet-4-5-20250929-v1:0"),
    ("eu.amazon.nova-pro-v1:0", "amazon.nova-pro-v1:0"),
    ("apac.amazon.nova-micro-v1:0", "amazon.nova-micro-v1:0"),
    ("us-gov.anthropic.claude-3-5-sonnet-20240620-v1:0", "anthropic.claude-3-5-sonnet-20240620-v1:0"),
    ("arn:aws:bedrock:us-east-1::foundation-model/anthropic.claude-3-haiku-20240307-v1:0",
     "anthropic.claude-3-haiku-20240307-v1:0"),
    ("arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-3-7-sonnet-20250219-v1:0",
     "anthropic.claude-3-7-sonnet-20250219-v1:0"),
    ("arn:aws:bedrock:eu-west-1:123456789012:inference-profile/eu.mistral.pixtral-large-2502-v1:0",
     "mistral.pixtral-large-2502-v1:0"),
]


@pytest.mark.parametrize(("profiled", "bare"), PROFILED)
def test_a_profiled_id_is_judged_by_its_models_row(profiled: str, bare: str) -> None:
    assert model_row(profiled) is model_row(bare) is not None


@pytest.mark.anyio
async def test_a_forced_choice_on_an_application_profile_is_refused_before_sending(no_aws: Path) -> None:
    arn = "arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/a1b2c3d4e5f6"
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json=OK)

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as http:
        p = BedrockProvider(arn, region="us-east-1", access_key_id=KEY_ID, secret_access_key=SECRET, http_client=http)
        tool = ToolSpec("f", "", {"type": "object", "properties": {}})
        with pytest.raises(UnsupportedToolChoiceError):
            await p.complete(LLMRequest([Message.user("hi")], tools=[tool], tool_choice=ToolChoice.required()))
    assert seen == []


@pytest.mark.anyio
@pytest.mark.parametrize("streamed", [False, True])
async def test_throttling_is_transient_and_validation_a_request_fault_through_the_fakevendor(
    no_aws: Path, streamed: bool
) -> None:
    from agentactors.errors import ErrorKind, ProviderError
    from agentactors.testing.fakevendor import FakeError, FakeVendor

    kinds = []
    async with FakeVendor() as fv:
        fv.script(FakeError(429, retry_after=2), FakeError(400), FakeError(400, code="ThrottlingException",
                                                                             message="Too many tokens, please wait"))
        async with BedrockProvider("us.anthropic.claude-sonnet-4-5-20250929-v1:0", region="us-east-1",
                                   access_key_id=KEY_ID, secret_access_key=SECRET, base_url=fv.base_url) as p:
            for _ in range(3):
                with pytest.raises(ProviderError) as caught:
                    if streamed:
                        async with p.stream(LLMRequest([Message.user("hi")])) as events:
                            [e async for e in events]
                    else:
                        await p.complete(LLMRequest([Message.user("hi")]))
                kinds.append((caught.value.kind, caught.value.retryable))
    assert kinds[0] == (ErrorKind.transient, True)
    assert kinds[1] == (ErrorKind.request, False)
    assert kinds[2][0] is not ErrorKind.request  # the error type wins over the status
