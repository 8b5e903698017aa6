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
            f"AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20240101/us-east-1/bedrock/aws4_request, "
            f"SignedHeaders=host;x-amz-date, Signature={SIGNATURE}",
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20240101/us-east-1/bedrock/aws4_request, "
            "SignedHeaders=host;x-amz-date, Signature=[REDACTED]",
        ),
    ],
)
def test_aws_credentials_are_masked_whole(text: str, expected: str) -> None:
    """Their values hold '/', '+' and '=': a mask that stopped at the first '/' leaked the rest."""
    assert redact(text) == expected


@pytest.mark.parametrize("text", ["monkey business", "the token is valid", "signature: short", "keys=1"])
def test_ordinary_words_are_left_alone(text: str) -> None:
    assert redact(text) == text
