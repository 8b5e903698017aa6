"""What a model call cost in money: a price per model, read from a maintained table, and the cost of a usage.

Prices are not kept here by hand.  :func:`price_for` reads the ``genai-prices`` table (the ``[prices]``
extra, imported on first use — by an HTTP provider's first request, in a worker thread (:func:`load_table`), so
the event loop is not frozen while it loads; else where a price is first asked; the table pydantic-ai prices runs
with; without it there is no table: a model without a price set has none, said once at INFO on this module's
logger), keyed by the provider's name
(``"openai"``, ``"anthropic"``, ``"gemini"``, ...: what ``LLMResponse.provider`` says) and the model
that answered (``LLMResponse.model``).  What the table lacks, or prices differently from a contract,
the user sets (:func:`set_price`, :func:`set_prices`); a price set wins over the table.  The table's
answers are cached per model until the table changes (genai-prices' ``UpdatePrices`` installs a new one at
runtime): the next call priced after a change reads the new table.

A model without a price has no cost: :func:`cost_of` returns ``None``, never a silent zero, and a
run that used such a model reports ``RunResult.cost = None`` (see :mod:`agentactors.loop.cost`).

Token counts follow :class:`~agentactors.messages.Usage`: reasoning tokens are part of
``output_tokens`` on every wire; cached tokens are part of ``input_tokens`` on every wire but
Anthropic's and Bedrock's, which count them only in ``cache_read_tokens`` / ``cache_write_tokens``
(``docs/wire.md``).  A price's ``cache_read``, ``cache_write`` and ``reasoning`` rates apply where the
table (or the user) gives them; otherwise those tokens cost what input (or output) tokens cost.  Audio is
priced apart the same way: the prompt's audio tokens (``Usage.input_audio_tokens``) at ``input_audio``, the
cached ones among them (``cache_audio_read_tokens``) at ``cache_audio_read``, the answer's
(``output_audio_tokens``) at ``output_audio`` — each, when the table has no such rate, at the rate of the
tokens it is a part of (a cached one, of a price with no cache rate at all, at the rate of a fresh one of its
kind: there is no discount to give it).  Images the same: ``input_image_tokens``, ``cache_image_read_tokens`` and
``output_image_tokens`` at ``input_image``, ``cache_image_read`` and ``output_image``.  The cache
writes made with a 1-hour TTL (``Usage.cache_write_1h_tokens``, a part of ``cache_write_tokens``) cost the
``cache_write_1h`` rate where there is one (Anthropic's 2x input), else the ``cache_write`` rate.
"""

from __future__ import annotations

import importlib
import logging
import math
import threading
import weakref
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any, cast

import attrs

from ._extras import missing_extra
from .messages import LLMRequest, LLMResponse, Usage

__all__ = [
    "CUT_SHORT",
    "Cost",
    "CutShort",
    "Price",
    "clear_prices",
    "cost_of",
    "cut_short_of",
    "add_cut_short",
    "note_cut_short",
    "is_batch",
    "load_table",
    "pop_cut_short",
    "price_for",
    "prompt_tokens",
    "response_cost",
    "set_batch_factor",
    "set_price",
    "set_prices",
    "take_cut_short",
    "total_cost",
    "with_cut_short",
]

_PER = 1_000_000.0
_log = logging.getLogger(__name__)


def _rate(_: object, attribute: attrs.Attribute[Any], value: float | None) -> None:
    # NaN and infinity refused too: either would make every cost at this price, and every budget it is
    # charged to, a number no limit can be compared with.  A bool is no rate (True would be 1.0 a million).
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"Price.{attribute.name} must be a number (per million tokens), not {type(value).__name__}")
    if not (value >= 0 and math.isfinite(value)):
        raise ValueError(
            f"Price.{attribute.name} must be a finite, non-negative number (per million tokens), got {value!r}"
        )


def _tiers(value: Iterable[tuple[int, Price]]) -> tuple[tuple[int, Price], ...]:
    """``tiers`` checked, and sorted by where each starts: :meth:`Price.at` takes the highest tier a prompt passes,
    so tiers given from the highest down (``((200_000, a), (100_000, b))``) priced every long prompt at the lowest
    one — under-pricing it — and a tier that is not a :class:`Price` failed only when a response was priced."""
    if isinstance(value, str | bytes | Mapping) or not isinstance(value, Iterable):
        raise TypeError(f"Price.tiers must be (start, Price) pairs, not {type(value).__name__}")
    out: list[tuple[int, Price]] = []
    for pair in value:
        if not isinstance(pair, tuple | list) or len(pair) != 2:
            raise TypeError(f"Price.tiers must be (start, Price) pairs, not {pair!r}")
        start, price = pair
        if isinstance(start, bool) or not isinstance(start, int):
            raise TypeError(f"a tier's start must be an int (prompt tokens), not {start!r}")
        if start < 0:
            raise ValueError(f"a tier's start must be a non-negative number of prompt tokens, not {start!r}")
        if not isinstance(price, Price):
            raise TypeError(f"a tier's price must be a Price, not {type(price).__name__}")
        out.append((start, price))
    starts = [start for start, _ in out]
    if len(set(starts)) != len(starts):
        raise ValueError(f"Price.tiers start twice at the same prompt length: {sorted(starts)}")
    return tuple(sorted(out, key=lambda pair: pair[0]))


