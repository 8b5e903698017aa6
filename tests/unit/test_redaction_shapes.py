"""Credentials nobody registered, masked by their shape: the AWS ones whole, ordinary words left alone."""

from __future__ import annotations

import pytest

from agentactors.redaction import redact

SECRET_KEY = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"  # AWS's documented example: '/' inside
SESSION_TOKEN = "IQoJb3JpZ2luX2VjEJr//////////wEaCXVzLWVhc3QtMSJHMEUCIQD+abc/def=="  # base64: '/', '+', '='
SIGNATURE = "0123456789abcdef" * 4  # SigV4: 64 hex digits


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (f"aws_secret_access_key={SECRET_KEY}", "aws_secret_access_key=[REDACTED]"),
        (f'{{"SecretAccessKey": "{SECRET_KEY}"}}', '{"SecretAccessKey": "[REDACTED]"}'),
        (f"X-Amz-Security-Token={SESSION_TOKEN}&X-Amz-Date=2024", "X-Amz-Security-Token=[REDACTED]&X-Amz-Date=2024"),
        (f"x-amz-security-token: {SESSION_TOKEN}", "x-amz-security-token: [REDACTED]"),
        (f"AWS_SESSION_TOKEN={SESSION_TOKEN}", "AWS_SESSION_TOKEN=[REDACTED]"),
        (f"?X-Amz-Signature={SIGNATURE}", "?X-Amz-Signature=[REDACTED]"),
        (
            f"AWS4-HMAC-SHA256 Credential=AKIDSHAPESONLY0000000/20240101/us-east-1/bedrock/aws4_request, "
            f"SignedHeaders=host;x-amz-date, Signature={SIGNATURE}",
            "AWS4-HMAC-SHA256 Credential=AKIDSHAPESONLY0000000/20240101/us-east-1/bedrock/aws4_request, "
            "SignedHeaders=host;x-amz-date, Signature=[REDACTED]",
        ),
    ],
)
def test_aws_credentials_are_masked_whole(text: str, expected: str) -> None:
    """Their values hold '/', '+' and '=': a mask that stopped at the first '/' leaked the rest.

    (The access key id is one no other test gives a provider: a provider registers its key id as a secret, for
    the process, and a test run before this one in the same worker masked ``AKIDEXAMPLE`` here too.)"""
    assert redact(text) == expected


@pytest.mark.parametrize("text", ["monkey business", "the token is valid", "signature: short", "keys=1"])
def test_ordinary_words_are_left_alone(text: str) -> None:
    assert redact(text) == text


# A SigV4 signature named in the other spellings a text gives it: percent-encoded inside another URL's query (a
# proxy's or a vendor's message quoting the presigned URL it was given), a query split into pairs (the repr of
# ``parse_qsl`` / ``QueryParams.multi_items()`` / h11's header list, str or bytes), JSON inside a JSON string,
# and S3's ``SignatureProvided`` (an error response's field).
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            f"url=https%3A%2F%2Fb.s3.amazonaws.com%2Fk%3FX-Amz-Signature%3D{SIGNATURE}",
            "url=https%3A%2F%2Fb.s3.amazonaws.com%2Fk%3FX-Amz-Signature%3D[REDACTED]",
        ),
        (f"[('X-Amz-Date', '2024'), ('X-Amz-Signature', '{SIGNATURE}')]",
         "[('X-Amz-Date', '2024'), ('X-Amz-Signature', '[REDACTED]')]"),
        (f"[(b'x-amz-security-token', b'{SESSION_TOKEN}')]", "[(b'x-amz-security-token', b'[REDACTED]')]"),
        (f"{{b'x-api-key': b'{SECRET_KEY}'}}", "{b'x-api-key': b'[REDACTED]'}"),
        (
            f'{{"message": "{{\\"signature\\": \\"{SIGNATURE}\\"}}"}}',
            '{"message": "{\\"signature\\": \\"[REDACTED]\\"}"}',
        ),
        (f"{{'SignatureProvided': '{SIGNATURE}'}}", "{'SignatureProvided': '[REDACTED]'}"),
        (f"<SignatureProvided>{SIGNATURE}</SignatureProvided>", "<SignatureProvided>[REDACTED]</SignatureProvided>"),
    ],
)
def test_a_named_signature_is_masked_in_every_spelling(text: str, expected: str) -> None:
    assert redact(text) == expected


