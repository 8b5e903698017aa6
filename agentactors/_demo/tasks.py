"""The demo's task: price an item in a currency with two tools, and the fake model that solves it.

Each agent is asked "How much does a <item> cost in <currency>?".  It has two
tools: ``lookup_price`` (the item's list price in US dollars, from a seeded
catalogue) and ``convert_currency`` (a fixed, illustrative rate table).  The
fake model on the :class:`~agentactors.testing.FakeVendor` reads the
conversation the way a model would — the question, the tool calls it made and
the results it saw — and calls ``lookup_price``, then ``convert_currency`` with
the price it was told, then answers quoting both results verbatim.  So every
correct answer is checkable: it must contain the exact text both tools
returned for that agent's task, and nothing in the fake model knows the
catalogue.
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from ..messages import Message
from ..tools.registry import Tool, tool

__all__ = [
    "CURRENCIES",
    "ITEMS",
    "Task",
    "answer_quotes_results",
    "fake_model",
    "make_catalogue",
    "make_tasks",
    "make_tools",
    "tool_results_of",
    "with_article",
]

ITEMS: tuple[str, ...] = (
    "teapot", "bicycle bell", "desk lamp", "rain jacket", "chess set", "kettle", "backpack", "pair of hiking boots",
    "coffee grinder", "wool scarf", "fountain pen", "yoga mat", "camera strap", "road atlas", "cast iron pan",
    "pair of headphones", "garden hose", "umbrella", "sketchbook", "alarm clock", "tea towel", "bird feeder",
    "picnic blanket", "flashlight", "water bottle", "cutting board", "pair of reading glasses", "tape measure",
    "paint brush set", "jigsaw puzzle", "houseplant", "laptop stand", "espresso cup", "ice scraper",
)

#: Units of each currency per US dollar.  Illustrative, fixed so that answers are reproducible.
CURRENCIES: Mapping[str, float] = {
    "EUR": 0.92, "GBP": 0.79, "JPY": 151.40, "CHF": 0.88, "CAD": 1.36, "AUD": 1.52, "SEK": 10.45, "INR": 83.20,
}

_QUESTION = "How much does {item} cost in {currency}? Look up its price in US dollars, then convert it."
_QUESTION_RE = re.compile(r"How much does an? (?P<item>[a-z ]+) cost in (?P<currency>[A-Z]{3})\?")


def with_article(item: str) -> str:
    """``"an umbrella"``, ``"a teapot"``."""
    return ("an " if item[:1] in "aeiou" else "a ") + item
_AMOUNT_RE = re.compile(r"^(?P<amount>\d+(?:\.\d+)?) USD")


@attrs.frozen(slots=True)
class Task:
    """One agent's question, and the two tool results a correct run must quote."""

    index: int
    item: str
    currency: str
    price: float

    @property
    def prompt(self) -> str:
        return _QUESTION.format(item=with_article(self.item), currency=self.currency)

    @property
    def expected_results(self) -> tuple[str, str]:
        return price_text(self.item, self.price), conversion_text(self.price, self.currency)


def price_text(item: str, price: float) -> str:
    return f"{price:.2f} USD (list price of {with_article(item)})"


def conversion_text(amount: float, currency: str) -> str:
    return f"{amount:.2f} USD = {amount * CURRENCIES[currency]:.2f} {currency}"


def make_catalogue(seed: int) -> dict[str, float]:
    """List prices in US dollars, drawn from ``seed`` (so another seed prices everything differently)."""
    rng = random.Random(f"catalogue-{seed}")
    return {item: round(rng.uniform(4.0, 480.0), 2) for item in ITEMS}


def make_tasks(count: int, seed: int, catalogue: Mapping[str, float]) -> list[Task]:
    """``count`` questions, each an (item, currency) pair drawn from ``seed``."""
    rng = random.Random(f"tasks-{seed}")
    currencies = sorted(CURRENCIES)
    tasks = []
    for i in range(count):
        item = rng.choice(ITEMS)
        tasks.append(Task(i, item, rng.choice(currencies), catalogue[item]))
    return tasks


def make_tools(catalogue: Mapping[str, float]) -> tuple[Tool[Any, Any], Tool[Any, Any]]:
    """The two tools, bound to ``catalogue``.  Both only read data; a bad argument raises (status error)."""

    @tool(read_only=True, timeout=5.0)
    async def lookup_price(item: str) -> str:
        """Look up the list price of a catalogue item, in US dollars.

        Args:
            item: the item's name, as the customer wrote it.
        """
        key = item.strip().lower()
        if key not in catalogue:
            raise ValueError(f"there is no {item!r} in the catalogue")
        return price_text(key, catalogue[key])

    @tool(read_only=True, timeout=5.0)
    async def convert_currency(amount: float, currency: str) -> str:
        """Convert an amount of US dollars into another currency.

        Args:
            amount: the amount in US dollars.
            currency: the ISO 4217 code of the target currency, e.g. EUR.
        """
        code = currency.strip().upper()
        if code not in CURRENCIES:
            raise ValueError(f"no exchange rate for {currency!r}; known: {', '.join(sorted(CURRENCIES))}")
        return conversion_text(amount, code)

    return lookup_price, convert_currency


# --- the fake model (runs on the FakeVendor's server thread: quick, pure, thread-safe) -------------


def _first_paragraph(text: str) -> str:
    # A loop nudge may be appended to a tool result after a blank line; the result is what precedes it.
    return text.split("\n\n", 1)[0].strip()


def fake_model(request: Any) -> Any:
    """Answer one recorded request like a small, obedient model would; ``None`` for anything else.

    Reads the question from the last user text and what the tools said from the
    conversation: no price known yet → call ``lookup_price``; a price but no
    conversion → call ``convert_currency`` with that price; both → answer
    quoting the two results verbatim.
    """
    from ..testing import FakeReply, FakeToolCall

    conv = getattr(request, "conversation", None)
    if conv is None:
        return None
    asked = _QUESTION_RE.search(conv.last_user_text)
    if asked is None:
        return None
    item, currency = asked["item"], asked["currency"]
    names_by_id = {c.id: c.name for c in conv.tool_calls if c.id}
    seen: dict[str, str] = {}
    for n, result in enumerate(conv.tool_results):
        name = result.name or names_by_id.get(result.call_id or "")
        if name is None and n < len(conv.tool_calls):
            name = conv.tool_calls[n].name  # results follow their calls in order
        if name and not result.is_error:
            seen[name] = _first_paragraph(result.content)
    price = seen.get("lookup_price")
    if price is None:
        return FakeToolCall("lookup_price", {"item": item})
    amount = _AMOUNT_RE.search(price)
    if amount is None:
        return FakeReply(text=f"I could not read a price for {with_article(item)} from the catalogue ({price}).")
    converted = seen.get("convert_currency")
    if converted is None:
        return FakeToolCall("convert_currency", {"amount": float(amount["amount"]), "currency": currency})
    return FakeReply(
        text=f"The catalogue says {price}; the converter says {converted}. "
        f"So {with_article(item)} costs {converted.rsplit(' = ', 1)[-1]}."
    )


# --- checking answers ------------------------------------------------------------------------------


def tool_results_of(messages: Sequence[Message]) -> list[str]:
    """The tool results a run saw (the text each tool returned, without loop notes)."""
    return [_first_paragraph(m.content) for m in messages if m.role == "tool" and not m.is_error]


def answer_quotes_results(content: str, messages: Sequence[Message]) -> bool:
    """Whether ``content`` contains every tool result of the run — and there were two of them."""
    results = tool_results_of(messages)
    return len(results) >= 2 and all(r in content for r in results)
