"""The JSON-fallback tool transport, for providers that cannot carry tools natively.

When ``provider.carries_tools`` is ``False`` the loop does not send tool specs on
the wire.  Instead the system prompt gains a contract (:func:`contract_text`):
after its prose the model writes one JSON block per call,
``{"tool": "<name>", "arguments": {...}}``.  The reply is scanned with
string-aware brace matching (:func:`parse_reply`): quotes, escapes and nested
objects are honoured, fenced ```` ```json ```` blocks are accepted, several blocks
may follow each other.  Parsed blocks are removed from the text; a block that is
not valid JSON (``NaN`` and ``Infinity`` are not), or valid JSON that is not a call
— one naming ``"tool"`` or ``"arguments"`` twice included — stays in the text and is
not executed (running a guess is worse than showing the model's text).  A block
inside a think block is the model thinking, not a call (:mod:`.thinking`).  A call
whose arguments are past the JSON policy (:mod:`agentactors._json`: nesting,
integer digits) is marked ``unparseable``, as on the native transport: the tool
does not run and the model reads why.  A block that starts as a call and never
closes holds everything after it: no call is read from inside it.  A reply cut at
``max_tokens`` inside such a block makes it a call marked ``unparseable`` (cut off),
as the native wires mark one — never the answer.  Scanning is linear in the text,
whatever it holds (braces that never close, open strings, many blocks).

:class:`StreamFilter` applies the same rules to a stream of text deltas: prose
is released as it arrives and only the text from a possible block start (a
``{`` or a code fence) is held until that block is resolved, so a user watching
the stream never sees the JSON of a call.
"""

from __future__ import annotations

import json
import re
from array import array
from bisect import bisect_left
from collections.abc import Sequence
from typing import Any

import attrs

from .._json import MAX_DEPTH, MAX_INT_DIGITS, MAX_TEXT_CHARS, repeated_key_problem, value_problem
from ..messages import Message, ToolCall, ToolSpec
from ..parts import MediaPart, Text
from .thinking import ANY_CLOSE_TAG, OPEN_TAG, block_end

__all__ = ["ParsedReply", "StreamFilter", "contract_text", "parse_reply", "render_block", "to_wire_messages"]

_FENCE = "```"
# A fence's info string: a language word such as ``json`` on the fence's own line.
_INFO = re.compile(r"[A-Za-z0-9_+\-]*[ \t]*\n")
_MANY_BLANKS = re.compile(r"\n{3,}")
# What a brace match looks at; everything else is skipped over in C.
_SPECIAL = re.compile(r'[{}"\\]')
# A block that starts as a call does: its first key is "tool" or "arguments".
_CALL_START = re.compile(r'\{\s*"(?:tool|arguments)"\s*:')
# A cut call's name (its first key's string, whole or cut) and where its arguments begin.
_CUT_NAME = re.compile(r'\{\s*"tool"\s*:\s*"((?:[^"\\]|\\.)*)("?)')
_CUT_ARGS = re.compile(r'\s*,\s*"arguments"\s*:\s*')
#: What a call cut off at ``max_tokens`` says, as the native wires say it.
CUT_OFF = "the arguments were cut off at max_tokens; ask for less or split the call"


def contract_text(tools: Sequence[ToolSpec]) -> str:
    """The system-prompt section that teaches a model without native tools how to call them.

    Lists every tool with its description and JSON Schema, then the block format.
    """
    lines = [
        "You can call tools. To call one, finish your reply with one JSON block per call, "
        "each on its own lines after your text, exactly in this form:",
        '{"tool": "<tool name>", "arguments": {<arguments as a JSON object>}}',
        "Write nothing after the blocks. The results arrive in the next message; then answer "
        "or call more tools. When you need no tool, answer in plain text without any such block.",
        "",
        "Available tools:",
    ]
    for spec in tools:
        desc = spec.description.strip().replace("\n", " ")
        schema = json.dumps(spec.parameters, separators=(",", ":"), ensure_ascii=False, sort_keys=True)
        lines.append(f"- {spec.name}: {desc}" if desc else f"- {spec.name}")
        lines.append(f"  arguments schema: {schema}")
    return "\n".join(lines)


@attrs.frozen(slots=True)
class ParsedReply:
    """A reply split into the text the user reads and the calls the model asked for."""

    text: str
    calls: tuple[ToolCall, ...] = ()


