"""``ProviderDecorator``: the public base of a provider that wraps one provider, and what decorators share.

A decorator *is* an :class:`~agentactors.providers.port.LLMProvider`: it reports its inner provider's
name, default model and capabilities, and closes it on :meth:`~ProviderDecorator.aclose`.  Only
``complete`` and ``stream`` differ.  What a model can do is one value
(:class:`~agentactors.providers.port.Capabilities`), so the base forwards one method for it,
``capabilities(model)``; the two questions that take more than a model (a response format's schema, the
run's settings) are forwarded too, and the members of the first protocol come from the value.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any

import anyio
import attrs

from ..errors import ProviderError
from ..messages import LLMRequest, LLMResponse, ResponseFormat
from ..providers.errors import classify_exception
from ..providers.port import (
    Capabilities,
    CapabilityMembersMixin,
    LLMProvider,
    StreamContext,
    capabilities_of,
    default_model_of,
    forced_tool_choice_refusal,
    name_of,
    response_format_refusal,
)
from ..settings import ModelSettings
from ._checks import check_provider

__all__ = ["Clock", "ProviderDecorator", "as_provider_error", "model_of", "name_of", "streaming_adapted"]

Clock = Callable[[], float]


def model_of(provider: object, request: LLMRequest) -> str | None:
    """The model a call goes to (``request.model`` or the default), without raising when neither is set."""
    return request.model or default_model_of(provider)


def as_provider_error(exc: Exception, provider: object, model: str | None) -> ProviderError:
    """``exc`` in the taxonomy: a :class:`ProviderError` as is, anything else classified.

    Unknown exceptions become request faults (never retried, moved or counted),
    transport errors transient; see :func:`agentactors.classify_exception`.
    Cancellation never reaches this function: every caller catches ``Exception`` only.

    An ``ExceptionGroup`` holding a single failure (however deeply nested) is that failure, and a group of
    several a request fault: :func:`~agentactors.providers.errors.classify_exception` decides, so code that
    classifies without a decorator (the loop, a custom adapter) agrees with the decorators.
    """
    return classify_exception(exc, provider=name_of(provider), model=model)


def default_clock() -> float:
    """anyio's clock (virtual under a mock clock)."""
    return anyio.current_time()


def streaming_adapted(caps: Capabilities) -> Capabilities:
    """``caps`` with streaming: a wrapper's ``stream()`` adapts a member that cannot stream (see :mod:`.streams`)."""
    return caps if caps.streaming else attrs.evolve(caps, streaming=True)


class ProviderDecorator(CapabilityMembersMixin):
    """The base of a provider that wraps one provider, ``inner``, and changes how it is called.

    Subclass it and write ``complete`` and ``stream``; everything else is the inner provider's:

    * identity: :attr:`name` and :attr:`default_model`;
    * :meth:`capabilities`: the inner provider's value (read through
      :func:`~agentactors.providers.port.capabilities_of`, so an inner provider of the first protocol
      is read with the same defaults as everywhere), with ``streaming`` always yes: a decorator's
      ``stream()`` adapts an inner provider that cannot stream (with
      :func:`~agentactors.resilience.streams.stream_of`) and applies its own stream policy to the
      adapted stream;
    * the two reason-giving questions, :meth:`response_format_refusal` and
      :meth:`forced_tool_choice_refusal`, asked of the inner provider through their readers;
    * :meth:`aclose` closes the inner provider; the decorator is an async context manager.

    The members of the first protocol (``carries_tools``, ``supports_forced_tool_choice(model)``, ...)
    are answered from :meth:`capabilities` (:class:`~agentactors.providers.port.CapabilityMembersMixin`).
    :func:`~agentactors.resilience.describe_chain` follows :attr:`inner`.
    """

    def __init__(self, inner: LLMProvider | Any) -> None:
        # A class (its complete is callable too): a TypeError here, not at the first call.
        check_provider(inner)
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

    def capabilities(self, model: str | None) -> Capabilities:
        """The inner provider's value (:func:`~agentactors.providers.port.capabilities_of`), always streaming."""
        return streaming_adapted(capabilities_of(self._inner, model))

    def response_format_refusal(
        self, fmt: ResponseFormat, model: str | None, *, tools: bool = False, members: Collection[str] | None = None
    ) -> str | None:
        """The inner provider's answer, through :func:`~agentactors.providers.port.response_format_refusal`."""
        return response_format_refusal(self._inner, model, fmt, tools=tools, members=members)

    def forced_tool_choice_refusal(self, model: str | None, settings: ModelSettings | None) -> str | None:
        """The inner provider's answer, through :func:`~agentactors.providers.port.forced_tool_choice_refusal`."""
        return forced_tool_choice_refusal(self._inner, model, settings)

    async def complete(self, request: LLMRequest) -> LLMResponse:  # pragma: no cover - overridden
        """The call through this layer: what a subclass writes.

        Cancellation: an override lets anyio's cancellation through unchanged (it catches ``Exception``, never
        ``BaseException``, to decide on a failure), as every decorator of this package does.
        """
        raise NotImplementedError

    def stream(self, request: LLMRequest) -> StreamContext:  # pragma: no cover - overridden
        raise NotImplementedError

    async def aclose(self) -> None:
        """Close the inner provider.

        Cancellation: propagates from the inner provider's ``aclose`` unchanged (nothing is shielded here).
        """
        await self._inner.aclose()

    async def __aenter__(self) -> ProviderDecorator:
        """``async with decorated:`` — the decorator itself.

        Cancellation: not a cancellation point (it awaits nothing).
        """
        return self

    async def __aexit__(self, *exc: object) -> None:
        """Leaving the block closes the inner provider (:meth:`aclose`).

        Cancellation: as :meth:`aclose`: it propagates from the inner provider's close unchanged.
        """
        await self.aclose()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._inner!r})"
