"""Bedrock's models as data: what each model family takes through the Converse API.

A Bedrock model id names the vendor and the model (``anthropic.claude-sonnet-4-5-20250929-v1:0``,
``amazon.nova-micro-v1:0``), behind an optional cross-region inference-profile prefix (``us.``, ``eu.``,
``apac.``, ``global.``, ...) or inside an ARN (``arn:aws:bedrock:…:foundation-model/<id>``).  An
application inference profile's ARN names no model: it is an unknown model, given nothing optional.

Sources (the Bedrock user guide, "Supported models and model features" of the Converse API, and the API
reference of ``ToolChoice``):

* ``toolChoice`` ``any`` — Anthropic Claude 3 and later, Amazon Nova, Mistral Large; ``tool`` (a named
  tool) — Claude 3 and later and Nova only.  Every other model takes ``auto`` alone: a forced choice is
  refused before sending (:class:`~agentactors.UnsupportedToolChoiceError`).
* Tool use: none for Titan, Claude 2 and earlier, and DeepSeek-R1 — a request with tools for one of them is
  refused before sending (:class:`~agentactors.UnsupportedSettingError`, setting ``tools``), and the provider
  says ``native_tools=False`` for them (an agent then describes its tools in the prompt).
* Vision and document chat per family (Nova Micro: text only; Claude 3.5 Haiku: no images).
* Prompt caching (``cachePoint``): Claude 3.5 Haiku, 3.7 Sonnet and the Claude 4 family, and Nova.
* Structured output (``outputConfig.textFormat``): the Claude models Anthropic's structured outputs cover
  (4.5 and later).
* Reasoning: Claude's ``thinking`` (through ``additionalModelRequestFields``, planned by the Anthropic
  wire's own tables), ``reasoning_effort`` for OpenAI's gpt-oss, ``reasoning_config`` for Qwen 3.

Limits (Bedrock's ``ImageBlock`` / ``DocumentBlock`` reference): an image at most 3.75 MB, a document at
most 4.5 MB and at least 1 byte (``DocumentSource.bytes``: "min: 1" — an empty text document is a
``ValidationException``); images are PNG, JPEG, GIF or WebP; documents PDF, CSV, DOC(X), XLS(X), HTML, TXT or MD.
"""

from __future__ import annotations

import fnmatch
from typing import Literal

import attrs

from .._media import MediaLimits

__all__ = [
    "DOCUMENT_FORMATS",
    "IMAGE_FORMATS",
    "LIMITS",
    "MODELS",
    "WIRE",
    "BedrockModel",
    "model_id",
    "model_row",
]

WIRE = "bedrock"

Forced = Literal["none", "any", "any_and_tool"]
Reasoning = Literal["none", "anthropic", "reasoning_effort", "reasoning_config", "always"]


@attrs.frozen(slots=True)
class BedrockModel:
    """What one family of Bedrock models takes through Converse.

    :param patterns: ``fnmatch`` patterns of the model id without its inference-profile prefix.
    :param forced: the forced tool choices it takes: ``"none"``, ``"any"`` (``required``) or
        ``"any_and_tool"`` (``required`` and a named tool).
    :param tools: whether it calls tools at all.
    :param vision: / :param documents: whether it takes images / documents.
    :param cache: whether it takes ``cachePoint`` blocks.
    :param response_format: whether it takes ``outputConfig.textFormat`` (a JSON schema).
    :param reasoning: how it is asked to reason: Claude's ``thinking``, a ``reasoning_effort`` or a
        ``reasoning_config`` field, ``"always"`` (it reasons on its own, no setting) or ``"none"``.
    """

    patterns: tuple[str, ...]
    forced: Forced = "none"
    tools: bool = True
    vision: bool = False
    documents: bool = False
    cache: bool = False
    response_format: bool = False
    reasoning: Reasoning = "none"


#: First match wins: narrower patterns first.
MODELS: tuple[BedrockModel, ...] = (
    BedrockModel(("anthropic.claude-v2*", "anthropic.claude-instant*"), tools=False, documents=True),
    BedrockModel(("anthropic.claude-3-haiku*", "anthropic.claude-3-sonnet*", "anthropic.claude-3-opus*",
                  "anthropic.claude-3-5-sonnet*"),
                 forced="any_and_tool", vision=True, documents=True),
    BedrockModel(("anthropic.claude-3-5-haiku*",), forced="any_and_tool", documents=True, cache=True),
    BedrockModel(("anthropic.claude-3-7-sonnet*", "anthropic.claude-sonnet-4-2*", "anthropic.claude-opus-4-2*",
                  "anthropic.claude-opus-4-1*"),
                 forced="any_and_tool", vision=True, documents=True, cache=True, reasoning="anthropic"),
    BedrockModel(("anthropic.claude-*",), forced="any_and_tool", vision=True, documents=True, cache=True,
                 response_format=True, reasoning="anthropic"),
    BedrockModel(("amazon.nova-micro*",), forced="any_and_tool", cache=True),
    BedrockModel(("amazon.nova-*",), forced="any_and_tool", vision=True, documents=True, cache=True),
    BedrockModel(("amazon.titan-*",), tools=False, documents=True),
    BedrockModel(("mistral.mistral-large*",), forced="any", documents=True),
    BedrockModel(("mistral.pixtral-large*",), vision=True, documents=True),
    BedrockModel(("meta.llama3-2-11b*", "meta.llama3-2-90b*", "meta.llama4*"), vision=True, documents=True),
    BedrockModel(("meta.llama*",), documents=True),
    BedrockModel(("openai.gpt-oss*",), reasoning="reasoning_effort"),
    BedrockModel(("qwen.qwen3*",), reasoning="reasoning_config"),
    # DeepSeek-R1 has no tool use through Converse ("Supported models and model features",
    # https://docs.aws.amazon.com/bedrock/latest/userguide/conversation-inference-supported-models-features.html;
    # Converse answers a toolConfig with "This model doesn't support tool use").
    BedrockModel(("deepseek.r1*",), tools=False, reasoning="always"),
    BedrockModel(("moonshot.kimi-k2-thinking*",), reasoning="always"),
)

_PROFILE_PREFIXES = ("us.", "eu.", "apac.", "global.", "us-gov.", "jp.", "au.", "ca.", "ap.")

#: Image media types and their Converse ``format``.
IMAGE_FORMATS = {"image/png": "png", "image/jpeg": "jpeg", "image/gif": "gif", "image/webp": "webp"}
#: Document media types and their Converse ``format``.
DOCUMENT_FORMATS = {
    "application/pdf": "pdf",
    "text/csv": "csv",
    "application/msword": "doc",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "docx",
    "application/vnd.ms-excel": "xls",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": "xlsx",
    "text/html": "html",
    "text/plain": "txt",
    "text/markdown": "md",
}
LIMITS = MediaLimits(image_bytes=3_750_000, document_bytes=4_500_000, empty_documents=False)


def model_id(model: str) -> str:
    """The foundation-model id of ``model``: lower case, without an ARN's resource path or a profile prefix."""
    name = model.strip().lower()
    if name.startswith("arn:"):
        name = name.rsplit("/", 1)[-1]
    for prefix in _PROFILE_PREFIXES:
        if name.startswith(prefix):
            return name[len(prefix):]
    return name


def model_row(model: str | None) -> BedrockModel | None:
    """The row of :data:`MODELS` for ``model`` (``None``: a model these tables do not know)."""
    if not model:
        return None
    name = model_id(model)
    for row in MODELS:
        if any(fnmatch.fnmatchcase(name, pattern) for pattern in row.patterns):
            return row
    return None