def _currency(price: Price, attribute: attrs.Attribute[Any], value: object) -> None:
    if not isinstance(value, str) or not value:
        raise TypeError(f"Price.currency must be a currency code (a non-empty str), not {value!r}")
    for _, tier in price.tiers:
        if tier.currency != value:
            raise ValueError(f"a tier in {tier.currency} of a price in {value}: a Price has one currency")


def _total_of(cost: Cost) -> float:
    return cost.input + cost.output


def _code(value: object) -> object:
    """A currency code in capitals (ISO 4217 writes them so): ``"usd"`` and ``"USD"`` are one currency — costs in
    them add up and a budget in one counts the other — not two that never meet.  Anything else is left for the
    validator to refuse."""
    return value.upper() if isinstance(value, str) else value


@attrs.frozen(slots=True)
class Cost:
    """What something cost: ``input`` (prompt tokens, cached ones included), ``output`` (completion tokens,
    reasoning included) and ``total = input + output``, in ``currency``.

    ``estimated``: how much of ``total`` is an estimate rather than a vendor's usage — the conservative charge of
    a call that was sent and then cut short (a hedge's losing copy, a run cancelled mid-call, a batch call that
    left its batch: :class:`CutShort`, ``docs/costs.md``).  ``0.0`` for what was priced from the vendor's own
    counts.  Keyword-only, so ``Cost(input, output, total, currency)`` reads as it always did.

    Costs add up (``a + b``, ``sum(costs, Cost())``) when their currencies agree.
    """

    input: float = 0.0
    output: float = 0.0
    total: float = attrs.field(default=attrs.Factory(_total_of, takes_self=True))
    currency: str = attrs.field(default="USD", converter=_code)
    estimated: float = attrs.field(default=0.0, kw_only=True)

    def __add__(self, other: Cost) -> Cost:
        if not isinstance(other, Cost):
            return NotImplemented
        if other.currency != self.currency:
            raise ValueError(f"cannot add a cost in {other.currency} to one in {self.currency}")
        return Cost(self.input + other.input, self.output + other.output, self.total + other.total, self.currency,
                    estimated=self.estimated + other.estimated)

    def __radd__(self, other: object) -> Cost:
        if other == 0:  # sum() starts from 0
            return self
        return NotImplemented


@attrs.frozen(slots=True)
class Price:
    """A model's rates, per **million** tokens, in ``currency``.

    ``cache_read`` / ``cache_write`` price cached prompt tokens (``None``: as ``input``); ``cache_write_1h``
    (keyword-only) prices the cache writes made with a 1-hour TTL (``Usage.cache_write_1h_tokens``; ``None``: as
    ``cache_write``); ``reasoning`` prices reasoning tokens (``None``: as ``output``).  ``tiers`` are the
    vendor's long-prompt prices: ``((200_000, Price(...)),)`` means every token of a call whose prompt is
    longer than 200,000 tokens is priced at that tier (the vendors' "cliff", as the table writes it).

    ``input_audio``, ``cache_audio_read`` and ``output_audio`` (keyword-only) price audio tokens
    (``Usage.input_audio_tokens``, ``cache_audio_read_tokens``, ``output_audio_tokens``): ``None`` prices them as
    the prompt's fresh tokens (``input``), its cached reads (``cache_read``; a price without one gives cached audio
    no discount: ``input_audio``) and the answer's (``output``).  ``input_image``, ``cache_image_read`` and
    ``output_image`` (keyword-only) price image tokens (``Usage.input_image_tokens``, ...) the same way.
    """

    input: float = attrs.field(validator=_rate)
    output: float = attrs.field(validator=_rate)
    cache_read: float | None = attrs.field(default=None, validator=_rate)
    cache_write: float | None = attrs.field(default=None, validator=_rate)
    # Keyword-only: the positional order (input, output, cache_read, cache_write, reasoning, tiers) stays.
    cache_write_1h: float | None = attrs.field(default=None, validator=_rate, kw_only=True)
    reasoning: float | None = attrs.field(default=None, validator=_rate)
    tiers: tuple[tuple[int, Price], ...] = attrs.field(default=(), converter=_tiers)
    currency: str = attrs.field(default="USD", converter=_code, validator=_currency)
    input_audio: float | None = attrs.field(default=None, validator=_rate, kw_only=True)
    cache_audio_read: float | None = attrs.field(default=None, validator=_rate, kw_only=True)
    output_audio: float | None = attrs.field(default=None, validator=_rate, kw_only=True)
    input_image: float | None = attrs.field(default=None, validator=_rate, kw_only=True)
    cache_image_read: float | None = attrs.field(default=None, validator=_rate, kw_only=True)
    output_image: float | None = attrs.field(default=None, validator=_rate, kw_only=True)

    def at(self, prompt_tokens: int) -> Price:
        """The price of a call whose prompt holds ``prompt_tokens`` tokens: the highest tier it passes."""
        for start, tier in reversed(self.tiers):
            if prompt_tokens > start:
                return tier
        return self

    def cost(self, usage: Usage, *, cached_in_input: bool = True) -> Cost:
        """What ``usage`` costs at this price.

        ``cached_in_input``: whether ``usage.input_tokens`` already counts the cached tokens (it does on
        every wire but Anthropic's and Bedrock's; :func:`cost_of` knows which).

        The counts are the vendor's numbers: a negative one (a proxy's or a decoder's bug) is taken as
        zero, so a cost is never negative (a refund to every budget it is charged to) nor inflated (a
        negative cached count added to the fresh prompt tokens).

        :raises TypeError: ``usage`` is not a :class:`~agentactors.messages.Usage`.
        """
        if not isinstance(usage, Usage):
            raise TypeError(f"usage must be a Usage, not {type(usage).__name__}")
        read_tokens = max(0, usage.cache_read_tokens)
        write_tokens = max(0, usage.cache_write_tokens)
        input_tokens = max(0, usage.input_tokens)
        output_tokens = max(0, usage.output_tokens)
        cached = read_tokens + write_tokens
        prompt = input_tokens if cached_in_input else input_tokens + cached
        p = self.at(prompt)
        fresh = max(0, prompt - cached)
        read = p.input if p.cache_read is None else p.cache_read
        write = p.input if p.cache_write is None else p.cache_write
        write_1h = write if p.cache_write_1h is None else p.cache_write_1h
        # A part of the writes: a hand-made Usage saying more is held to the writes (never priced above them).
        long_writes = min(max(0, usage.cache_write_1h_tokens), write_tokens)
        thinking = min(max(0, usage.reasoning_tokens), output_tokens)
        think_rate = p.output if p.reasoning is None else p.reasoning
        text_out = output_tokens - thinking
        if (
            usage.input_audio_tokens or usage.output_audio_tokens or usage.input_image_tokens
            or usage.output_image_tokens
        ):
            # The media tokens at their own rates; the text counts are what is left of the counts.
            media_in, media_out, fresh, read_tokens, text_out = _media(p, usage, fresh, read_tokens, read, text_out)
        else:
            media_in = media_out = 0.0
        cost_in = (
            fresh * p.input + read_tokens * read + (write_tokens - long_writes) * write + long_writes * write_1h
        ) / _PER + media_in
        cost_out = (text_out * p.output + thinking * think_rate) / _PER + media_out
        return Cost(cost_in, cost_out, cost_in + cost_out, p.currency)