# A bare 64-hex string is NOT masked: it is far more often a content hash (x-amz-content-sha256, a file's digest, a
# commit) than a signature, and masking every one would corrupt those texts.  Where our code makes a bare signature
# (botocore's "Signature:" debug line), that line is masked where it is made: see tests/unit/test_secrets_sigv4.py.
@pytest.mark.parametrize(
    "text",
    [f"x-amz-content-sha256: {SIGNATURE}", f"sha256:{SIGNATURE}", f"digest {SIGNATURE} matches", SIGNATURE],
)
def test_a_bare_hash_is_left_alone(text: str) -> None:
    assert redact(text) == text


# Database credentials: a URL's user info, libpq's ``password=`` keyword (quoted or not), ``PGPASSWORD``, JSON.
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("postgresql://alice:s3cr3t-Passw0rd@db.example:5432/app", "postgresql://alice:[REDACTED]@db.example:5432/app"),
        ("connect to postgres://bob:p%40ss@db/app failed", "connect to postgres://bob:[REDACTED]@db/app failed"),
        ("https://user:hunter22@proxy.example/", "https://user:[REDACTED]@proxy.example/"),
        ("host=db user=alice password=s3cr3tPw dbname=app", "host=db user=alice password=[REDACTED] dbname=app"),
        ("host=db password='s3cr3t Pw0rd' dbname=app", "host=db password='[REDACTED]' dbname=app"),
        ("PGPASSWORD=s3cr3tPw0rd psql", "PGPASSWORD=[REDACTED] psql"),
        ('{"password": "s3cr3t!Pw#rd"}', '{"password": "[REDACTED]"}'),
        ("client_secret=abcdefghijklmnopqrstuv&x=1", "client_secret=[REDACTED]&x=1"),
    ],
)
def test_database_and_other_passwords_are_masked(text: str, expected: str) -> None:
    assert redact(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "postgresql://alice@db.example/app",  # no password: nothing to mask
        "https://db.example:5432/app",  # a port is not a password
        "the password is wrong",
        "password: short",  # (fewer than 6 characters after the name are not taken for one)
        "see https://example.com/a:b@c",  # '/' before '@': a path, not user info
    ],
)
def test_what_holds_no_password_is_left_alone(text: str) -> None:
    assert redact(text) == text


# HTTP Basic credentials: httpx makes ``Authorization: Basic <base64 of user:password>`` of a URL's user info (or of
# a client's ``auth=``); a vendor that echoes the request head put it in a ProviderError, events, JSONL and logs.
BASIC = "YWxpY2U6cHdTRUNSRVR1c2VyaW5mbzlmOGU3ZA=="  # base64 of "alice:pwSECRETuserinfo9f8e7d"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (f"Authorization: Basic {BASIC}\r\nAccept: */*", "Authorization: Basic [REDACTED]\r\nAccept: */*"),
        (f"authorization: basic {BASIC}", "authorization: Basic [REDACTED]"),
        (f"[(b'authorization', b'Basic {BASIC}')]", "[(b'authorization', b'Basic [REDACTED]')]"),
        ('{"Authorization": "Basic dXNlcjpwYXNzd29yZA"}', '{"Authorization": "Basic [REDACTED]"}'),  # unpadded
        ("BASIC dXNlcm5hbWU6c2VjcmV0cGFzcw==;", "Basic [REDACTED];"),
    ],
)
def test_a_basic_credential_is_masked(text: str, expected: str) -> None:
    assert redact(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "basic information about the model",
        "Basic Information",
        "a basic internationalization setup",  # 20 letters after "basic": a word, not base64
        "Basic Authentication is not supported",
        "basic realm=api",
        'WWW-Authenticate: Basic realm="vendor"',
        "Basic abc=",  # too short to be a credential
    ],
)
def test_the_word_basic_is_left_alone(text: str) -> None:
    assert redact(text) == text
