"""Batch-backed runs: many runs' requests sent through the vendor's batch API, at about half the price.

:class:`BatchProvider` collects the requests of the runs that call it, submits them as one batch (OpenAI's
Batch API, Anthropic's Message Batches, Gemini's Batch Mode), polls it, and answers each call with its own
item.  See ``docs/costs.md`` ("Batch").
"""

from __future__ import annotations

from .errors import BatchError, BatchUnsupportedError
from .provider import BatchProvider

__all__ = ["BatchError", "BatchProvider", "BatchUnsupportedError"]
