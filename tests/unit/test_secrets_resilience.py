"""The resilience decorators' stream opening keeps no credential in the error it raises.

``agentactors.resilience.streams.open_stream`` raised ``MalformedResponseError(...) from exc`` when a member's
stream context manager swallowed a failure before the first event — with ``exc``, the foreign exception, as the
cause as it was: not passed through ``scrub_chain`` as every other wrapping of a foreign exception is.  A custom
provider's failure whose text held a credential (a URL's ``?key=``, an echoed header) then rode along as the
cause of the error every traceback prints.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest

from agentactors.errors import MalformedResponseError
from agentactors.redaction import register_secret
from agentactors.resilience.streams import open_stream
from tests.support.chains import leaks

pytestmark = pytest.mark.anyio

CANARY = "canary-OPENSTREAM-5a4b3c2d1e0f"  # not key-shaped: only registration can redact it


@asynccontextmanager
async def _swallowing() -> AsyncIterator[Any]:
    async def events() -> AsyncIterator[Any]:
        raise RuntimeError(f"upstream refused https://proxy.example/v1?token_hint={CANARY}")
        yield  # type: ignore[unreachable]  # (an async generator)

    try:
        yield events()
    except RuntimeError:
        pass  # swallowed: open_stream reports a malformed stream instead


async def test_a_swallowed_failure_kept_as_the_cause_holds_no_credential() -> None:
    register_secret(CANARY)
    with pytest.raises(MalformedResponseError) as caught:
        await open_stream(_swallowing, provider="custom", model=None)
    assert not leaks(caught.value, CANARY)
