"""The Amazon Bedrock Converse wire: ``POST {base_url}/model/{modelId}/converse`` and ``/converse-stream``.

One module per step, imports going one way (down this list)::

    provider.py     the codec (BedrockWire) and the provider (thin I/O around it, SigV4 per request)
    encode.py       the request body
    sigv4.py        credentials and signing (botocore, the [bedrock] extra)
    eventstream.py  the ConverseStream framing (botocore's event-stream parser)
    stream.py       its stream decoder
    decode.py       bodies, usage, stop reasons, tool calls, errors
    models.py       its models as data: forced tool choice, media, caching, reasoning per family
"""

from __future__ import annotations

from .decode import ERROR_KINDS
from .encode import encode_request
from .eventstream import EventStreamFramer, iter_messages
from .models import MODELS, WIRE, BedrockModel, model_row
from .provider import EVENT_STREAM, BedrockProvider, BedrockWire
from .stream import BedrockStreamDecoder

__all__ = [
    "ERROR_KINDS",
    "EVENT_STREAM",
    "MODELS",
    "WIRE",
    "BedrockModel",
    "BedrockProvider",
    "BedrockStreamDecoder",
    "BedrockWire",
    "EventStreamFramer",
    "encode_request",
    "iter_messages",
    "model_row",
]