def _media(
    p: Price, usage: Usage, fresh: int, read_tokens: int, read: float, text_out: int
) -> tuple[float, float, int, int, int]:
    """What ``usage``'s audio and image tokens cost at ``p`` (input, output) — the rare path — and the text tokens
    left of the counts they are parts of (fresh prompt tokens, cached reads, answer tokens that are not reasoning).

    They are parts of ``fresh`` prompt tokens, ``read_tokens`` cached ones (at ``read``) and ``text_out`` answer
    tokens.  Each is held to what is left of what it is a part of (audio first, then images), so counts a hand-made
    Usage overstates are never priced above the tokens there are, nor a token twice.  A cached one of a price with
    no cache rate at all costs what a fresh one of its kind does: without a cache rate there is no discount to give
    it (the table prices it so), and the text rate ``read`` falls back to would under-price it.

    Each kind is priced at its own rate and the text counts are reduced, never the text priced whole and then
    corrected by the difference of the rates: that cancellation left a prompt of media cheaper than text costing
    less than nothing (a cost a budget counts as unpriced), and cost a large one its precision.
    """
    audio_read = min(usage.cache_audio_read_tokens, read_tokens, usage.input_audio_tokens)
    audio_fresh = min(usage.input_audio_tokens - audio_read, fresh)
    audio_out = min(usage.output_audio_tokens, text_out)
    image_read = min(usage.cache_image_read_tokens, read_tokens - audio_read, usage.input_image_tokens)
    image_fresh = min(usage.input_image_tokens - image_read, fresh - audio_fresh)
    image_out = min(usage.output_image_tokens, text_out - audio_out)
    in_audio = p.input if p.input_audio is None else p.input_audio
    in_image = p.input if p.input_image is None else p.input_image
    if p.cache_read is None:  # no cache discount: a cached token is priced as a fresh one of its kind
        read_audio = in_audio if p.cache_audio_read is None else p.cache_audio_read
        read_image = in_image if p.cache_image_read is None else p.cache_image_read
    else:
        read_audio = read if p.cache_audio_read is None else p.cache_audio_read
        read_image = read if p.cache_image_read is None else p.cache_image_read
    out_audio = p.output if p.output_audio is None else p.output_audio
    out_image = p.output if p.output_image is None else p.output_image
    media_in = (
        audio_fresh * in_audio + audio_read * read_audio + image_fresh * in_image + image_read * read_image
    ) / _PER
    media_out = (audio_out * out_audio + image_out * out_image) / _PER
    return (
        media_in, media_out, fresh - audio_fresh - image_fresh, read_tokens - audio_read - image_read,
        text_out - audio_out - image_out,
    )


