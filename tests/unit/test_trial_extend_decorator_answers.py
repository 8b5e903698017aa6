"""A user's provider whose ``complete()`` answers no ``LLMResponse``, called through one decorator directly.

docs/resilience.md ("Also provided") promises that under every decorator — ``with_retry`` and ``with_timeout``
named among them — a ``complete()`` that answered no ``LLMResponse`` is the member's
:class:`MalformedResponseError`, named after it, transient but not retryable.  Through an ``Agent`` the run's
step named it, but a caller of the decorator itself (the docs' own example: ``await chain.complete(request)``)
was handed the ``None`` or ``str`` as if it were the answer, and failed later on ``response.content`` with an
``AttributeError`` that named nobody.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from agentactors import LLMRequest, LLMResponse, Message
from agentactors.errors import MalformedResponseError
from agentactors.providers.port import StreamContext
from agentactors.resilience import with_retry, with_timeout

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]

REQUEST = LLMRequest([Message.user("hi")])


class Mine:
    """A user's provider answering ``answer`` from ``complete()`` every time."""

    name = "mine"
    default_model = "mine-1"

    def __init__(self, answer: Any) -> None:
        self.answer = answer
        self.calls = 0

    async def complete(self, request: LLMRequest) -> LLMResponse:
        self.calls += 1
        return self.answer  # type: ignore[no-any-return]

    def stream(self, request: LLMRequest) -> StreamContext:
        raise NotImplementedError

    async def aclose(self) -> None:
        pass


WRAPS: dict[str, Callable[[Any], Any]] = {
    "retry": lambda p: with_retry(p, base_delay=0.0),
    "timeout": lambda p: with_timeout(p),
    "timeout(attempt=)": lambda p: with_timeout(p, attempt=30),
}


@pytest.mark.parametrize("wrap", list(WRAPS))
@pytest.mark.parametrize(("answer", "named"), [(None, "NoneType"), ("hello", "str"), ({"content": "x"}, "dict")])
async def test_a_decorator_called_directly_names_a_complete_that_answered_no_llmresponse(
    wrap: str, answer: Any, named: str
) -> None:
    provider = Mine(answer)
    with pytest.raises(MalformedResponseError) as caught:
        await WRAPS[wrap](provider).complete(REQUEST)
    error = caught.value
    assert error.provider == "mine"
    assert error.model == "mine-1"
    assert named in str(error) and "not an LLMResponse" in str(error)
    assert error.retryable is False  # the provider's own code answers the same again
    assert provider.calls == 1


class Sub(LLMResponse):
    pass


@pytest.mark.parametrize("wrap", list(WRAPS))
async def test_an_llmresponse_subclass_is_still_an_answer(wrap: str) -> None:
    answer = Sub(content="sub")
    assert await WRAPS[wrap](Mine(answer)).complete(REQUEST) is answer
