"""Actors: the runtime (spawn, tell/ask, supervision) and the provider actor."""

from __future__ import annotations

from .provider import Complete, ProviderActor, ProviderStream, Stream, estimate_tokens
from .runtime import Actor, ActorRef, FailurePolicy, Runtime, RuntimeStats

__all__ = [
    "Actor",
    "ActorRef",
    "Complete",
    "FailurePolicy",
    "ProviderActor",
    "ProviderStream",
    "Runtime",
    "RuntimeStats",
    "Stream",
    "estimate_tokens",
]
