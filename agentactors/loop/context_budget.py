"""Keeping a request within ``context_budget_chars``: oldest tool results give way first.

:func:`fit_to_budget` returns the messages to *send*; the run's own conversation
(``RunResult.messages``) keeps every message whole, so the record stays complete.

Rules (``docs/loop.md``, "Context budget"):

1. Never touched: the system message(s), the first and the last user message (the
   conversation's start, which some vendors require to be a user turn, and the latest
   request or steer the model is answering) and the last :data:`KEEP_LAST` messages
   (extended backwards so that a tool-call message and its results stay together).
2. First, tool results are trimmed oldest first to a verbatim head plus a stub
   saying how much was removed, until the total fits.  A trimmed result loses its
   media parts (images, documents, audio) too, and its stub counts them.
3. If that is not enough, whole older exchanges are dropped oldest first; an
   assistant message that made calls goes together with all of its results, so
   call/result pairs are never broken.

The size of a message is its text plus its calls' names and argument text plus,
for each media part, its ``estimated_tokens`` times :data:`CHARS_PER_TOKEN` (the
gateway's estimate: about four characters a token).  ``reasoning`` and
``provider_data`` are not counted.  The budget is best effort (the protected
messages alone may exceed it).

A run with a budget holds a :class:`ContextBudget` (one per seat): it remembers each message's size and
trimmed form, so that every step measures and trims only the messages new to it, not the whole
conversation again (a run of thousands of steps was quadratic).  A run without a budget holds nothing.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Sequence
from itertools import compress

from ..messages import Message
from ..parts import Audio, Document, MediaPart
from .json_transport import to_wire_messages

__all__ = [
    "CHARS_PER_TOKEN",
    "HEAD_CHARS",
    "KEEP_LAST",
    "ContextBudget",
    "fit_to_budget",
    "message_chars",
    "stub_text",
    "wire_chars",
]

#: The most recent messages are never trimmed or dropped.
KEEP_LAST = 6
#: A trimmed tool result keeps this many leading characters verbatim (a few fewer not to split a character).
HEAD_CHARS = 200
#: A media part counts as its ``estimated_tokens`` times this many characters.
CHARS_PER_TOKEN = 4
# How far back a cut looks for the start of the character (grapheme) it would split; past it, it cuts anyway.
_GRAPHEME_BACKOFF = 32
# The start of a JSON object or array (a bracket that opens a log tag, "[INFO]", is not one).
_JSON_START = re.compile(r'\s*(?:\{\s*["}]|\[\s*(?:[\[{"\]\d-]|true\b|false\b|null\b))')
# The cap's marker line (agentactors.tools.results.truncation_marker) a result may start with.
_CAP_MARKER = "[truncated: "


def _media_words(media: Sequence[MediaPart]) -> str:
    counts: dict[str, int] = {}
    for part in media:
        word = "document" if isinstance(part, Document) else "audio clip" if isinstance(part, Audio) else "image"
        counts[word] = counts.get(word, 0) + 1
    return " and ".join(f"{n} {word}{'s' if n != 1 else ''}" for word, n in counts.items())


def stub_text(removed: int, media: Sequence[MediaPart] = (), *, cut_json: bool = False) -> str:
    """The note a trimmed result ends with: how many chars (and which media parts) were removed.

    ``cut_json``: the head left is the start of a JSON value, which the cut left incomplete: the note says so,
    so that the model does not read the fragment as the whole value.
    """
    what = f"{removed:,} more chars" if removed else ""
    if media:
        what = f"{what} and {_media_words(media)}" if what else _media_words(media)
    verb = "was" if not removed and len(media) == 1 else "were"
    json_note = " (the JSON above is cut off mid-structure: it is incomplete)" if cut_json else ""
    return f"\n[trimmed: {what} of this earlier tool result {verb} removed to fit the context budget{json_note}]"


def message_chars(message: Message) -> int:
    """The size a message counts for: see the module docstring."""
    size = len(message.content)
    for call in message.tool_calls:
        size += len(call.name) + len(call.arguments_json)
    role = message.role
    if role == "tool" or role == "user":  # the messages that may carry media
        for part in message.media:
            size += part.estimated_tokens * CHARS_PER_TOKEN
    return size


def wire_chars(message: Message) -> int:
    """The size of ``message`` as the JSON transport sends it (``carries_tools=False``): a call as its contract
    block, a result under its header (:func:`~agentactors.loop.json_transport.to_wire_messages`).  A measure
    for :func:`fit_to_budget` on that transport; a result is counted with a header of its own, so a run of
    results sent as one message counts a little over its size."""
    if not message.tool_calls and message.role != "tool":
        return message_chars(message)
    return sum(map(message_chars, to_wire_messages((message,))))


def _extends(char: str) -> bool:
    """Whether ``char`` belongs to the character before it: a combining or spacing mark, a joiner, a variation
    selector, an emoji skin-tone modifier or the low half of a surrogate pair."""
    return (
        "\u200c" <= char <= "\u200d"
        or "\ufe00" <= char <= "\ufe0f"
        or "\U0001f3fb" <= char <= "\U0001f3ff"
        or "\U000e0020" <= char <= "\U000e007f"  # tag characters (subdivision flags)
        or "\U000e0100" <= char <= "\U000e01ef"
        or "\udc00" <= char <= "\udfff"
        or unicodedata.category(char) in ("Mn", "Mc", "Me")
    )


def _regional(char: str) -> bool:
    return "\U0001f1e6" <= char <= "\U0001f1ff"


def _head(text: str) -> str:
    """The first :data:`HEAD_CHARS` characters of ``text``, a few fewer when the cut would split a character
    the reader sees as one (a grapheme): an accent from its letter, an emoji sequence joined by U+200D, a skin
    tone or a flag's second half, a surrogate pair written as two code points (half of one is a lone surrogate,
    which no UTF-8 request body carries).  A run of marks longer than the look-back is cut where it falls."""
    cut = HEAD_CHARS
    if len(text) <= cut:
        return text
    if text[cut - 1 : cut + 1].isascii():  # the usual case: no ASCII character joins another
        return text[:cut]
    start = cut
    while cut > 0 and start - cut < _GRAPHEME_BACKOFF:
        after, before = text[cut], text[cut - 1]
        if _extends(after) or before == "\u200d":
            cut -= 1
            continue
        if _regional(after) and _regional(before):
            run = 0
            while run < cut and _regional(text[cut - 1 - run]):
                run += 1
            if run % 2:  # the cut falls between the two halves of a flag
                cut -= 1
        break
    else:
        cut = start  # no boundary close enough: cut where it falls, but never inside a surrogate pair
        if "\ud800" <= text[cut - 1] <= "\udbff":
            cut -= 1
    return text[:cut]


def _trimmed_text(message: Message) -> str | None:
    """What an unprotected tool result is trimmed to, or ``None`` when trimming would not make it smaller."""
    content = message.content
    media = message.media
    head = _head(content)
    removed = len(content) - len(head)
    best: str | None = None
    if removed:
        best = head + stub_text(removed, media, cut_json=_starts_json(head))
    if media:  # the whole text and a note may be shorter than the head and a longer one
        whole = content + stub_text(0, media)
        if best is None or len(whole) < len(best):
            best = whole
    if best is None or len(best) >= len(content) + _media_chars(media):
        return None
    return best


def _starts_json(head: str) -> bool:
    """Whether ``head`` starts a JSON object or array (after the cap's marker line, when it has one)."""
    if head.startswith(_CAP_MARKER):
        head = head.partition("\n")[2]
    return _JSON_START.match(head) is not None


def _media_chars(media: Sequence[MediaPart]) -> int:
    return sum(part.estimated_tokens for part in media) * CHARS_PER_TOKEN


def _protected(messages: Sequence[Message]) -> list[bool]:
    n = len(messages)
    keep = [False] * n
    first_user_seen = False
    last_user = -1
    for i, m in enumerate(messages):
        if m.role == "system":
            keep[i] = True
        elif m.role == "user":
            last_user = i
            if not first_user_seen:
                keep[i] = True
                first_user_seen = True
    if last_user >= 0:
        keep[last_user] = True
    tail = max(0, n - KEEP_LAST)
    # A tail starting among tool results would split them from their call: move it back to the call.
    while tail > 0 and messages[tail].role == "tool":
        tail -= 1
    for i in range(tail, n):
        keep[i] = True
    return keep


def _trim(m: Message) -> tuple[str, int] | None:
    """``m``'s trimmed text (:func:`_trimmed_text`) and the chars trimming saves; ``None`` when it would not shrink."""
    text = _trimmed_text(m)
    return None if text is None else (text, len(m.content) + _media_chars(m.media) - len(text))


def _trimmed_message(m: Message, text: str) -> Message:
    """The same tool message with the trimmed text and no media (its vendor data kept)."""
    return Message("tool", text, (), m.tool_call_id, m.name, "", m.provider_data, m.is_error)


class ContextBudget:
    """A run's context budget (:attr:`chars`, the system message already subtracted) and what
    :func:`fit_to_budget` learnt of the messages it was given: each one's size and trimmed form, and where the
    last fit left off.

    The loop makes one per seat of a run with a budget (``LoopState.budget``) and passes it to every step's
    :func:`fit_to_budget` (:meth:`fit`): a message measured once is not measured again — its calls' argument
    JSON is not encoded again, nor its trimmed text cut again — and a conversation that only grew since the
    last fit (a run's, step after step) is fitted from where that fit left off: a step costs what is new plus
    copying the conversation into the request's tuple, not a walk over the whole conversation.

    Why resuming gives what a fit from scratch gives: a conversation that grew only adds size, so each old
    result trimmed before the last fit's protected tail is trimmed again (the total is over the budget at each
    of them as it was), and — when the total after trimming is not smaller than the last one — each old group
    dropped before that tail is dropped again.  The protected tail only moves forward.  When the total after
    trimming is smaller (results that left the protected tail trimmed away more than the new messages add: a
    step of one call after one of three), a fit from scratch stops dropping sooner: the newest groups dropped
    are given back while the rest fits (:meth:`_undrop`), the drops not worked out again from the start (every
    few steps a walk over the whole conversation: quadratic).  A conversation that is not the last one grown (a
    handoff's, a typed run's request) is fitted afresh.

    A message is known by its identity, and held: an object that died could leave its ``id`` to a new one, so
    an entry keeps its message alive.  Messages are immutable and the conversation holds them for the run; one
    that leaves it (a typed run's request, a replaced conversation) is forgotten once the entries outnumber
    twice the messages given, so the cache stays within the conversation's size.  One measure at a time: a
    different one (another transport) starts afresh.
    """

    __slots__ = (
        "_cut_at",
        "_dropped",
        "_dropped_at",
        "_first_user",
        "_fitted_for",
        "_given",
        "_kept",
        "_last_user",
        "_measure",
        "_phase",
        "_raw",
        "_raw_total",
        "_saved",
        "_sizes",
        "_trimmed_at",
        "_trimmed_total",
        "_trims",
        "_user_seen",
        "_view",
        "chars",
    )

    def __init__(self, chars: int) -> None:
        #: The budget in characters.
        self.chars = chars
        # How the last fit ended: 0 as given, 1 with results trimmed, 2 with messages dropped too (trimmed()).
        self._phase = 0
        self._measure: Callable[[Message], int] | None = None
        # id(message) -> (message, its size by _measure): the message held so that its id stays its own.
        self._sizes: dict[int, tuple[Message, int]] = {}
        # id(message) -> its trimmed form and the chars trimming saved, or None when trimming would not shrink it
        # (only ids _sizes holds).
        self._trims: dict[int, tuple[Message, int] | None] = {}
        self._restart()

    def _restart(self) -> None:
        """Forget where the last fit left off (the sizes and trimmed forms of messages stay known)."""
        self._fitted_for = self.chars  # the budget the last fit fitted to
        # The conversation of the last fit, and each message's size as measured.
        self._given: tuple[Message, ...] = ()
        self._raw: list[int] = []
        self._raw_total = 0
        self._first_user = -1  # the index of the first user message (protected), -1 while there is none
        # The last user message (protected too) among the messages before _user_seen: looked for by phase 2 alone,
        # in the messages new to it (a run within its budget pays nothing for it).
        self._last_user = -1
        self._user_seen = 0
        # What is sent for each message: the message, or its trimmed form (trims only before _trimmed_at).
        self._view: list[Message] = []
        # Phase 1 went through the messages before this index: each result there that trims is trimmed.
        self._trimmed_at = 0
        self._saved = 0  # the chars those trims saved
        self._cut_at: dict[int, int] = {}  # index -> chars its trim saved
        # Phase 2, when the last fit needed it: the total it began with (-1: it did not run), the index before
        # which its drops are final, the chars they removed, and which messages are kept.
        self._trimmed_total = -1
        self._dropped_at = 0
        self._dropped = 0
        self._kept: list[bool] = []

    def __repr__(self) -> str:
        return f"ContextBudget({self.chars}, known={len(self._sizes)})"

    def fit(
        self, messages: Sequence[Message], measure: Callable[[Message], int] = message_chars, chars: int | None = None
    ) -> tuple[Message, ...]:
        """:func:`fit_to_budget` of ``messages`` within :attr:`chars`, with what this budget remembers.

        ``chars``: the budget for this fit instead, when the request sends another system message than the one
        :attr:`chars` was left by (a typed run's prompted strategy adds its schema's instruction to it).  A fit
        within another budget than the last one's starts afresh.
        """
        return self._fit(messages, measure, self.chars if chars is None else chars)

    def _fit(
        self, messages: Sequence[Message], measure: Callable[[Message], int], budget: int
    ) -> tuple[Message, ...]:
        """:func:`fit_to_budget`'s result within ``budget``, resumed from where the last fit left off (see the
        class docstring)."""
        msgs = tuple(messages)
        n = len(msgs)
        given = self._given
        k = len(given)
        if measure is not self._measure:
            if self._measure is not None:  # (a new budget's state is fresh already)
                self._sizes.clear()
                self._trims.clear()
                self._restart()
                k = 0
            self._measure = measure
        elif k > n or (k and msgs[:k] != given):  # not the last conversation grown: fitted afresh
            sized = self._sizes
            if len(sized) > 2 * n + 64:  # messages that left the conversation: let them go
                here = {id(m) for m in msgs}
                self._sizes = {key: v for key, v in sized.items() if key in here}
                self._trims = {key: v for key, v in self._trims.items() if key in here}
            self._restart()
            k = 0
        if budget != self._fitted_for:  # (a budget's chars changed, or another budget given to fit_to_budget)
            self._restart()
            self._fitted_for = budget
            k = 0
        self._given = msgs
        if k < n:
            new = msgs[k:] if k else msgs
            measured = self._sizes
            sizes: list[int] = []
            for m in new:
                hit = measured.get(id(m))
                if hit is None:
                    size = measure(m)
                    measured[id(m)] = (m, size)
                    sizes.append(size)
                else:
                    sizes.append(hit[1])
            self._raw.extend(sizes)
            self._raw_total += sum(sizes)
            self._view.extend(new)
            if self._first_user < 0:
                for i in range(k, n):
                    if msgs[i].role == "user":
                        self._first_user = i
                        break
        total = self._raw_total
        if total <= budget:
            self._phase = 0
            return msgs  # (a conversation that grew fitted before too: nothing was trimmed)
        tail = max(0, n - KEEP_LAST)
        while tail > 0 and msgs[tail].role == "tool":
            tail -= 1
        # Phase 1, from where the last fit's left off: only results before the protected tail are trimmed.
        view = self._view
        cut_at = self._cut_at
        total -= self._saved
        saved = self._saved
        i = self._trimmed_at
        while i < n and total > budget:
            if i < tail:
                m = view[i]  # the message measured and held (a copy equal to it may be freed: its id reused)
                if m.role == "tool":
                    known = self._trimmed(m)
                    if known is not None:
                        view[i], cut = known
                        cut_at[i] = cut
                        total -= cut
                        saved += cut
            i += 1
        self._trimmed_at = min(i, tail)
        self._saved = saved
        if total <= budget:
            if self._trimmed_total >= 0:  # the last fit's drops do not hold: this one drops nothing
                self._trimmed_total, self._dropped_at, self._dropped, self._kept = -1, 0, 0, []
            self._phase = 1
            return tuple(view)
        # Phase 2: drop whole unprotected groups oldest first, from where the last fit's drops are final (when this
        # total after phase 1 is smaller, fewer drops may do: the newest of them come back while the rest fits).
        raw = self._raw
        was_last_user = last_user = self._last_user
        for j in range(n - 1, self._user_seen - 1, -1):
            if msgs[j].role == "user":
                last_user = self._last_user = j
                break
        self._user_seen = n
        last = self._trimmed_total
        if last >= 0:
            kept = self._kept
            kept.extend([True] * (n - len(kept)))
            start, dropped = self._dropped_at, self._dropped
            if 0 <= was_last_user < start and was_last_user != last_user:
                # The last fit's last user message, passed over as protected, is not any more: the drops after it
                # are given back, and the walk goes on from it (where a fit from scratch would drop it).
                for j in range(was_last_user + 1, start):
                    if not kept[j]:
                        kept[j] = True
                        dropped -= raw[j] - cut_at.get(j, 0)
                start = was_last_user
            if total < last:
                start, dropped = self._undrop(msgs, kept, start, dropped, total - dropped, budget)
        else:
            kept = [True] * n
            start, dropped = 0, 0
        self._trimmed_total = total
        total -= dropped
        first_user = self._first_user
        i = final = start
        while i < n and total > budget:
            if i <= tail:
                final = i
            end = i + 1
            if msgs[i].tool_calls:
                while end < n and msgs[end].role == "tool":
                    end += 1
            if (
                end <= tail
                and not (i <= first_user < end)
                and i != last_user
                and all(msgs[j].role != "system" for j in range(i, end))
            ):
                for j in range(i, end):
                    size = raw[j] - cut_at.get(j, 0)
                    total -= size
                    dropped += size
                    kept[j] = False
            i = end
        if i <= tail:
            final = i
        self._kept, self._dropped_at, self._dropped = kept, final, dropped
        self._phase = 2
        return tuple(compress(view, kept))

    def trimmed(self) -> int:
        """How many tool results the last fit sent trimmed (0 when it sent the messages as given): what the loop's
        ``context.fitted`` event says, with the messages dropped (the fit's length tells those).

        Counted when asked — by a run that records its events — not by every fit: after drops it is a walk over the
        results trimmed so far.
        """
        if self._phase == 0:
            return 0
        if self._phase == 1:
            return len(self._cut_at)  # (every result trimmed so far is before the tail, and sent trimmed)
        kept = self._kept
        return sum(1 for j in self._cut_at if kept[j])

    def _undrop(
        self, msgs: tuple[Message, ...], kept: list[bool], start: int, dropped: int, sent: int, budget: int
    ) -> tuple[int, int]:
        """The last fit's drops (every unprotected message before ``start``, ``dropped`` chars) with its newest
        groups given back while what is ``sent`` with them still fits: where a fit from scratch of this smaller
        total stops dropping (the groups dropped oldest first are a prefix; a smaller total needs a shorter one).
        Returns the new ``start`` and ``dropped``.

        Its groups are the forward walk's: a message, with the results after it when it made calls (a result
        after a message that made none is a group alone).  It costs the groups it looks at, not a walk from the
        conversation's start.
        """
        raw, cut_at = self._raw, self._cut_at
        while start > 0:
            last = start - 1
            while last >= 0 and kept[last]:  # a protected message (system, first or last user): never dropped
                last -= 1
            if last < 0:
                break
            first = last
            if msgs[last].role == "tool":
                while first > 0 and msgs[first - 1].role == "tool":
                    first -= 1
                first = first - 1 if first > 0 and msgs[first - 1].tool_calls else last
            size = sum(raw[j] - cut_at.get(j, 0) for j in range(first, last + 1))
            if sent + size > budget:
                break
            for j in range(first, last + 1):
                kept[j] = True
            sent += size
            dropped -= size
            start = first
        return start, dropped

    def _trimmed(self, m: Message) -> tuple[Message, int] | None:
        """``m`` trimmed (:func:`_trimmed_text`) and the chars that saves, worked out once; ``m`` is one that
        :meth:`_size` knows."""
        trims = self._trims
        key = id(m)
        if key in trims:
            return trims[key]
        trim = _trim(m)
        known = None if trim is None else (_trimmed_message(m, trim[0]), trim[1])
        trims[key] = known
        return known


def fit_to_budget(
    messages: Sequence[Message],
    budget_chars: int,
    *,
    measure: Callable[[Message], int] = message_chars,
    cache: ContextBudget | None = None,
) -> tuple[Message, ...]:
    """The messages to send so that their size is at most ``budget_chars`` where the rules allow.

    ``measure``: a message's size — :func:`message_chars` (native tools), :func:`wire_chars` (the JSON
    transport).  A trimmed result is counted as its measure less the text and media trimming removed.
    ``cache``: the run's :class:`ContextBudget`, which remembers the sizes and trimmed forms of the messages
    it saw (the same result, without measuring them again).  Returns the input unchanged (as a tuple) when
    it already fits.  Never raises for any input; never alters a protected message.
    """
    if cache is not None:
        return cache._fit(messages, measure, budget_chars)
    sizes = list(map(measure, messages))
    total = sum(sizes)
    if total <= budget_chars:
        return tuple(messages)
    keep = _protected(messages)
    # Phase 1: trim tool results, oldest first.  Only the new texts are made here: a message is built for a
    # trimmed result that survives phase 2 (a long run's every step would otherwise build one for each of its
    # old results, then drop nearly all of them).  (A cache keeps the message made for each trimmed result.)
    trims: dict[int, str] = {}
    for i, m in enumerate(messages):
        if total <= budget_chars:
            break
        if keep[i] or m.role != "tool":
            continue
        known = _trim(m)
        if known is None:
            continue
        trims[i], saved = known
        total -= saved
        sizes[i] -= saved

    # Phase 2: drop whole unprotected groups, oldest first (a group: a message, and the tool results after it
    # when it made calls).
    kept: list[bool] | None = None
    if total > budget_chars:
        n = len(messages)
        kept = [True] * n
        i = 0
        while i < n and total > budget_chars:
            end = i + 1
            if messages[i].tool_calls:
                while end < n and messages[end].role == "tool":
                    end += 1
            if True not in keep[i:end]:
                for j in range(i, end):
                    total -= sizes[j]
                    kept[j] = False
            i = end
    out: list[Message] = list(messages)
    for i, trim in trims.items():
        if kept is None or kept[i]:
            out[i] = _trimmed_message(out[i], trim)
    if kept is not None:
        return tuple(compress(out, kept))
    return tuple(out)