def match_brace(text: str, start: int) -> int | None:
    """The index of the ``}`` closing the ``{`` at ``start``, or ``None`` if it never closes.

    String-aware: braces inside JSON strings (with ``\\"`` and ``\\\\`` escapes)
    do not count.  Only the characters that matter are visited (found in C): a long
    string inside a block costs one step.
    """
    end = _follow_braces(text, start, 0, False, -1)[0]
    return end if end >= 0 else None


def _follow_braces(text: str, start: int, depth: int, in_string: bool, skip: int) -> tuple[int, int, bool, int]:
    """Braces followed through ``text`` from ``start``, from the state a scan stopped in: ``depth`` open, inside a
    string or not, ``skip`` the index of a character a backslash escapes (``-1``: none).

    :returns: ``(index of the } that closes depth 0, 0, False, -1)`` or, when ``text`` ends first,
        ``(-1, depth, in_string, skip)``: the state to go on from with the next piece (a stream's next delta).
    """
    for found in _SPECIAL.finditer(text, start):
        i = found.start()
        if i == skip:
            continue
        ch = text[i]
        if in_string:
            if ch == "\\":
                skip = i + 1
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return i, 0, False, -1
    return -1, depth, in_string, skip


class _Closes:
    """Where every brace from ``start`` on closes, worked out at once: what :func:`match_brace` answers.

    Made the first time a brace of a text never closes.  From then on each later brace would be
    matched to the end of the text again (a text of many unclosed braces took time quadratic in its
    length); this answers every one of them from one backward pass over the characters that matter.
    For each of them, and each state a forward scan may be in there (outside a string, or inside
    one), it records where that scan meets its first unmatched ``}``.
    """

    __slots__ = ("_at", "_out")

    def __init__(self, text: str, start: int) -> None:
        at = array("q", (m.start() for m in _SPECIAL.finditer(text, start)))
        k = len(at)
        # The index (into ``at``) of the first unmatched ``}`` a scan starting at at[j] meets: starting
        # outside a string (out_) or inside one (in_); -1 for none.  Two entries past the end: -1.
        out_ = array("q", [-1]) * (k + 2)
        in_ = array("q", [-1]) * (k + 2)
        for j in range(k - 1, -1, -1):
            p = at[j]
            ch = text[p]
            if ch == "\\":
                # Inside a string it escapes the next character: skip it when it is one that matters.
                in_[j] = in_[j + 2] if j + 1 < k and at[j + 1] == p + 1 else in_[j + 1]
                out_[j] = out_[j + 1]
            elif ch == '"':
                in_[j] = out_[j + 1]
                out_[j] = in_[j + 1]
            elif ch == "{":
                in_[j] = in_[j + 1]
                inner = out_[j + 1]  # where this brace closes; the scan goes on after it
                out_[j] = -1 if inner < 0 else out_[inner + 1]
            else:  # "}"
                in_[j] = in_[j + 1]
                out_[j] = j
        self._at = at
        self._out = out_

    def match(self, brace: int) -> int | None:
        """:func:`match_brace` of the ``{`` at ``brace`` (at or after the start this was made from)."""
        at = self._at
        j = bisect_left(at, brace)
        close = self._out[j + 1]
        return at[close] if close >= 0 else None


# A call block as the scanner reads it: (name, arguments, raw arguments text, why they are refused or None).
_Found = tuple[str, dict[str, Any], str | None, str | None]


def _refuse_constant(name: str) -> Any:
    # NaN and Infinity are not JSON: a block holding one is text, as a block that does not parse is.
    raise ValueError(f"{name} is not JSON")


def _long_int(digits: str) -> Any:
    # Python refuses an integer of more digits than its limit: the call is still a call, marked below.
    return int(digits) if len(digits) <= MAX_INT_DIGITS else _TOO_LONG


_TOO_LONG = object()


