"""The OpenAI Responses wire: ``POST {base_url}/responses``.

One module per step, imports going one way (down this list)::

    provider.py    the codec (ResponsesWire) and the provider (thin I/O around it)
    encode.py      the request body: input items, tools, settings, text.format
    stream.py      its stream decoder (the final response decoded by decode.py)
    decode.py      bodies, output items, usage, statuses, errors
    models.py      OpenAI's models as data, as this wire's fields take them

Vendor-hosted tools (web search, file search, code interpreter) are out of scope.
"""

from __future__ import annotations

from .models import WIRE
from .provider import DEFAULT_RESPONSES_BASE_URL, OpenAIResponsesProvider, ResponsesWire, responses_capabilities
from .stream import ResponsesStreamDecoder

__all__ = [
    "DEFAULT_RESPONSES_BASE_URL",
    "WIRE",
    "OpenAIResponsesProvider",
    "ResponsesStreamDecoder",
    "ResponsesWire",
    "responses_capabilities",
]
