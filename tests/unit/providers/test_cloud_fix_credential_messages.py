"""A credential failure names what to fix — which variable is missing, which profile, which file and what is wrong
with it — from structured, known-safe facts (botocore's exception fields, checks of the credential file made
here), never from a library's free text: a distinctive private key, secret key or token given to them shows up
in no message, repr or traceback.  The error's kind (account or transient) is as before."""

from __future__ import annotations

import importlib
import json
import re
import traceback
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentactors import BedrockProvider
from agentactors.errors import ErrorKind, ProviderError
from agentactors.messages import LLMRequest, Message
from agentactors.providers.anthropic.provider import AnthropicProvider
from agentactors.providers.gemini.provider import GeminiProvider
from agentactors.providers.http.bearer import credential_failure

pytestmark = pytest.mark.anyio

SECRET = "cloudFixLEAK/Secret+Key/0000000000000000000001"
KEY_ID = "AKIACLOUDFIXLEAK0001"
PEM_BODY = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQCLOUDFIXLEAKPRIVATEKEY"
PRIVATE_KEY = f"-----BEGIN PRIVATE KEY-----\n{PEM_BODY}\n-----END PRIVATE KEY-----\n"
SERVICE_ACCOUNT = {"type": "service_account", "project_id": "p", "private_key_id": "abc123",
                   "private_key": PRIVATE_KEY, "client_email": "sa@p.iam.gserviceaccount.com",
                   "client_id": "1234567890", "token_uri": "http://127.0.0.1:1/token"}
AWS_VARS = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN",
            "AWS_CREDENTIAL_EXPIRATION", "AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_REGION", "AWS_DEFAULT_REGION",
            "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI",
            "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN")


def chain_text(exc: BaseException) -> str:
    return "".join(traceback.format_exception(exc)) + repr(exc)


def assert_no_leak(err: ProviderError) -> None:
    text = chain_text(err)
    for secret in (SECRET, KEY_ID, PEM_BODY, PEM_BODY[:24]):
        assert secret not in text, secret
    assert err.__cause__ is None and err.__context__ is None


def ask() -> LLMRequest:
    return LLMRequest([Message.user("hi")])


class Vendor:
    """A mock transport that records requests (none should come)."""

    def __init__(self) -> None:
        self.requests: list[httpx.Request] = []

    def client(self) -> httpx.AsyncClient:
        def handle(request: httpx.Request) -> httpx.Response:
            self.requests.append(request)
            return httpx.Response(500)

        return httpx.AsyncClient(transport=httpx.MockTransport(handle))


# --- botocore: the fields its exceptions carry -------------------------------------------------------------------


def botocore_exceptions() -> Any:
    return importlib.import_module("botocore.exceptions")  # untyped


def aws_failure(exc: BaseException) -> ProviderError:
    return credential_failure(exc, "AWS credentials could not be resolved", provider="bedrock", model="m")


def test_partial_credentials_name_the_missing_variable_and_where_the_rest_came_from() -> None:
    err = aws_failure(botocore_exceptions().PartialCredentialsError(provider="env", cred_var="AWS_SECRET_ACCESS_KEY"))
    assert "AWS_SECRET_ACCESS_KEY" in str(err) and "env" in str(err)
    assert "PartialCredentialsError" in str(err)
    assert (err.kind, err.retryable) == (ErrorKind.account, False)


def test_a_missing_profile_is_named() -> None:
    err = aws_failure(botocore_exceptions().ProfileNotFound(profile="staging-admin"))
    assert "'staging-admin'" in str(err) and "ProfileNotFound" in str(err)
    assert (err.kind, err.retryable) == (ErrorKind.account, False)