# --- the table and the user's prices ------------------------------------------------------------------

# The provider names of this package's wires, as the table names their vendors.
_TABLE_NAMES: Mapping[str, str] = {
    "openai-responses": "openai",
    "azure-openai": "azure",
    "gemini": "google",
    "vertex": "google",
    "bedrock": "aws",
}
# The package's own stand-ins for a model (ScriptedProvider, ReplayProvider): no vendor's table prices them, and
# asking it would load the table (~14 MB and ~0.2 s, with pydantic) in every test and benchmark run.
_OFF_TABLE = frozenset({"scripted", "replay"})
# Wires whose input_tokens leave the cached tokens out (docs/wire.md, "Usage").
_CACHED_APART = frozenset({"anthropic", "bedrock"})

_lock = threading.Lock()
_user: dict[tuple[str, str], Price | None] = {}
_found: dict[tuple[str, str], Price | None] = {}  # the table's answers, looked up once per key
_batch_found: dict[tuple[str, str], Price | None] = {}  # batch prices, looked up once per key
#: A batch call's price against the same call made live, for a model the table has no batch price for
#: (OpenAI, Anthropic and Gemini all publish 50 %); :func:`set_batch_factor` changes it.
BATCH_FACTOR = 0.5
_batch_factor = BATCH_FACTOR


def set_price(provider: str, model: str, price: Price | None) -> None:
    """Price ``model`` of ``provider`` (its name, as ``LLMResponse.provider`` says it) at ``price``.

    It wins over the table.  ``price=None`` says the model has no price (its runs report no cost),
    whatever the table says; :func:`clear_prices` forgets every price set.
    """
    global _generation
    if price is not None and not isinstance(price, Price):
        raise TypeError(f"price must be a Price or None, not {type(price).__name__}")
    for label, value in (("provider", provider), ("model", model)):
        if not isinstance(value, str) or not value:
            raise TypeError(f"{label} must be a non-empty str (as LLMResponse.{label} says it), not {value!r}")
    with _lock:
        _user[(provider, model)] = price
        # Every cached answer goes, not only this name's: a dated name (gpt-4o-2024-08-06) priced before from the
        # table now takes the price set for its model (gpt-4o).
        _found.clear()
        _batch_found.clear()
        _generation += 1


def set_prices(prices: Mapping[tuple[str, str], Price | None]) -> None:
    """:func:`set_price` for each ``(provider, model): price`` of ``prices`` (all checked before any is set)."""
    if not isinstance(prices, Mapping):
        raise TypeError(f"prices must be a mapping of (provider, model) to a Price, not {type(prices).__name__}")
    items = list(prices.items())
    for key, price in items:
        if not isinstance(key, tuple) or len(key) != 2 or not all(isinstance(k, str) and k for k in key):
            raise TypeError(f"a key of prices must be a (provider, model) pair of str, not {key!r}")
        if price is not None and not isinstance(price, Price):
            raise TypeError(f"price must be a Price or None, not {type(price).__name__}")
    for (provider, model), price in items:
        set_price(provider, model, price)


def clear_prices() -> None:
    """Forget every price :func:`set_price` set (the table's prices stay)."""
    global _generation
    with _lock:
        _user.clear()
        _found.clear()
        _batch_found.clear()
        _generation += 1


def set_batch_factor(factor: float) -> None:
    """Price batch calls at ``factor`` times the live price where the table has no batch price of its own
    (default :data:`BATCH_FACTOR`, 0.5) — and always for a price set with :func:`set_price`."""
    global _batch_factor, _generation
    if isinstance(factor, bool) or not isinstance(factor, int | float) or not (factor >= 0 and math.isfinite(factor)):
        raise ValueError(f"the batch factor must be a finite, non-negative number, not {factor!r}")
    with _lock:
        _batch_factor = float(factor)
        _batch_found.clear()
        _generation += 1


def price_for(provider_name: str | None, model: str | None, *, batch: bool = False) -> Price | None:
    """The price of ``model`` served by the provider named ``provider_name``, or ``None`` when it has none.

    A price set with :func:`set_price` first — for this name, else for a name the table resolves to the same
    model (a price set for ``gpt-4o`` prices the ``gpt-4o-2024-08-06`` a vendor answers with) — then the
    ``genai-prices`` table (``None`` without the ``[prices]`` extra).  The table is asked by vendor
    (``"gemini"`` is Google's, ``"bedrock"`` AWS's, ...) and matches the model's dated and aliased names
    (``gpt-4o-2024-08-06`` is ``gpt-4o``); a provider name the table does not know (a name of your own) has no
    table price — set one.

    ``batch=True``: the price of the call made through the vendor's batch API (:class:`~agentactors.BatchProvider`)
    — the table's batch price for the model when it has one, else the live price times the batch factor
    (:func:`set_batch_factor`, 0.5 by default); a price you set is always scaled by the factor.
    """
    if not provider_name or not model:
        return None
    if _watched is not None and _watched.get_snapshot() is not _basis:
        _renew()
    if batch:
        return _batch_price(provider_name, model)
    key = (provider_name, model)
    try:
        return _found[key]
    except (KeyError, TypeError):  # (a TypeError: an unhashable name, refused below)
        _check_names(provider_name, model)
    with _lock:
        user = _user_key(provider_name, model)
        if user is not None:
            price = _user[user]
        elif provider_name in _OFF_TABLE:
            price = None
        else:
            price = _table_price(_TABLE_NAMES.get(provider_name, provider_name), model)
        _found[key] = price
    return price