class _Objects:
    """The parser's ``object_pairs_hook`` for one block: each object as a dict, and the keys it named twice.

    ``repeated`` maps an object's ``id`` to those keys (its first repeat of each): an object of the value
    decoded lives as long as that value, so the ids stay its own while the caller reads them.
    """

    __slots__ = ("repeated",)

    def __init__(self) -> None:
        self.repeated: dict[int, list[str]] = {}

    def __call__(self, pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        value = dict(pairs)
        if len(value) != len(pairs):
            seen: set[str] = set()
            keys = self.repeated[id(value)] = []
            for key, _ in pairs:
                if key in seen and key not in keys:
                    keys.append(key)
                seen.add(key)
        return value

    def first_in(self, value: Any) -> str | None:
        """The first key some object inside ``value`` (itself included) named twice, or ``None``."""
        if not self.repeated:
            return None
        stack = [value]
        while stack:
            item = stack.pop()
            if isinstance(item, dict):
                keys = self.repeated.get(id(item))
                if keys:
                    return keys[0]
                stack.extend(item.values())
            elif isinstance(item, list):
                stack.extend(item)
        return None


def _decode(text: str) -> tuple[Any, _Objects]:
    """``text`` decoded, and what its objects named twice; an integer longer than Python converts is
    :data:`_TOO_LONG` (:func:`_past_policy`).

    Not the native path's ``loads_bounded(unique_keys=True)``, which refuses a repeated key anywhere: a block
    may repeat one outside its arguments harmlessly, and one repeating ``tool`` or ``arguments`` is no call.

    :raises ValueError: not JSON (NaN and Infinity included), longer than the policy's text, or nested
        past what the parser takes.
    """
    if len(text) > MAX_TEXT_CHARS:
        raise ValueError("longer than the JSON policy takes")
    objects = _Objects()
    try:
        value = json.JSONDecoder(object_pairs_hook=objects, parse_constant=_refuse_constant).decode(text)
    except RecursionError:
        raise ValueError("nested past what the parser takes") from None
    except json.JSONDecodeError:
        raise
    except ValueError:  # an integer past Python's digit limit: JSON still, refused by the policy below
        objects = _Objects()  # (the objects of the attempt that failed are gone: their ids are nobody's)
        decoder = json.JSONDecoder(object_pairs_hook=objects, parse_constant=_refuse_constant, parse_int=_long_int)
        try:
            value = decoder.decode(text)
        except RecursionError:
            raise ValueError("nested past what the parser takes") from None
    return value, objects


def _as_call(block: str) -> _Found | None:
    """The call ``block`` writes, or ``None`` when it is not one (then it stays text and never runs).

    A block naming its ``tool`` or its ``arguments`` twice is none: which one the model meant is a guess.
    Arguments past the JSON policy (:mod:`agentactors._json`: nesting, integer digits) or naming a key twice
    make a call marked ``unparseable``, as on the native transport: the tool does not run and the model
    reads why.
    """
    try:
        value, objects = _decode(block)
    except ValueError:
        return None
    if not isinstance(value, dict):
        return None
    top = objects.repeated.get(id(value), ())
    if "tool" in top or "arguments" in top:
        return None
    name = value.get("tool")
    if not isinstance(name, str) or not name.strip():
        return None
    name = name.strip()
    args = value.get("arguments", {})
    raw: str | None = None
    if isinstance(args, str):
        # Some models double-encode the arguments; accept them when the string is an object.
        raw = args
        try:
            args, objects = _decode(args)
        except ValueError:
            return None
    if args is None:
        args = {}
    if not isinstance(args, dict):
        return None
    repeated = objects.first_in(args)
    if repeated is not None:
        return name, {}, raw, repeated_key_problem("the arguments", repeated)
    problem = _past_policy(args, raw if raw is not None else block)
    if problem is not None:
        return name, {}, raw, problem
    return name, args, raw, None


def _past_policy(args: dict[str, Any], text: str) -> str | None:
    """Why ``args`` (decoded from ``text``) is past the JSON policy, or ``None``."""
    if len(text) <= MAX_INT_DIGITS and text.count("{") + text.count("[") <= MAX_DEPTH:
        return None  # too short for a long integer, too few brackets to be too deep: the usual call
    if _holds(args, _TOO_LONG):
        return f"the arguments hold an integer of more than {MAX_INT_DIGITS} digits"
    return value_problem(args)


def _holds(value: Any, marker: object) -> bool:
    """Whether ``marker`` is anywhere in ``value`` (iterative: the value may be deep)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if item is marker:
            return True
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def _cut_start(text: str, brace: int) -> bool:
    """Whether the never-closing ``{`` at ``brace`` is a call cut off before its first key was whole (``{"to``)."""
    rest = text[brace + 1 : brace + 64].lstrip()
    if not rest or len(text) - brace > 64:  # a bare "{" stays text; '{"' is a key begun — a call's, cut
        return False
    return '"tool"'.startswith(rest.rstrip()) or '"arguments"'.startswith(rest.rstrip())


def _cut_call(text: str, brace: int) -> _Found:
    """The call ``max_tokens`` cut off in the block from ``brace`` to the end of ``text``: its name (as far as it
    was written; ``"tool"`` when none was), no arguments, the arguments' text as far as it was written."""
    name = ""
    raw: str | None = None
    found = _CUT_NAME.match(text, brace)
    if found is not None:
        written = found.group(1)
        try:
            name = json.loads(f'"{written}"')
        except ValueError:  # cut inside an escape
            name = written
        name = name.strip()
        if found.group(2):
            args = _CUT_ARGS.match(text, found.end())
            if args is not None and args.end() < len(text.rstrip()):
                raw = text[args.end() :].rstrip()
    return name or "tool", {}, raw, CUT_OFF


def _fence_body(text: str, start: int) -> tuple[int, int]:
    """For a fence opening at ``start``: ``(body_start, close_index)``; ``close_index`` is
    ``len(text)`` when the fence is never closed."""
    pos = start + len(_FENCE)
    info = _INFO.match(text, pos)
    body_start = info.end() if info else pos
    close = text.find(_FENCE, body_start)
    return body_start, (close if close >= 0 else len(text))


class _Scanner:
    """Walks a text once, splitting it into kept text and parsed calls.

    Linear in the text: the next brace, fence and think tag are each searched for again only once
    the walk has passed them, and braces that never close are matched by :class:`_Closes`.
    """

    __slots__ = ("_counter", "_first", "_prefix", "calls", "reset")

    def __init__(self, id_prefix: str, first_index: int) -> None:
        self._prefix = id_prefix
        self._first = first_index
        self._counter = first_index
        self.calls: list[ToolCall] = []
        self.reset = -1  # where a closing think tag met in a fence's scan ended (in the fence's text)

    def _add(self, found: _Found) -> None:
        name, args, raw, problem = found
        self._counter += 1
        call_id = f"{self._prefix}{self._counter}"
        if problem is None:
            self.calls.append(ToolCall(id=call_id, name=name, arguments=args, raw_arguments=raw))
        else:
            self.calls.append(
                ToolCall(
                    call_id, name, raw_arguments=raw, arguments_error="unparseable", arguments_error_detail=problem
                )
            )

    def scan(self, text: str, *, fences: bool = True, think: bool = False, strays: bool = True,
             cut: bool = False) -> str:
        """``text`` without the call blocks it holds (which join :attr:`calls`).

        ``think``: a call inside a think block is thinking, not a call (a reply, and the fences in it; the
        stream's text has its think blocks removed already).  A reply with no opening tag but a closing
        one began thinking before its text (the vendor's template wrote the opening tag): what comes
        before that tag is thinking too (``strays``: a fence's scan looks for that tag only while the
        reply's does).  Met inside a fence, it ends the fence's scan and :attr:`reset` says where it ended.

        A block that starts as a call (its first key ``"tool"`` or ``"arguments"``) and never closes holds,
        by its braces, everything after it: no call is read from it (it stays text).  ``cut``: the reply
        was cut off at ``max_tokens`` at the end of ``text``, so such a block is that call, cut: a call
        marked ``unparseable`` (:data:`CUT_OFF`), as the native wires mark one.
        """
        kept: list[str] = []
        i = 0
        n = len(text)
        closes: _Closes | None = None
        brace = text.find("{")
        fence = text.find(_FENCE) if fences else -1
        tag = OPEN_TAG.search(text) if think else None
        stray = ANY_CLOSE_TAG.search(text) if think and strays and (tag is None or not fences) else None
        while i < n:
            # Each next position is searched for again only once the walk is past it.
            if 0 <= brace < i:
                brace = text.find("{", i)
            if 0 <= fence < i:
                fence = text.find(_FENCE, i)
            if tag is not None and tag.start() < i:
                tag = OPEN_TAG.search(text, i)
            if stray is not None and stray.start() < i:
                stray = ANY_CLOSE_TAG.search(text, i)
            first = brace if brace >= 0 else n
            if 0 <= fence < first:
                first = fence
            if tag is not None and tag.start() < first:
                first = tag.start()
            if stray is not None and stray.start() < first:
                first = stray.start()
            if first == n:
                kept.append(text[i:])
                break
            if tag is not None and first == tag.start():
                after = block_end(text, tag.group(1), tag.end())
                kept.append(text[i:after])  # thinking: kept as written, never scanned for calls
                i = after
                continue
            if stray is not None and first == stray.start():
                # Everything so far was thinking: its calls were drafts.
                del self.calls[:]
                self._counter = self._first
                if not fences:  # a fence's scan: the reply's scan goes on after the tag
                    self.reset = stray.end()
                    return ""
                kept = [text[: stray.end()]]
                i = stray.end()
                stray = None
                continue
            if first == fence:
                kept.append(text[i:fence])
                body_start, close = _fence_body(text, fence)
                # An unclosed fence (a forgotten or cut-off closing line) runs to the end of the text.
                closing = _FENCE if close < n else ""
                before = len(self.calls)
                inner = self.scan(
                    text[body_start:close], fences=False, think=think, strays=stray is not None, cut=cut and not closing
                )
                if self.reset >= 0:  # a closing tag in the fence: all before it was thinking
                    i = body_start + self.reset
                    self.reset = -1
                    kept = [text[:i]]
                    stray = None
                    continue
                if len(self.calls) > before and not inner.strip():
                    pass  # a fence holding only calls disappears with them
                elif len(self.calls) > before:
                    kept.append(text[fence:body_start] + inner + closing)
                else:
                    kept.append(text[fence : close + len(closing)])
                i = close + len(closing)
                continue
            kept.append(text[i:brace])
            end = match_brace(text, brace) if closes is None else closes.match(brace)
            if end is None:
                if stray is None and (_CALL_START.match(text, brace) is not None or (cut and _cut_start(text, brace))):
                    # A call that never closes: what follows is inside it.  Cut at max_tokens, it is a call cut off.
                    if cut:
                        self._add(_cut_call(text, brace))
                    else:
                        kept.append(text[brace:])
                    break
                # Never closes: not a block.  Go on after the brace so a later block still counts; the
                # braces after it are matched from one pass, not each to the end of the text again.
                if closes is None:
                    closes = _Closes(text, brace + 1)
                kept.append("{")
                i = brace + 1
                continue
            found = _as_call(text[brace : end + 1])
            if found is None:
                # Invalid JSON, or JSON that is not a call: left in the text as a whole, never run.
                kept.append(text[brace : end + 1])
            else:
                self._add(found)
            i = end + 1
        return "".join(kept)


def _tidy(text: str) -> str:
    return _MANY_BLANKS.sub("\n\n", text).strip()


def parse_reply(text: str, *, id_prefix: str = "call_", first_index: int = 0, cut: bool = False) -> ParsedReply:
    """Split a JSON-fallback reply into prose and calls.

    Call ids are ``f"{id_prefix}{k}"`` for ``k = first_index + 1, ...`` (give each
    step its own prefix so ids stay unique in a run).  Whitespace left where a
    block was removed is tidied: no more than one blank line, no leading or
    trailing whitespace.  A block inside a think block is thinking, not a call
    (:mod:`.thinking`).  ``cut``: the reply stopped at ``max_tokens``; a call block
    it ends inside is a call cut off, marked ``unparseable`` (never run, never the
    answer).  Never raises on any input; linear in the text.
    """
    if "{" not in text:
        return ParsedReply(text.strip())
    scanner = _Scanner(id_prefix, first_index)
    kept = scanner.scan(text, think="<" in text, cut=cut)
    if not scanner.calls:
        return ParsedReply(text.strip())
    return ParsedReply(_tidy(kept), tuple(scanner.calls))


# What the stream filter holds: nothing, a block from its ``{``, or a fence from its opening.
_NONE, _BRACE, _OPEN_FENCE = 0, 1, 2


class StreamFilter:
    """Holds back streamed JSON-fallback text from a possible block start until the block resolves.

    ``feed(delta)`` returns the text that may be shown now; ``finish()`` returns
    whatever was still held (text that turned out not to be a call) at the end.
    Whitespace before a held block is held with it, so the shown text matches
    :func:`parse_reply`'s tidied text as closely as a stream allows.

    A delta costs its own characters: a held block is kept as its pieces and followed
    where the last delta left it (the brace depth, the string, the escape; the last
    characters where a closing fence may begin), then joined once, when it resolves.
    """

    __slots__ = ("_depth", "_escape", "_in_string", "_kind", "_parts", "_pending", "_prefix", "_started", "_tail")

    def __init__(self) -> None:
        self._kind = _NONE
        self._parts: list[str] = []  # the held block's text, as it arrived
        self._prefix = ""  # one or two backticks at the end of a delta: maybe a fence
        self._depth = 0
        self._in_string = False
        self._escape = False  # the next character is escaped (a backslash ended the last delta)
        self._tail = ""  # a held fence's last characters, where its closing fence may begin
        self._pending: list[str] = []  # whitespace shown only if prose follows it
        self._started = False

    def feed(self, delta: str) -> str:
        if not delta:
            return ""
        kind = self._kind
        if kind == _NONE:
            if self._prefix:
                delta = self._prefix + delta
                self._prefix = ""
            return self._release(delta)
        end = self._braces(delta, 0) if kind == _BRACE else self._fence_close(delta)
        self._parts.append(delta if end < 0 else delta[:end])
        if end < 0:
            return ""
        block = "".join(self._parts)
        self._parts = []
        self._kind = _NONE
        out: list[str] = []
        self._resolve(block, out)
        if end < len(delta):
            out.append(self._release(delta[end:]))
        return "".join(out)

    def finish(self, *, cut: bool = False) -> str:
        """What was still held, shown now (``cut``: the reply stopped at ``max_tokens``; a call block it ended
        inside is a call cut off, never shown)."""
        text = "".join(self._parts) if self._kind != _NONE else self._prefix
        self._kind = _NONE
        self._parts = []
        self._prefix = ""
        out: list[str] = []
        if text:
            # What never resolved is text, but the calls in it are still calls (as parse_reply finds them).
            self._show(_Scanner("", 0).scan(text, cut=cut), out)
        self._pending = []
        return "".join(out)

    def _show(self, prose: str, out: list[str]) -> None:
        if not self._started:
            prose = prose.lstrip()
        if not prose:
            return
        body = prose.rstrip()
        if not body:
            self._pending.append(prose)
            return
        if self._pending:
            out.append("".join(self._pending))
            self._pending = []
        out.append(body)
        if len(body) < len(prose):
            self._pending.append(prose[len(body) :])
        self._started = True

    def _resolve(self, block: str, out: list[str]) -> None:
        """A resolved block: shown as it is, or without the calls it holds."""
        scanner = _Scanner("", 0)
        kept = scanner.scan(block)
        self._show(kept if scanner.calls else block, out)

    def _braces(self, text: str, start: int) -> int:
        """Follow the held block through ``text`` from ``start``: the index past its closing ``}``, or -1."""
        end, depth, in_string, skip = _follow_braces(
            text, start, self._depth, self._in_string, start if self._escape else -1
        )
        # (An escape pending at the end of this piece applies to the next piece's first character.)
        self._depth, self._in_string, self._escape = depth, in_string, end < 0 and skip == len(text)
        if end >= 0:
            return end + 1
        return -1

    def _fence_close(self, delta: str) -> int:
        """The index in ``delta`` past the held fence's closing fence, or -1 (then ``delta`` is held)."""
        tail = self._tail
        close = (tail + delta).find(_FENCE)
        if close < 0:
            self._tail = (tail + delta[-2:])[-2:]
            return -1
        self._tail = ""
        return close - len(tail) + len(_FENCE)

    def _release(self, text: str) -> str:
        out: list[str] = []
        i = 0
        n = len(text)
        brace = text.find("{")
        tick = text.find("`")
        while i < n:
            if 0 <= brace < i:
                brace = text.find("{", i)
            if 0 <= tick < i:
                tick = text.find("`", i)
            if brace < 0 and tick < 0:
                self._show(text[i:], out)
                break
            start = brace if tick < 0 or (0 <= brace < tick) else tick
            self._show(text[i:start], out)
            if start == tick:
                if n - tick < len(_FENCE) and _FENCE.startswith(text[tick:]):
                    self._prefix = text[tick:]  # maybe the start of a fence: wait for more
                    break
                if not text.startswith(_FENCE, tick):
                    self._show("`", out)  # inline code, not a fence
                    i = tick + 1
                    continue
                close = text.find(_FENCE, tick + len(_FENCE))
                if close < 0:
                    self._kind = _OPEN_FENCE
                    self._parts = [text[tick:]]
                    self._tail = text[max(tick + len(_FENCE), n - 2) :]
                    break
                end = close + len(_FENCE)
            else:
                self._depth, self._in_string, self._escape = 0, False, False
                end = self._braces(text, brace)
                if end < 0:
                    self._kind = _BRACE
                    self._parts = [text[brace:]]
                    break
            self._resolve(text[start:end], out)
            i = end
        return "".join(out)


_BROKEN_SHOWN = 2_000  # characters of a broken call's text sent back to the model


def render_block(call: ToolCall) -> str:
    """The contract block of ``call``, as the model would have written it.

    A call whose arguments did not parse (cut off, not JSON) or were missing (``arguments_error``) is not a block
    the model wrote: it goes back as a marker holding what the model wrote (its first 2,000 characters, as a
    JSON string, so none of it reads back as a block), never as a whole call it did not make.
    """
    if call.arguments_error is None:
        return json.dumps({"tool": call.name, "arguments": call.arguments}, ensure_ascii=False)
    return _broken_call_text(call)


def _broken_call_text(call: ToolCall) -> str:
    """The marker for a call that was not run because its arguments were unreadable (the rare path)."""
    name = json.dumps(call.name, ensure_ascii=False)
    if call.arguments_error == "empty":
        return f"[a call of tool {name} with no arguments — not run]"
    why = "cut off" if call.arguments_error_detail == CUT_OFF else "text that does not parse"
    raw = call.raw_arguments or ""
    more = len(raw) - _BROKEN_SHOWN
    shown = json.dumps(raw[:_BROKEN_SHOWN] if more > 0 else raw, ensure_ascii=False)
    tail = f" … ({more} more characters)" if more > 0 else ""
    text = f"[a call of tool {name} whose arguments were {why} — not run; its arguments as written: {shown}{tail}]"
    return text.encode("utf-8", "replace").decode("utf-8")  # a lone surrogate the vendor escaped cannot be sent


def _results_message(entries: list[str], media: list[MediaPart]) -> Message:
    """Consecutive results as one user message: their entries, then the media the tools returned (an image)."""
    text = "Tool results:\n\n" + "\n\n".join(entries)
    return Message.user([Text(text), *media]) if media else Message.user(text)


def _defused(content: str) -> str:
    """A result's text with each line that reads as a result entry's header (``[name · call id · ok]``)
    escaped (``\\[``): a result cannot pass itself off as another's (a fake ``ok`` for a call that failed)."""
    lines = content.split("\n")
    for k, line in enumerate(lines):
        if line.startswith("[") and "· call " in line and line.rstrip().endswith("]"):
            lines[k] = "\\" + line
    return "\n".join(lines)


def to_wire_messages(messages: Sequence[Message]) -> list[Message]:
    """The conversation as a provider without native tools can carry it.

    The run keeps its conversation in the canonical shape (assistant messages
    with ``tool_calls``, ``tool`` messages with results) so its record reads the
    same on both transports.  On the wire, a call becomes its contract block
    after the assistant's text, and consecutive results become one user message
    (with the media parts the tools returned, after the text); a call whose arguments
    did not parse goes back as a marker holding what the model wrote (:func:`render_block`),
    not as a whole call it never made; a line of a result
    that reads as an entry's header is escaped (``\\[``), so a result cannot pass
    itself off as another's.  The entries of a
    run of results are joined once, when the run ends (not message by message:
    a step of many results costs their size, not its square).
    """
    out: list[Message] = []
    entries: list[str] = []  # the results of the run of tool messages in progress
    media: list[MediaPart] = []
    for m in messages:
        if m.role == "tool":
            status = "error" if m.is_error else "ok"
            content = m.content if "· call " not in m.content else _defused(m.content)
            entries.append(f"[{m.name or 'tool'} · call {m.tool_call_id} · {status}]\n{content}")
            media.extend(m.media)
            continue
        if entries:
            out.append(_results_message(entries, media))
            entries, media = [], []
        if m.role == "assistant" and m.tool_calls:
            blocks = "\n".join(render_block(c) for c in m.tool_calls)
            text = f"{m.content}\n{blocks}" if m.content else blocks
            out.append(Message.assistant(text, reasoning=m.reasoning, provider_data=m.provider_data))
        else:
            out.append(m)
    if entries:
        out.append(_results_message(entries, media))
    return out
