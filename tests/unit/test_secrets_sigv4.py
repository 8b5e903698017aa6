"""A SigV4 signature where it is bare — no ``Signature=`` before it — never reaches a log record.

:func:`~agentactors.redaction.redact` masks a signature by its name only (a bare 64-hex string is far more often a
content hash: ``x-amz-content-sha256``, a digest), so the place the library makes a bare one shown must mask it
itself: botocore's ``botocore.auth`` logs, at DEBUG, the canonical request, the string to sign and the signature
(``"Signature:\\n<hex>"``) for every request it signs.  Checked here for what the Bedrock signer does, with every
logger at DEBUG: the signature, the secret key and the session token appear in no record, formatted or raw.
"""

from __future__ import annotations

import logging
import re

import pytest

from agentactors.providers.bedrock.sigv4 import SigV4Signer
from agentactors.redaction import redact

pytestmark = pytest.mark.anyio

ACCESS_KEY = "AKIDSIGV4CANARY0001"
SECRET_KEY = "sigv4canary/SECRET+key/0123456789abcdefXYZ"
SESSION_TOKEN = "sigv4canary-session-token//0123456789+abcdefXYZ=="


async def test_botocore_debug_lines_show_no_bare_signature(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    for name in ("botocore", "botocore.auth", "botocore.credentials", "botocore.hooks"):
        logging.getLogger(name).setLevel(logging.DEBUG)
    signer = SigV4Signer(
        "us-east-1", access_key_id=ACCESS_KEY, secret_access_key=SECRET_KEY, session_token=SESSION_TOKEN
    )
    url = "https://bedrock-runtime.us-east-1.amazonaws.com/model/m/converse"
    headers = await signer.sign(url, {"content-type": "application/json"}, b'{"messages": []}', "m")
    found = re.search(r"Signature=([0-9a-f]{64})", headers["authorization"])
    assert found is not None
    signature = found.group(1)
    assert any(r.name == "botocore.auth" for r in caplog.records), "botocore logs its signing at DEBUG"
    shown = [text for r in caplog.records for text in (r.getMessage(), caplog.handler.format(r))]
    secrets = (signature, SECRET_KEY, SESSION_TOKEN, ACCESS_KEY)
    assert not [text for text in shown if any(s in text for s in secrets)]
    # The header itself, wherever a text quotes it, is masked by its name.
    assert signature not in redact(f"Authorization: {headers['authorization']}")
    assert signature not in redact(repr([(b"authorization", headers["authorization"].encode())]))