def _check_names(provider_name: object, model: object) -> None:
    """Names checked on a cache miss only (a name priced before was checked then): one that is not a ``str`` (an int,
    bytes, a list) failed deep in the table's lookup with an ``AttributeError`` naming nothing the caller wrote."""
    for label, value in (("provider_name", provider_name), ("model", model)):
        if not isinstance(value, str):
            raise TypeError(f"{label} must be a str (as LLMResponse.{label.removesuffix('_name')} says it), "
                            f"not {type(value).__name__}")


def _user_key(provider_name: str, model: str) -> tuple[str, str] | None:
    """The key of the price set (:func:`set_price`) that prices ``model`` of ``provider_name``, or ``None``.

    The exact name first; else a name set for the same provider that the table resolves to the same model —
    vendors answer with dated names (``gpt-4o-2024-08-06`` for ``gpt-4o``, ``claude-sonnet-4-5-20250929``), and
    a response is priced by the name that answered, so a price set for the undated name (a negotiated rate, or
    ``None``: "no price") must hold for them.  The table's own id of the model is preferred, then the first name
    set.  Without the table (no ``[prices]`` extra) only the exact name matches.  Called under ``_lock``, on a
    cache miss only.
    """
    key = (provider_name, model)
    if key in _user:
        return key
    if provider_name in _OFF_TABLE:
        return None
    names = [name for provider, name in _user if provider == provider_name]
    if not names:  # nearly always: no price set for this provider, and the table is not asked twice
        return None
    vendor = _TABLE_NAMES.get(provider_name, provider_name)
    canonical = _table_id(vendor, model)
    if canonical is None:
        return None
    if canonical in names:
        return (provider_name, canonical)
    for name in names:
        if _table_id(vendor, name) == canonical:
            return (provider_name, name)
    return None


def _batch_price(provider_name: str, model: str) -> Price | None:
    key = (provider_name, model)
    try:
        return _batch_found[key]
    except (KeyError, TypeError):  # (a TypeError: an unhashable name, refused below)
        _check_names(provider_name, model)
    generation = _generation
    live = price_for(provider_name, model)
    with _lock:
        off = provider_name in _OFF_TABLE or _user_key(provider_name, model) is not None
        table = None if off else _table_price(_TABLE_NAMES.get(provider_name, provider_name), model, True)
        price = table if table is not None or live is None else _scaled(live, _batch_factor)
        # A price set (or a factor, or the table changed) between reading the live price and here: this answer
        # is of the old one, and cached it would outlive the change for good — it is returned, not kept.
        if generation == _generation:
            _batch_found[key] = price
    return price


def _scaled(price: Price, factor: float) -> Price:
    def times(rate: float | None) -> float | None:
        return None if rate is None else rate * factor

    tiers = tuple((start, _scaled(tier, factor)) for start, tier in price.tiers)
    return Price(price.input * factor, price.output * factor, times(price.cache_read), times(price.cache_write),
                 times(price.reasoning), tiers, price.currency, cache_write_1h=times(price.cache_write_1h),
                 input_audio=times(price.input_audio), cache_audio_read=times(price.cache_audio_read),
                 output_audio=times(price.output_audio), input_image=times(price.input_image),
                 cache_image_read=times(price.cache_image_read), output_image=times(price.output_image))


def is_batch(response: LLMResponse) -> bool:
    """Whether ``response`` came through a vendor's batch API (:class:`~agentactors.BatchProvider` marks it in
    ``provider_data["batch"]``): it is priced at the batch rate."""
    data = response.provider_data
    if not data:  # None or empty: most responses (and no ABC check on the hot path)
        return False
    return isinstance(data, Mapping) and "batch" in data


def cost_of(provider_name: str | None, model: str | None, usage: Usage, *, batch: bool = False) -> Cost | None:
    """What ``usage`` of ``model`` at the provider named ``provider_name`` cost, or ``None`` if unpriced
    (``batch``: made through the vendor's batch API, at its batch price)."""
    price = price_for(provider_name, model, batch=batch)
    if price is None:
        return None
    return price.cost(usage, cached_in_input=provider_name not in _CACHED_APART)


def prompt_tokens(provider_name: str | None, usage: Usage) -> int:
    """All the prompt tokens of a call, cached ones included, however the wire of ``provider_name`` counts them."""
    if provider_name in _CACHED_APART:
        return usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens
    return usage.input_tokens


