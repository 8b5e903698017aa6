"""The FakeVendor's batch APIs: OpenAI's Files + ``/v1/batches``, Anthropic's ``/v1/messages/batches``, Gemini's
``batchGenerateContent``.

Each line of a batch is answered exactly as the same request sent alone would be: read by the wire's request
parser, answered by the vendor's decision (an outage, the script queues, the fault plan, the routes, the
default echo or auto tools — :meth:`VendorState.decide`) and encoded as that wire's JSON body, with the same
usage.  A :class:`~agentactors.testing.FakeError` a line is scripted with becomes that item's error.  Lines are
answered when the batch is submitted (so scripts are consumed in submission order); the batch then stays in
progress for :attr:`BatchPlan.polls` status reads and :attr:`BatchPlan.delay` seconds.

Tests reach it as ``fv.batches`` (:class:`FakeBatches`): ``plan(...)`` what the next batches do (stay in
progress, expire part way, fail whole — with an error code of OpenAI's, e.g. ``token_limit_exceeded``),
``cancel(batch_id)``, and count what came: ``submissions`` (the batches, each with its lines' custom ids) and
``single_requests`` (requests to the single-call endpoints).  As OpenAI's, an input file naming one ``custom_id``
twice makes a batch that fails validation at its first status read (``duplicate_custom_id``, with the line);
Anthropic's create request refuses one with a 400.
"""

from __future__ import annotations

import email.parser
import email.policy
import itertools
import json
import re
import threading
import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote

import attrs

from ._fake_batch_shapes import (
    BatchRecord,
    ItemAnswer,
    anthropic_batch,
    anthropic_results,
    gemini_operation,
    openai_batch,
    openai_files,
)
from ._fake_parse import WireRejection
from ._fake_responses import error_response, parse_request, reply_json
from ._fake_script import FakeError, FakeMalformed, RecordedRequest
from ._fake_state import Exchange, VendorState
from ._fake_wires import WireContext

__all__ = ["BatchPlan", "FakeBatch", "FakeBatches"]

_GEMINI_CREATE = re.compile(r"^/v1beta/(?P<model>(?:models|tunedModels)/[^:]+):batchGenerateContent$")
_ROUTES: tuple[tuple[str, re.Pattern[str], str, str], ...] = (
    ("POST", re.compile(r"^/v1/files$"), "openai", "upload"),
    ("GET", re.compile(r"^/v1/files/(?P<id>[^/]+)/content$"), "openai", "content"),
    ("POST", re.compile(r"^/v1/batches$"), "openai", "create"),
    ("GET", re.compile(r"^/v1/batches/(?P<id>[^/]+)$"), "openai", "status"),
    ("POST", re.compile(r"^/v1/batches/(?P<id>[^/]+)/cancel$"), "openai", "cancel"),
    ("POST", re.compile(r"^/v1/messages/batches$"), "anthropic", "create"),
    ("GET", re.compile(r"^/v1/messages/batches/(?P<id>[^/]+)$"), "anthropic", "status"),
    ("GET", re.compile(r"^/v1/messages/batches/(?P<id>[^/]+)/results$"), "anthropic", "results"),
    ("POST", re.compile(r"^/v1/messages/batches/(?P<id>[^/]+)/cancel$"), "anthropic", "cancel"),
    ("POST", _GEMINI_CREATE, "gemini", "create"),
    ("GET", re.compile(r"^/v1beta/batches/(?P<id>[^/:]+)$"), "gemini", "status"),
    ("POST", re.compile(r"^/v1beta/batches/(?P<id>[^/:]+):cancel$"), "gemini", "cancel"),
)
_JSON = "application/json"
_CODE = re.compile(r"[A-Za-z0-9_]+")
#: The vendor's message for a whole batch's failure codes (OpenAI's), used when ``plan(fail_code=...)`` gives none.
FAIL_MESSAGES: Mapping[str, str] = {
    "token_limit_exceeded": "Enqueued token limit reached for {model} in organization org-fake. Limit: 90,000 "
    "enqueued tokens. Please try again once some in_progress batches have been completed.",
}
#: OpenAI's validation error for an input file naming one ``custom_id`` twice (the batch is made, then fails).
DUPLICATE_CUSTOM_ID = ("The custom_id for this request is a duplicate of another request. The custom_id parameter "
                       "must be unique for each request in a batch.")