def test_free_text_fields_of_botocore_are_left_out_and_the_kind_is_kept() -> None:
    exceptions = botocore_exceptions()
    retrieval = aws_failure(exceptions.CredentialRetrievalError(provider="container-role",
                                                                error_msg=f"bad answer {SECRET}"))
    assert "container-role" in str(retrieval)
    assert (retrieval.kind, retrieval.retryable) == (ErrorKind.transient, True)
    assert_no_leak(retrieval)
    sso = aws_failure(exceptions.SSOTokenLoadError(error_msg=f"token {SECRET}"))
    assert "aws sso login" in str(sso) and (sso.kind, sso.retryable) == (ErrorKind.account, False)
    assert_no_leak(sso)
    invalid = aws_failure(exceptions.InvalidConfigError(error_msg=f"bad {SECRET}"))
    assert_no_leak(invalid)
    assert "InvalidConfigError" in str(invalid)


@pytest.mark.parametrize("profile", [f"p {SECRET}", "x" * 500, "a\nb"])
def test_a_field_not_shaped_like_a_name_is_not_shown(profile: str) -> None:
    err = aws_failure(botocore_exceptions().ProfileNotFound(profile=profile))
    assert profile not in str(err) and "ProfileNotFound" in str(err)
    assert_no_leak(err)


def test_a_config_file_that_does_not_parse_is_named_by_its_path() -> None:
    err = aws_failure(botocore_exceptions().ConfigParseError(path="/home/u/.aws/config"))
    assert "/home/u/.aws/config" in str(err)