def response_cost(response: LLMResponse) -> Cost | None:
    """What one model response cost (by the provider and model that answered, at the batch price when it came
    through a batch API: :func:`is_batch`), or ``None`` if unpriced."""
    try:
        provider, model = response.provider, response.model
    except AttributeError:  # (no check on the way of every response: a try costs nothing until it raises)
        raise TypeError(f"response must be an LLMResponse, not {type(response).__name__}") from None
    if _watched is not None and _watched.get_snapshot() is not _basis:
        _renew()
    if response.provider_data and is_batch(response):
        return cost_of(provider, model, response.usage, batch=True)
    # Every model call of every run comes here: a price looked up before is one dict read, not three calls.
    price = _found.get((provider, model), _UNSEEN)  # type: ignore[arg-type]
    if price is _UNSEEN:
        price = price_for(provider, model)
    if price is None:
        return None
    return price.cost(response.usage, cached_in_input=provider not in _CACHED_APART)


_UNSEEN: Any = object()


def total_cost(results: Iterable[Any]) -> Cost | None:
    """The summed ``cost`` of ``results`` (run results: ``run_many``'s, a session's turns), or ``None``
    when one of them has none — an unknown part makes the total unknown, never a smaller number."""
    total = Cost()
    for result in results:
        try:
            cost = result.cost
        except AttributeError:
            # A list of costs ([r.cost for r in results]) is an easy slip: sum(costs) adds those.
            raise TypeError(
                f"total_cost adds up run results (each with a cost), not {type(result).__name__}: "
                "add Costs with sum(costs)"
            ) from None
        if cost is None:
            return None
        total = total + cost
    return total


# --- calls cut short after they were sent ----------------------------------------------------------------

#: The key of ``LLMResponse.provider_data`` holding the calls that were sent on the way to the response and cut
#: short (a hedge's losing copy): the run that receives the response charges them with it.
CUT_SHORT = "cut_short"


@attrs.frozen(slots=True)
class CutShort:
    """A model call that was sent and then cut short — the vendor bills it, though no run received its answer.

    ``provider`` and ``model`` name who was asked (the price); ``input_tokens`` and ``output_tokens`` what it is
    charged for; ``estimated``: the counts are this package's estimate (the prompt at ~4 characters a token, as
    :func:`~agentactors.gateway.provider.estimate_tokens` counts it; the output deltas already received), not the
    vendor's — ``False`` when the vendor's own usage arrived (a hedge's losing copy that answered anyway);
    ``batch``: sent through a batch API (priced at the batch rate).
    """

    provider: str | None
    model: str | None
    input_tokens: int = 0
    output_tokens: int = 0
    estimated: bool = True
    batch: bool = False

    def cost(self) -> Cost | None:
        """What it is charged: its tokens at its model's price (the input rate for the whole prompt — no cache
        discount is assumed), all of it :attr:`Cost.estimated` when :attr:`estimated`; ``None`` when unpriced."""
        usage = Usage(self.input_tokens, self.output_tokens)
        cost = cost_of(self.provider, self.model, usage, batch=self.batch)
        if cost is None or not self.estimated:
            return cost
        return attrs.evolve(cost, estimated=cost.total)

    def to_json(self) -> dict[str, Any]:
        return {"provider": self.provider, "model": self.model, "input_tokens": self.input_tokens,
                "output_tokens": self.output_tokens, "estimated": self.estimated, "batch": self.batch}

    @classmethod
    def from_json(cls, value: Any) -> CutShort | None:
        """A record back from its JSON form (a journaled response's); ``None`` for anything that is not one."""
        if not isinstance(value, Mapping):
            return None
        provider, model = value.get("provider"), value.get("model")
        if not (provider is None or isinstance(provider, str)) or not (model is None or isinstance(model, str)):
            return None
        # Usage's own reading of a count: anything that is not a count (None, NaN, a string) is 0.
        counts = Usage(cast(int, value.get("input_tokens")), cast(int, value.get("output_tokens")))
        return cls(provider, model, counts.input_tokens, counts.output_tokens,
                   value.get("estimated") is not False, value.get("batch") is True)


def with_cut_short(response: LLMResponse, calls: Iterable[CutShort]) -> LLMResponse:
    """``response``, carrying ``calls`` (:class:`CutShort`) in ``provider_data["cut_short"]`` for the run that
    receives it to charge (``RunResult.cost``, its budgets).  Its ``usage`` is left as the vendor said it."""
    records = [call.to_json() for call in calls]
    if not records:
        return response
    data = dict(response.provider_data or {})
    data[CUT_SHORT] = [*data.get(CUT_SHORT, ()), *records]
    return attrs.evolve(response, provider_data=data)


def cut_short_of(response: LLMResponse) -> tuple[CutShort, ...]:
    """The cut-short calls ``response`` carries (:func:`with_cut_short`); ``()`` for nearly every response."""
    data = response.provider_data
    if not data:
        return ()
    records = data.get(CUT_SHORT) if isinstance(data, Mapping) else None
    if not isinstance(records, list | tuple):
        return ()
    return tuple(call for call in map(CutShort.from_json, records) if call is not None)


