"""What every resilience decorator shares: delegation of the provider port, and error normalisation.

A decorator *is* an :class:`~agentactors.providers.port.LLMProvider`: it
reports its inner provider's name, default model and capabilities, and closes
it on :meth:`aclose`.  Only :meth:`complete` and :meth:`stream` differ.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any

import anyio

from ..errors import ProviderError
from ..messages import LLMRequest, LLMResponse, ResponseFormat
from ..providers.errors import classify_exception
from ..providers.port import (
    LLMProvider,
    StreamContext,
    default_model_of,
    forced_tool_choice_carried_by,
    forced_tool_choice_for,
    forced_tool_choice_refusal,
    name_of,
    native_tools_for,
    response_format_for,
    response_format_refusal,
)
from ..settings import ModelSettings

__all__ = ["Clock", "ProviderDecorator", "as_provider_error", "model_of", "name_of"]

Clock = Callable[[], float]


def model_of(provider: object, request: LLMRequest) -> str | None:
    """The model a call goes to (``request.model`` or the default), without raising when neither is set."""
    return request.model or default_model_of(provider)


def as_provider_error(exc: Exception, provider: object, model: str | None) -> ProviderError:
    """``exc`` in the taxonomy: a :class:`ProviderError` as is, anything else classified.

    Unknown exceptions become request faults (never retried, moved or counted),
    transport errors transient; see :func:`agentactors.classify_exception`.
    Cancellation never reaches this function: every caller catches ``Exception`` only.
    """
    return classify_exception(exc, provider=name_of(provider), model=model)


def default_clock() -> float:
    """anyio's clock (virtual under a mock clock)."""
    return anyio.current_time()


class ProviderDecorator:
    """Base of the decorators: delegates the provider port to ``inner``.

    Identity and capabilities are forwarded through the readers of
    :mod:`agentactors.providers.port` (:func:`~agentactors.providers.port.native_tools_for`,
    :func:`~agentactors.providers.port.forced_tool_choice_for`, ...), so a decorated
    provider carries exactly what the provider it wraps carries, with the same defaults
    for one that does not say.  ``supports_streaming`` is the exception: it is always
    ``True``, because a decorator's ``stream()`` adapts an inner provider that cannot
    stream and applies its own stream policy to the adapted stream.
    """

    def __init__(self, inner: LLMProvider | Any) -> None:
        if not callable(getattr(inner, "complete", None)):
            raise TypeError(f"expected an LLMProvider (with complete() and stream()), got {type(inner).__name__}")
        self._inner = inner

    @property
    def inner(self) -> LLMProvider:
        """The provider this decorator wraps."""
        inner: LLMProvider = self._inner
        return inner

    @property
    def name(self) -> str:
        """The inner provider's name."""
        return name_of(self._inner)

    @property
    def default_model(self) -> str | None:
        """The inner provider's default model."""
        return default_model_of(self._inner)

    @property
    def carries_tools(self) -> bool:
        """Whether the inner provider calls tools natively (:func:`~agentactors.providers.port.native_tools_for`)."""
        return native_tools_for(self._inner)

    @property
    def carries_forced_tool_choice(self) -> bool:
        """The inner provider's answer, through :func:`~agentactors.providers.port.forced_tool_choice_carried_by`."""
        return forced_tool_choice_carried_by(self._inner)

    def supports_forced_tool_choice(self, model: str | None) -> bool:
        """The inner provider's answer, through :func:`~agentactors.providers.port.forced_tool_choice_for`."""
        return forced_tool_choice_for(self._inner, model)

    def supports_response_format(self, model: str | None) -> bool:
        """The inner provider's answer, through :func:`~agentactors.providers.port.response_format_for`."""
        return response_format_for(self._inner, model)

    def response_format_refusal(
        self, fmt: ResponseFormat, model: str | None, *, tools: bool = False, members: Collection[str] | None = None
    ) -> str | None:
        """The inner provider's answer, through :func:`~agentactors.providers.port.response_format_refusal`."""
        return response_format_refusal(self._inner, model, fmt, tools=tools, members=members)

    def forced_tool_choice_refusal(self, model: str | None, settings: ModelSettings | None) -> str | None:
        """The inner provider's answer, through :func:`~agentactors.providers.port.forced_tool_choice_refusal`."""
        return forced_tool_choice_refusal(self._inner, model, settings)

    @property
    def supports_streaming(self) -> bool:
        """Always ``True``: :meth:`stream` adapts an inner provider that cannot stream (see the class)."""
        return True

    async def complete(self, request: LLMRequest) -> LLMResponse:  # pragma: no cover - overridden
        raise NotImplementedError

    def stream(self, request: LLMRequest) -> StreamContext:  # pragma: no cover - overridden
        raise NotImplementedError

    async def aclose(self) -> None:
        """Close the inner provider."""
        await self._inner.aclose()

    async def __aenter__(self) -> ProviderDecorator:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._inner!r})"
