"""What a request is estimated to cost before (or instead of) the vendor's count: tokens, and a call cut short.

:func:`estimate_tokens` is the ProviderActor's token budgets' guess before a request is sent (corrected by the
usage the answer reports); :func:`estimated_cut_short` is the charge of a call that was sent and then cut short
by a cancellation — the vendor bills it, and no answer came to say how much (``docs/costs.md``).  Both are used
by the actor (:mod:`.provider`, :mod:`._pulled`) and by ``with_hedge`` for its losing copies.
"""

from __future__ import annotations

import json
import weakref

from ..messages import LLMRequest, ToolSpec
from ..pricing import CutShort
from ..providers.port import default_model_of, name_of

__all__ = ["estimate_tokens", "estimated_cut_short"]


def estimate_tokens(request: LLMRequest, *, max_output: int | None = None) -> int:
    """A conservative token estimate for budgeting: ~4 characters a token, plus ``max_tokens``.

    Media parts count by their own estimate (``estimated_tokens``, :mod:`agentactors.parts`): a flat
    :data:`~agentactors.parts.IMAGE_TOKENS` an image, :data:`~agentactors.parts.PAGE_TOKENS` a PDF page,
    :data:`~agentactors.parts.AUDIO_TOKENS_PER_SECOND` a second of audio.

    ``max_output``: count ``max_tokens`` up to this many.  The ProviderActor passes its token bucket's
    capacity (one minute's budget): ``max_tokens`` is a ceiling the caller chose, not a prediction, and
    counted whole, one ``max_tokens=10**30`` whose response reported no usage (or that failed transiently,
    keeping its charge) put the shared bucket ~6e28 s in debt — every later request refused.  The prompt
    counts whole: it is sent, and the vendor reads it.
    """
    chars = 0
    media = 0
    for message in request.messages:
        chars += len(message.content)
        for call in message.tool_calls:
            chars += len(call.name) + len(call.raw_arguments or call.arguments_json)
        for part in message.media:
            media += part.estimated_tokens
    for spec in request.tools:
        chars += len(spec.name) + len(spec.description) + _schema_chars(spec)
    output = request.max_tokens or 0
    if max_output is not None and output > max_output:
        output = max_output
    return chars // 4 + 1 + media + output


#: ``id(spec)`` -> (a weak reference to the spec, the characters its schema counts): a tool's schema is serialised
#: once, not for every request a token budget estimates (~7 µs a tool of ten parameters, each request).  The
#: reference's callback drops the entry when the spec is collected, before its id can be another's.  A schema
#: changed in place after its first estimate keeps its first size: an estimate, corrected by the usage reported.
_SCHEMA_CHARS: dict[int, tuple[weakref.ref[ToolSpec], int]] = {}


def _schema_chars(spec: ToolSpec) -> int:
    """The length of ``spec.parameters`` as compact JSON, remembered for the spec's life (:data:`_SCHEMA_CHARS`)."""
    key = id(spec)
    held = _SCHEMA_CHARS.get(key)
    if held is not None and held[0]() is spec:
        return held[1]
    chars = len(json.dumps(spec.parameters, separators=(",", ":")))
    try:
        ref = weakref.ref(spec, lambda _, key=key: _SCHEMA_CHARS.pop(key, None))  # type: ignore[misc]
    except TypeError:  # (a spec-like object without weak references: counted each time)
        return chars
    _SCHEMA_CHARS[key] = (ref, chars)
    return chars


def estimated_cut_short(
    provider: object, request: LLMRequest, model: str | None = None, delivered: str = ""
) -> CutShort:
    """The charge of ``request``'s call to ``provider``, sent and then cut short: an estimate (:class:`CutShort`).

    Its prompt as :func:`estimate_tokens` counts it — without ``max_tokens``: a ceiling, not what was generated
    — and the output it had ``delivered`` (a stream's text so far) at ~4 characters a token; priced as
    ``provider``'s (its ``name``) ``model`` (default: ``request.model``, else the provider's default model).
    """
    if model is None:
        model = request.model or default_model_of(provider)
    return CutShort(name_of(provider), model, estimate_tokens(request, max_output=0), (len(delivered) + 3) // 4)