# Requests whose call was cut short after it was sent, noted by the layer that sent it (a hedge, a batch provider,
# the ProviderActor) as the cancellation passes through it, for the run that asked to charge when the same
# cancellation reaches it: by the request object's identity (a weak reference: an entry nobody takes — a call made
# outside any run — goes with its request).
_noted: dict[int, tuple[weakref.ref[LLMRequest], tuple[CutShort, ...]]] = {}
# Reentrant: a weak reference's callback (_forget) may run at any allocation, in the thread holding it.
_noted_lock = threading.RLock()


def note_cut_short(request: LLMRequest, calls: Iterable[CutShort], *, replace: bool = True) -> None:
    """Say that the call of ``request`` was sent and is being cut short: ``calls`` (one per copy sent).

    Called by the layer that sent it, in its cancellation branch; the run that asked (the request object it
    sent) takes it in its own (:func:`take_cut_short`).  ``replace=False``: keep what an inner layer noted (it
    knows more: how many copies went, through which API).
    """
    key = id(request)
    with _noted_lock:
        if not replace and key in _noted and _noted[key][0]() is request:
            return
        _noted[key] = (weakref.ref(request, lambda _, key=key: _forget(key)), tuple(calls))  # type: ignore[misc]


def add_cut_short(request: LLMRequest, calls: Iterable[CutShort]) -> None:
    """Note ``calls`` for ``request`` beside what is noted for it already (:func:`note_cut_short` replaces it).

    For a layer whose inner layers were sent requests of their own: what is against ``request`` is not theirs (a
    sibling's sharing the request object, an earlier call's), and stays.  Noted even when ``calls`` is empty and
    nothing was: "nothing billed" is kept by a ``ProviderActor`` around, which would otherwise estimate a call.
    """
    key = id(request)
    with _noted_lock:
        entry = _noted.get(key)
        before = entry[1] if entry is not None and entry[0]() is request else ()
        _noted[key] = (weakref.ref(request, lambda _, key=key: _forget(key)), (*before, *calls))  # type: ignore[misc]


def take_cut_short(request: LLMRequest) -> tuple[CutShort, ...]:
    """The cut-short calls noted for ``request`` (:func:`note_cut_short`), forgotten once taken; ``()`` when none
    was noted — its call was not sent (refused, or still waiting for a slot), or no layer said so."""
    return pop_cut_short(request) or ()


def pop_cut_short(request: LLMRequest) -> tuple[CutShort, ...] | None:
    """:func:`take_cut_short`, but ``None`` when nothing was noted — told from a note that nothing was billed
    (``()``: a batch call withdrawn before its submission).  For a layer that cut a call short around inner layers
    that may have noted it: their word (even "nothing") is kept, and only silence is replaced by an estimate."""
    with _noted_lock:
        entry = _noted.pop(id(request), None)
    if entry is None or entry[0]() is not request:
        return None
    return entry[1]


def _forget(key: int) -> None:
    with _noted_lock:
        entry = _noted.get(key)
        if entry is not None and entry[0]() is None:
            del _noted[key]


# --- reading the genai-prices table -----------------------------------------------------------------

_genai: Any = None  # the package's data_snapshot module, or False once it was found missing
# The table the cached answers were read from: genai-prices' snapshot, which its UpdatePrices (prices fetched at
# runtime) or set_custom_snapshot replaces.  The table's answers are cached per model, and without this they
# outlived an update for good.  Only looked at once the table was loaded (a scripted run never loads it).
_basis: Any = None
_watched: Any = None  # the data_snapshot module, once loaded
_generation = 0  # counts the changes of prices (set, cleared, the factor, the table): a stale answer is not kept


# Held while the table loads: a worker thread's load (load_table) and a direct caller's (a price asked from another
# thread, or on the loop before the thread is done) are one load, never two, and neither sees half of one.
_loading_lock = threading.Lock()
_loading = False  # a load_table thread is under way: a concurrent first request does not start another


def _snapshot() -> Any:
    if _genai is None:
        _load()
    return _genai.get_snapshot() if _genai else None


def _load() -> None:
    """Import the table (``None`` -> the module, or ``False`` when the extra is missing): on the first price asked, or
    in a worker thread (:func:`load_table`).  Every global is set under the lock, ``_genai`` last: a reader that sees
    it set sees the rest."""
    global _genai, _basis, _watched
    with _loading_lock:
        if _genai is not None:
            return
        try:
            module = importlib.import_module("genai_prices.data_snapshot")
        except ImportError as exc:  # documented: no table, so a model without a price set has no cost
            _genai = False
            _log.info("%s; a model without a price set has no cost", missing_extra("the price table", "prices", exc))
        else:
            _basis = module.get_snapshot()
            _watched = module
            _genai = module