_Map = Mapping[str, str]
_Served = tuple[int, str, bytes]  # status, content type, body


@attrs.frozen(slots=True)
class BatchPlan:
    """What the batches submitted from now on do.

    :param polls: status reads each batch answers "in progress" before it ends.
    :param delay: seconds (the server's clock) before it ends, at the earliest.
    :param expire_after: the batch *expires*: only its first this many lines are answered, the others expire.
    :param fail: the whole batch fails with this message (no line is answered).
    :param fail_code: the whole batch fails with this error code (OpenAI's ``errors.data[].code``; default
        ``batch_failed``), with ``fail`` as its message or, for a code :data:`FAIL_MESSAGES` knows (OpenAI's
        ``token_limit_exceeded``: the account's enqueued-token limit, nothing ran), the vendor's own.
    """

    polls: int = 0
    delay: float = 0.0
    expire_after: int | None = None
    fail: str | None = None
    fail_code: str | None = None


@attrs.frozen(slots=True)
class FakeBatch:
    """A batch the fake received (a snapshot): its id, wire, model, lines' custom ids, status and reads."""

    id: str
    wire: str
    model: str | None
    custom_ids: tuple[str, ...]
    status: str
    polls: int

    @property
    def size(self) -> int:
        return len(self.custom_ids)


