"""What every wire does with a model setting it cannot carry: drop it, said out loud, or refuse the request.

Two answers, one rule (``docs/settings.md``, "Dropped or refused"):

* a setting that only *tunes* generation (``temperature``, ``top_p``, ``seed``, ``parallel_tool_calls``,
  ``reasoning_effort`` on a model that does not reason, cache retention) is **dropped** when the wire or the
  model has no field for it, and the drop is recorded as an ``llm.setting_dropped`` event: the answer comes
  back, generated without the tuning;
* a setting that *constrains* what comes back (``stop``, ``thinking_budget``), a value the model refuses
  (an effort it does not know, a budget out of its range) and two settings that conflict are **refused**
  with :class:`~agentactors.UnsupportedSettingError` (request kind) before anything is sent: dropping them
  would hand back something the caller did not ask for.

``vendor_options`` may set any vendor field but the few a codec owns (:func:`check_owned`): the model, the
conversation and the streaming flag.  Replacing those would send another model than the tables judged, lose
the conversation, or make the decoder read a JSON answer as a stream (a malformed response, retried).

Per-model capability data lives with each wire (``openai/models.py``, ``anthropic/models.py``,
``gemini/models.py``); model names are matched by :func:`match_model`.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol, TypeVar

from ..errors import UnsupportedSettingError
from ..events import emit

__all__ = ["Row", "bare_model", "check_owned", "dropped", "listed", "match_model", "refused"]


class Row(Protocol):
    """A row of a per-model capability table: the model-name patterns it applies to."""

    @property
    def patterns(self) -> tuple[str, ...]: ...


RowT = TypeVar("RowT", bound=Row)


def bare_model(model: str) -> str:
    """The model's own name: lower case, without a router's ``vendor/`` or a cloud's ``anthropic.`` prefix.

    ``openai/gpt-5`` (OpenRouter), ``us.anthropic.claude-opus-4-6-v1`` (Bedrock) and ``models/gemini-2.5-pro``
    (Gemini's resource name) are ``gpt-5``, ``claude-opus-4-6-v1`` and ``gemini-2.5-pro``.
    """
    name = model.strip().lower().rsplit("/", 1)[-1]
    marker = name.find("claude-")
    return name[marker:] if marker > 0 else name


# (id(table), model) -> (table, its row): a provider asks for the same model on every request, and a
# table scan is ~40 fnmatch calls.  The table is kept in the value so its id cannot be reused meanwhile.
_MATCHES: dict[tuple[int, str], tuple[Sequence[Any], Any]] = {}
_MATCHES_SIZE = 1024


def match_model(table: Sequence[RowT], model: str) -> RowT | None:
    """The first row of ``table`` one of whose ``fnmatch`` patterns matches ``model``; ``None``: unknown model.

    An unknown model gets every setting as given (the vendor judges it): the tables know the vendor's own
    models, and a compatible server's models are its own business.  The answer is remembered per table
    and model name (the tables are constants).
    """
    key = (id(table), model)
    hit = _MATCHES.get(key)
    if hit is not None and hit[0] is table:
        found: RowT | None = hit[1]
        return found
    name = bare_model(model)
    found = None
    for row in table:
        if any(fnmatch.fnmatchcase(name, pattern) for pattern in row.patterns):
            found = row
            break
    if len(_MATCHES) >= _MATCHES_SIZE:
        _MATCHES.clear()
    _MATCHES[key] = (table, found)
    return found


def dropped(wire: str, model: str, setting: str, value: Any, reason: str) -> None:
    """Record that ``setting`` was left out of the request to ``model``, and why (``llm.setting_dropped``)."""
    emit("llm.setting_dropped", wire=wire, model=model, setting=setting, value=value, reason=reason)


def refused(wire: str, model: str, setting: str, why: str) -> UnsupportedSettingError:
    """The request-kind error for a setting ``model`` cannot take (returned, for the caller to raise)."""
    return UnsupportedSettingError(
        f"{setting}: {why} (model {model!r}); nothing was sent", provider=wire, model=model, setting=setting
    )


def listed(values: Iterable[str]) -> str:
    """``'low', 'medium' or 'high'``: accepted values, for an error text."""
    items = [repr(v) for v in values]
    if not items:
        return "none"
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " or " + items[-1]


def check_owned(wire: str, model: str, options: Mapping[str, Any], owned: frozenset[str]) -> None:
    """Refuse ``vendor_options[wire]`` keys the codec owns (``owned``), a ``None`` (remove) included.

    The error names the keys, never their values (a vendor option may hold a credential).
    """
    clash = sorted(str(key) for key in options if key in owned)
    if clash:
        raise refused(
            wire, model, "vendor_options",
            f"vendor_options[{wire!r}] may not set {listed(clash)}: the codec owns the model (the provider's, or "
            "LLMRequest.model), the conversation (the request's messages) and streaming (stream() or complete())",
        )