async def load_table() -> None:
    """Load the genai-prices table in a worker thread, if it is not loaded (nor known missing) yet.

    Loading it takes ~0.15 s (an import with pydantic); done where a price is first asked — in ``response_cost``,
    after a run's first answer — it froze the event loop, and every other run and request of the process with it.
    The HTTP providers call this on their first request over a pool of their own (the calling task waits for the load;
    the loop goes on), so the first priced answer finds the table loaded; a server, or a provider given its
    ``http_client``, may call it at startup.  Once the table is loaded (or
    found missing) this returns at once; while a load is under way a second call returns at once too, without
    starting another thread (a price asked before it is done waits for it).  A failing import is not raised here:
    the price asked next imports it again, and raises what it raised.

    Cancellation: the worker thread is not cancelled (an import cannot be stopped half-way): a cancelled call waits
    for the load to end — the table loaded whole, or not at all — and then raises the cancellation; a later call
    loads it if it is not loaded.
    """
    global _loading
    if _genai is not None or _loading:
        return
    import anyio.lowlevel
    import anyio.to_thread

    _loading = True
    try:
        await anyio.to_thread.run_sync(_quiet_load)
    finally:
        _loading = False
    await anyio.lowlevel.checkpoint_if_cancelled()  # a cancellation that came while the thread ran: raised here


def _quiet_load() -> None:
    try:
        _load()
    except Exception:  # a broken install: raised where a price is asked, as before (load_table's docstring)
        _log.debug("the price table could not be loaded ahead of a price", exc_info=True)


def _renew() -> None:
    """The price table changed (genai-prices' ``UpdatePrices``, ``set_custom_snapshot``): forget its answers."""
    global _basis, _generation
    with _lock:
        _basis = _watched.get_snapshot()
        _found.clear()
        _batch_found.clear()
        _generation += 1


def _table_price(vendor: str, model: str, batch: bool = False) -> Price | None:
    """The table's price (``batch``: its batch price, ``None`` when it has none for the model)."""
    info = _table_model(vendor, model)
    if info is None:
        return None
    if not batch:
        return _from_table(info.get_prices(datetime.now(tz=UTC)))
    if not any(getattr(v, "when", None) == _BATCH for v in getattr(info, "price_variants", None) or ()):
        return None
    return _from_table(info.get_prices(datetime.now(tz=UTC), _BATCH))


_BATCH: Mapping[str, str] = {"processing": "batch"}  # the table's condition for its batch prices


def _table_id(vendor: str, model: str) -> str | None:
    """The table's own id of ``model`` at ``vendor`` (``gpt-4o`` for ``gpt-4o-2024-08-06``); ``None`` if it lacks it."""
    model_id = getattr(_table_model(vendor, model), "id", None)
    return model_id if isinstance(model_id, str) else None


def _table_model(vendor: str, model: str) -> Any | None:
    """The table's entry for ``model`` at ``vendor`` (``None``: no table installed, or no such model in it)."""
    snapshot = _snapshot()
    if snapshot is None:
        return None
    try:
        _, info = snapshot.find_provider_model(model, None, vendor, None)
    except LookupError:
        return None
    return info


# Our rates, and the table's keys for them (the first the model has is taken).
_KEYS: Mapping[str, tuple[str, ...]] = {
    "input": ("input_mtok",),
    "output": ("output_mtok",),
    "cache_read": ("cache_read_mtok",),
    "cache_write": ("cache_write_mtok", "cache_write_5m_mtok"),
    "cache_write_1h": ("cache_write_1h_mtok",),
    "reasoning": ("output_reasoning_mtok",),
    "input_audio": ("input_audio_mtok",),
    "cache_audio_read": ("cache_audio_read_mtok",),
    "output_audio": ("output_audio_mtok",),
    "input_image": ("input_image_mtok",),
    "cache_image_read": ("cache_image_read_mtok",),
    "output_image": ("output_image_mtok",),
}


def _from_table(model_price: Any) -> Price | None:
    """A :class:`Price` from the table's ``ModelPrice`` (its flat rates or tiered ones); ``None`` when it
    has no token price (a model priced per request or per second is not one this package can cost)."""
    raw: dict[str, Any] = {}
    for field, keys in _KEYS.items():
        for key in keys:
            value = getattr(model_price, key, None)
            if value is not None:
                raw[field] = value
                break
    if "input" not in raw or "output" not in raw:
        return None
    starts = sorted({t.start for v in raw.values() for t in getattr(v, "tiers", ())})
    tiers = tuple((int(start), _flat(raw, start)) for start in starts)
    return attrs.evolve(_flat(raw, None), tiers=tiers)


def _flat(raw: Mapping[str, Any], start: int | None) -> Price:
    """The flat price of ``raw``'s rates at tier ``start`` (``None``: the base rates)."""
    rates: dict[str, float] = {}
    for field, value in raw.items():
        tiers = getattr(value, "tiers", None)
        if tiers is None:
            rates[field] = float(value)
            continue
        chosen = value.base
        for tier in tiers:
            if start is not None and tier.start <= start:
                chosen = tier.price
        rates[field] = float(chosen)
    return Price(
        rates["input"],
        rates["output"],
        rates.get("cache_read"),
        rates.get("cache_write"),
        rates.get("reasoning"),
        cache_write_1h=rates.get("cache_write_1h"),
        input_audio=rates.get("input_audio"),
        cache_audio_read=rates.get("cache_audio_read"),
        output_audio=rates.get("output_audio"),
        input_image=rates.get("input_image"),
        cache_image_read=rates.get("cache_image_read"),
        output_image=rates.get("output_image"),
    )