class _Store:
    """Batches and files, behind one lock (the server thread writes, the test's thread reads)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.batches: dict[str, BatchRecord] = {}
        self.inputs: dict[str, str] = {}  # OpenAI batch id -> input file id
        self.plans: dict[str, BatchPlan] = {}  # batch id -> its plan
        self.files: dict[str, bytes] = {}
        self.ids = itertools.count(1)


class FakeBatches:
    """The FakeVendor's batch endpoints (``fv.batches``); see the module docstring."""

    def __init__(self, state: VendorState, *, strict: bool) -> None:
        self._state = state
        self._strict = strict
        self._store = _Store()
        self._plan = BatchPlan()

    # -- what tests use -------------------------------------------------------------------------------

    def plan(self, *, polls: int = 0, delay: float = 0.0, expire_after: int | None = None,
             fail: str | None = None, fail_code: str | None = None) -> None:
        """Set what the batches submitted from now on do (see :class:`BatchPlan`)."""
        if polls < 0 or delay < 0 or (expire_after is not None and expire_after < 0):
            raise ValueError("polls, delay and expire_after must be >= 0")
        if fail_code is not None:
            if not isinstance(fail_code, str):
                raise TypeError(f"fail_code must be a str, not {type(fail_code).__name__}")
            if not _CODE.fullmatch(fail_code):
                raise ValueError(f"fail_code must be an error code (letters, digits, _), not {fail_code!r}")
            fail = fail if fail is not None else FAIL_MESSAGES.get(fail_code, "the batch failed")
        self._plan = BatchPlan(polls, delay, expire_after, fail, fail_code)

    def cancel(self, batch_id: str) -> None:
        """Cancel a batch in progress: its lines end ``cancelled``, unanswered (as the vendors' cancel does)."""
        with self._store.lock:
            record = self._store.batches[batch_id]
            if not record.ended:
                self._end(record, "cancelled", answered=0)

    def clear(self) -> None:
        """Forget every batch and file, and the plan (``fv.clear()`` does this)."""
        self._store = _Store()
        self._plan = BatchPlan()

    def finish(self, batch_id: str) -> None:
        """Let a batch in progress end at its next status read, whatever its plan said (its reads and delay)."""
        with self._store.lock:
            self._store.plans[batch_id] = attrs.evolve(self._store.plans[batch_id], polls=0, delay=0.0)

    @property
    def submissions(self) -> tuple[FakeBatch, ...]:
        """Every batch submitted, oldest first."""
        with self._store.lock:
            return tuple(FakeBatch(b.id, b.wire, b.model, tuple(a.custom_id for a in b.answers), b.status, b.polls)
                         for b in self._store.batches.values())

    @property
    def count(self) -> int:
        """How many batches were submitted."""
        with self._store.lock:
            return len(self._store.batches)

    @property
    def single_requests(self) -> tuple[RecordedRequest, ...]:
        """The requests to the single-call endpoints (not the batch APIs), oldest first."""
        return tuple(r for r in self._state.snapshots() if r.wire != "unknown" and not _is_batch_path(r.method, r.path))

    # -- serving --------------------------------------------------------------------------------------

    @staticmethod
    def route(method: str, path: str) -> tuple[str, str, dict[str, str]] | None:
        """``(wire, action, path parameters)`` for a batch endpoint, else ``None``."""
        for verb, pattern, wire, action in _ROUTES:
            m = pattern.match(path) if verb == method else None
            if m is not None:
                return wire, action, {k: unquote(v) for k, v in m.groupdict().items()}
        return None

    def serve(self, wire: str, action: str, params: Mapping[str, str], headers: Mapping[str, str],
              raw: bytes) -> tuple[int, str, bytes]:
        """``(status, content type, body)`` for one batch API request (credentials already checked)."""
        try:
            return getattr(self, f"_{wire}_{action}")(params, headers, raw)  # type: ignore[no-any-return]
        except _NotFound as exc:
            return _error(wire, 404, str(exc))
        except WireRejection as exc:
            return _error(wire, exc.status, exc.message)

    # OpenAI --------------------------------------------------------------------------------------------

    def _openai_upload(self, params: _Map, headers: _Map, raw: bytes) -> _Served:
        fields = _multipart(headers.get("content-type", ""), raw)
        if fields.get("purpose") != b"batch" or "file" not in fields:
            raise WireRejection(400, "a batch input file needs purpose=batch and a file")
        with self._store.lock:
            file_id = f"file-fake{next(self._store.ids)}"
            self._store.files[file_id] = fields["file"]
        body = {"id": file_id, "object": "file", "bytes": len(fields["file"]), "created_at": int(time.time()),
                "filename": "input.jsonl", "purpose": "batch"}
        return 200, _JSON, _dumps(body)

    def _openai_content(self, params: _Map, headers: _Map, raw: bytes) -> _Served:
        with self._store.lock:
            data = self._store.files.get(params["id"])
        if data is None:
            raise _NotFound(f"No such File object: {params['id']}")
        return 200, "application/jsonl", data

    def _openai_create(self, params: _Map, headers: _Map, raw: bytes) -> _Served:
        body = _object(raw)
        if body.get("endpoint") != "/v1/chat/completions" or body.get("completion_window") != "24h":
            raise WireRejection(400, "endpoint must be /v1/chat/completions and completion_window 24h")
        with self._store.lock:
            data = self._store.files.get(str(body.get("input_file_id")))
        if data is None:
            raise WireRejection(400, f"No such File object: {body.get('input_file_id')}")
        lines = [_object(t) for t in data.splitlines() if t.strip()]
        items, models = [], set()
        for line in lines:
            request = line.get("body")
            where = (line.get("method"), line.get("url"))
            if where != ("POST", "/v1/chat/completions") or not isinstance(request, dict):
                raise WireRejection(400, "each line needs method POST, url /v1/chat/completions and a body")
            models.add(request.get("model"))
            items.append((str(line.get("custom_id")), request))
        if len(models) > 1:
            raise WireRejection(400, "all requests in a batch must use the same model")
        duplicate = _first_duplicate([cid for cid, _ in items])
        plan = None if duplicate is None else BatchPlan(fail=DUPLICATE_CUSTOM_ID, fail_code="duplicate_custom_id")
        record = self._submit("openai", next(iter(models), None), items, headers, path_model=None, plan=plan)
        if duplicate is not None:  # made, then failed by its validation: its first status read says so
            record.failure_line = duplicate + 1
        with self._store.lock:
            self._store.inputs[record.id] = str(body["input_file_id"])
        return self._openai_status({"id": record.id}, headers, b"", read=False)

    def _openai_status(self, params: _Map, headers: _Map, raw: bytes, *, read: bool = True) -> _Served:
        record = self._read(params["id"], read)
        with self._store.lock:
            if record.ended and record.output_file is None and record.failure is None:  # failed: no files (OpenAI's)
                output, errors = openai_files(record)
                record.output_file, record.error_file = f"file-out-{record.id}", f"file-err-{record.id}"
                self._store.files[record.output_file] = output
                self._store.files[record.error_file] = errors
            return 200, _JSON, _dumps(openai_batch(record, self._store.inputs.get(record.id, "")))

    def _openai_cancel(self, params: _Map, headers: _Map, raw: bytes) -> _Served:
        self.cancel(params["id"]) if params["id"] in self._store.batches else None
        return self._openai_status(params, headers, raw, read=False)

    # Anthropic -----------------------------------------------------------------------------------------

    def _anthropic_create(self, params: _Map, headers: _Map, raw: bytes) -> _Served:
        requests = _object(raw).get("requests")
        if not isinstance(requests, list) or not requests:
            raise WireRejection(400, "requests: a non-empty list is required")
        items = []
        for r in requests:
            if not isinstance(r, dict) or not isinstance(r.get("params"), dict) or not r.get("custom_id"):
                raise WireRejection(400, "each request needs a custom_id and params")
            items.append((str(r["custom_id"]), r["params"]))
        if len({cid for cid, _ in items}) != len(items):
            raise WireRejection(400, "custom_id values must be unique within a batch")
        record = self._submit("anthropic", None, items, headers, path_model=None)
        return 200, _JSON, _dumps(anthropic_batch(record))

    def _anthropic_status(self, params: _Map, headers: _Map, raw: bytes) -> _Served:
        return 200, _JSON, _dumps(anthropic_batch(self._read(params["id"], True)))

    def _anthropic_results(self, params: _Map, headers: _Map, raw: bytes) -> _Served:
        record = self._read(params["id"], False)
        if not record.ended:
            raise WireRejection(400, f"batch {record.id} has not ended: its results are not available yet")
        return 200, "application/binary", anthropic_results(record)

    def _anthropic_cancel(self, params: _Map, headers: _Map, raw: bytes) -> _Served:
        self._read(params["id"], False)
        self.cancel(params["id"])
        return self._anthropic_status(params, headers, raw)

    # Gemini --------------------------------------------------------------------------------------------

    def _gemini_create(self, params: _Map, headers: _Map, raw: bytes) -> _Served:
        batch = _object(raw).get("batch")
        config = batch.get("input_config") or batch.get("inputConfig") if isinstance(batch, dict) else None
        inner = _dig(config, "requests", "requests")
        if not isinstance(inner, list) or not inner:
            raise WireRejection(400, "batch.input_config.requests.requests: a non-empty list is required")
        items = []
        for n, r in enumerate(inner):
            if not isinstance(r, dict) or not isinstance(r.get("request"), dict):
                raise WireRejection(400, f"requests[{n}].request is required")
            items.append((str(_dig(r, "metadata", "key") or n), r["request"]))
        model = params["model"].split("/", 1)[1]
        record = self._submit("gemini", model, items, headers, path_model=model)
        return 200, _JSON, _dumps(gemini_operation(record))

    def _gemini_status(self, params: _Map, headers: _Map, raw: bytes) -> _Served:
        return 200, _JSON, _dumps(gemini_operation(self._read(params["id"], True)))

    def _gemini_cancel(self, params: _Map, headers: _Map, raw: bytes) -> _Served:
        self._read(params["id"], False)
        self.cancel(params["id"])
        return 200, _JSON, b"{}"

    # -- the batches' lives -------------------------------------------------------------------------------

    def _submit(self, wire: str, model: str | None, items: list[tuple[str, dict[str, Any]]],
                headers: Mapping[str, str], *, path_model: str | None, plan: BatchPlan | None = None) -> BatchRecord:
        plan = plan or self._plan
        answer_up_to = len(items) if plan.fail is None else 0
        if plan.expire_after is not None:
            answer_up_to = min(answer_up_to, plan.expire_after)
        answers = [ItemAnswer(cid) for cid, _ in items]
        for answer, (_, request) in zip(answers[:answer_up_to], items, strict=False):
            answer.status, answer.body = self._answer(wire, request, headers, path_model)
        prefix = {"openai": "batch_fake", "anthropic": "msgbatch_fake", "gemini": "fake"}[wire]
        with self._store.lock:
            batch_id = f"{prefix}{next(self._store.ids)}"
            record = BatchRecord(batch_id, wire, model or _model(items), answers, time.monotonic(),
                                 base_url=f"http://{headers.get('host', '127.0.0.1')}")
            self._store.batches[batch_id] = record
            self._store.plans[batch_id] = plan
        return record

    def _answer(self, wire: str, request: dict[str, Any], headers: Mapping[str, str],
                path_model: str | None) -> tuple[int, Any]:
        """What this request sent alone would have been answered: ``(status, JSON body)``."""
        raw = json.dumps(request, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        index = self._state.next_index()
        model = path_model or request.get("model")
        try:
            parsed = parse_request(wire, request, headers, path_model=path_model, path_stream=False,
                                   strict=self._strict)
        except WireRejection as exc:
            ctx = WireContext(wire=wire, index=index, model=str(model or "fake-model"))
            return _as_json(error_response(FakeError(exc.status, message=exc.message), ctx))
        ctx = WireContext(wire=wire, index=index, model=parsed.model or str(model or "fake-model"),
                          input_tokens=max(1, len(raw) // 4))
        seen = RecordedRequest(index=index, wire=wire, method="POST", path="(batch line)", model=parsed.model,
                               stream=False, body=None, body_size=len(raw), headers={}, api_key_present=True,
                               conversation=parsed.conversation, received_at=time.monotonic())
        action = self._state.decide(seen, Exchange(seen))
        if isinstance(action, FakeError):
            return _as_json(error_response(action, ctx))
        if isinstance(action, FakeMalformed):
            text = action.body.decode("utf-8", "replace") if isinstance(action.body, bytes) else action.body
            return 200, text
        if action.stream_error is not None:
            return _as_json(error_response(action.stream_error, ctx))
        return 200, reply_json(action, ctx)

    def _read(self, batch_id: str, read: bool) -> BatchRecord:
        """The batch, moved on by one status read when ``read`` (it ends once its plan's reads and delay passed)."""
        with self._store.lock:
            record = self._store.batches.get(batch_id)
            if record is None:
                raise _NotFound(f"batch {batch_id} not found")
            plan = self._store.plans[batch_id]
            if read and not record.ended:
                record.polls += 1
                if record.polls > plan.polls and time.monotonic() - record.created >= plan.delay:
                    if plan.fail is not None:
                        record.status = "failed"
                        record.failure = plan.fail.replace("{model}", record.model or "the model")
                        record.failure_code = plan.fail_code or "batch_failed"
                    elif plan.expire_after is not None and plan.expire_after < len(record.answers):
                        record.status = "expired"
                    else:
                        record.status = "completed"
            return record

    @staticmethod
    def _end(record: BatchRecord, status: str, *, answered: int) -> None:
        for answer in record.answers[answered:]:
            answer.status, answer.body = None, None
        record.status = status


class _NotFound(Exception):
    pass


def _is_batch_path(method: str, path: str) -> bool:
    return FakeBatches.route(method, path.partition("?")[0]) is not None


def _first_duplicate(custom_ids: list[str]) -> int | None:
    """The index of the first custom id that an earlier one repeats (``None``: all differ)."""
    seen: set[str] = set()
    for n, cid in enumerate(custom_ids):
        if cid in seen:
            return n
        seen.add(cid)
    return None


def _dig(value: Any, *keys: str) -> Any:
    for key in keys:
        value = value.get(key) if isinstance(value, dict) else None
    return value


def _model(items: list[tuple[str, dict[str, Any]]]) -> str | None:
    model = items[0][1].get("model") if items else None
    return model if isinstance(model, str) else None


def _object(raw: bytes) -> dict[str, Any]:
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):  # RecursionError: a body nested deeper than the parser goes
        raise WireRejection(400, "We could not parse the JSON body of your request.") from None
    if not isinstance(value, dict):
        raise WireRejection(400, "the request body must be a JSON object")
    return value


def _dumps(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False).encode("utf-8")


def _as_json(answer: tuple[int, list[tuple[str, str]], bytes]) -> tuple[int, Any]:
    status, _, body = answer
    try:
        return status, json.loads(body)
    except ValueError:
        return status, body.decode("utf-8", "replace")


def _error(wire: str, status: int, message: str) -> tuple[int, str, bytes]:
    code, _, body = error_response(FakeError(status, message=message), WireContext(wire=wire, index=0, model="batch"))
    return code, _JSON, body


def _multipart(content_type: str, raw: bytes) -> dict[str, bytes]:
    """The fields of a ``multipart/form-data`` body, by name."""
    if not content_type.lower().startswith("multipart/form-data"):
        raise WireRejection(400, "a file upload is a multipart/form-data body")
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
        b"Content-Type: " + content_type.encode("latin-1") + b"\r\n\r\n" + raw
    )
    fields: dict[str, bytes] = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        payload = part.get_payload(decode=True)
        if isinstance(name, str) and isinstance(payload, bytes):
            fields[name] = payload
    return fields