@pytest.fixture
def no_aws(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    for var in AWS_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    return tmp_path


async def test_bedrock_names_the_missing_secret_variable(no_aws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", KEY_ID)
    vendor = Vendor()
    async with vendor.client() as http:
        with pytest.raises(ProviderError) as caught:
            await BedrockProvider("amazon.nova-micro-v1:0", region="us-east-1", http_client=http).complete(ask())
    err = caught.value
    assert "AWS_SECRET_ACCESS_KEY" in str(err)
    assert (err.kind, err.retryable) == (ErrorKind.account, False)
    assert_no_leak(err)
    assert vendor.requests == []


async def test_bedrock_names_the_profile_not_found(no_aws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_PROFILE", "nope-profile")
    vendor = Vendor()
    async with vendor.client() as http:
        with pytest.raises(ProviderError) as caught:
            await BedrockProvider("amazon.nova-micro-v1:0", region="us-east-1", http_client=http).complete(ask())
    assert "'nope-profile'" in str(caught.value)
    assert (caught.value.kind, caught.value.retryable) == (ErrorKind.account, False)


# --- google-auth: what is wrong with the credential file ---------------------------------------------------------


@pytest.fixture
def no_google(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    for var in ("GOOGLE_APPLICATION_CREDENTIALS", "GOOGLE_CLOUD_PROJECT", "GCLOUD_PROJECT"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(tmp_path / "gcloud"))
    monkeypatch.setenv("GCE_METADATA_HOST", "127.0.0.1:1")
    monkeypatch.setenv("GCE_METADATA_IP", "127.0.0.1:1")
    # google-auth asks the metadata server three times, backing off, before it gives up (~3 s); its switch for
    # skipping that is read once, at its import (NO_GCE_CHECK), so it is set on the module here.
    monkeypatch.setattr(importlib.import_module("google.auth.compute_engine._metadata"), "_NO_GCE_CHECK", True)
    return tmp_path


def write(path: Path, content: Any) -> Path:
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    return path


def file_cases(tmp: Path) -> dict[str, tuple[str, str]]:
    """case → (the GOOGLE_APPLICATION_CREDENTIALS value, what the message must say)."""
    (tmp / "a-directory").mkdir()
    return {
        "missing": (str(tmp / "nope.json"), "does not exist"),
        "directory": (str(tmp / "a-directory"), "is a directory"),
        "not json": (str(write(tmp / "garbage.json", f"{{not json {SECRET}")), "is not JSON"),
        "not an object": (str(write(tmp / "list.json", [SECRET])), "not a JSON object"),
        "no type": (str(write(tmp / "notype.json", {"private_key": PRIVATE_KEY})), 'no "type"'),
        "unknown type": (str(write(tmp / "odd.json", {"type": "martian_account", "private_key": PRIVATE_KEY})),
                         "'martian_account'"),
        "missing fields": (str(write(tmp / "fields.json", {"type": "service_account", "private_key": PRIVATE_KEY})),
                           "client_email"),
        "bad private key": (str(write(tmp / "badkey.json", SERVICE_ACCOUNT)), "private_key"),
    }


CASES = ["missing", "directory", "not json", "not an object", "no type", "unknown type", "missing fields",
         "bad private key"]


@pytest.mark.parametrize("wire", ["gemini", "anthropic"])
@pytest.mark.parametrize("case", CASES)
async def test_a_broken_credential_file_is_named_with_what_is_wrong(
    no_google: Path, monkeypatch: pytest.MonkeyPatch, case: str, wire: str
) -> None:
    path, expected = file_cases(no_google)[case]
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", path)
    vendor = Vendor()
    async with vendor.client() as http:
        p = (GeminiProvider.vertex("gemini-2.5-flash", project="p", http_client=http) if wire == "gemini" else
             AnthropicProvider.vertex("claude-sonnet-4-5@20250929", project="p", http_client=http))
        with pytest.raises(ProviderError) as caught:
            await p.complete(ask())
    err = caught.value
    assert expected in str(err), str(err)
    assert "GOOGLE_APPLICATION_CREDENTIALS" in str(err)
    # The type google-auth raised, as before (DefaultCredentialsError; IsADirectoryError and AttributeError pass
    # through it as they are), then what is wrong.
    assert re.search(r"google default credentials \((DefaultCredentialsError|IsADirectoryError|AttributeError)\): ",
                     str(err)), str(err)
    assert (err.kind, err.retryable) == (ErrorKind.account, False)
    assert_no_leak(err)
    assert vendor.requests == []


async def test_the_cases_each_say_something_different(no_google: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen = set()
    for path, _ in file_cases(no_google).values():
        monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", path)
        async with Vendor().client() as http:
            with pytest.raises(ProviderError) as caught:
                await GeminiProvider.vertex("gemini-2.5-flash", project="p", http_client=http).complete(ask())
        seen.add(str(caught.value).replace(path, "<path>"))
    assert len(seen) == len(CASES)


async def test_no_default_credentials_at_all_says_where_it_looked(no_google: Path) -> None:
    async with Vendor().client() as http:
        with pytest.raises(ProviderError) as caught:
            await GeminiProvider.vertex("gemini-2.5-flash", project="p", http_client=http).complete(ask())
    message = str(caught.value)
    assert "GOOGLE_APPLICATION_CREDENTIALS is not set" in message
    assert "gcloud auth application-default login" in message
    assert (caught.value.kind, caught.value.retryable) == (ErrorKind.account, False)


def test_an_oauth_error_code_is_named_but_not_its_description() -> None:
    exceptions: Any = importlib.import_module("google.auth.exceptions")
    refused = exceptions.RefreshError(f"invalid_grant: {SECRET}",
                                      {"error": "invalid_grant", "error_description": SECRET})
    err = credential_failure(refused, "no bearer token", provider="gemini", model="m")
    assert "invalid_grant" in str(err) and "RefreshError" in str(err)
    assert (err.kind, err.retryable) == (ErrorKind.account, False)
    assert_no_leak(err)
    odd = exceptions.RefreshError("x", {"error": SECRET})
    assert_no_leak(credential_failure(odd, "no bearer token", provider="gemini", model="m"))


def test_a_token_providers_own_exception_shows_its_type_only() -> None:
    err = credential_failure(RuntimeError(f"token service said {SECRET}"), "the token provider failed",
                             provider="azure-openai", model="m")
    assert str(err).endswith("the token provider failed (RuntimeError)")
    assert_no_leak(err)
