"""The Gemini stream decoder: ``streamGenerateContent?alt=sse`` events in, stream events and the response out.

Pure, no I/O.  Every SSE event is a whole ``GenerateContentResponse`` chunk, read by the same
:class:`~agentactors.providers.gemini.decode.CandidateAssembly` as a whole body.
"""

from __future__ import annotations

import json

from ...messages import LLMRequest, LLMResponse, StreamEvent
from .decode import CandidateAssembly

__all__ = ["GeminiStreamDecoder"]


class GeminiStreamDecoder:
    """Decodes a ``streamGenerateContent?alt=sse`` stream, one SSE event at a time.

    Every event is a whole ``GenerateContentResponse`` chunk; there is no ``[DONE]``.
    The stream is complete once a chunk carries ``finishReason``; :meth:`finish`
    raises :class:`~agentactors.MalformedResponseError` if none arrived.  An error
    chunk raises the classified error; a blocked prompt a content-policy error.
    """

    def __init__(self, *, request: LLMRequest | None, model: str, provider: str) -> None:
        self._assembly = CandidateAssembly(request, model=model, provider=provider)

    @property
    def done(self) -> bool:
        """Whether a chunk with ``finishReason`` has arrived."""
        return self._assembly.finish is not None

    def feed(self, event: str, data: str) -> list[StreamEvent]:
        """The stream events of one chunk (see :class:`~agentactors.providers.codec.StreamDecoder`)."""
        text = data.strip()
        if not text:
            return []
        try:
            chunk = json.loads(text)
        except (ValueError, RecursionError):
            raise self._assembly.malformed(f"a stream chunk is not JSON ({len(text)} characters)") from None
        return self._assembly.add(chunk)

    def finish(self) -> LLMResponse:
        """The whole response once ``finishReason`` arrived; a transient ``MalformedResponseError`` before."""
        if not self.done:
            raise self._assembly.malformed("the stream ended before a chunk with finishReason (truncated)")
        return self._assembly.response()
