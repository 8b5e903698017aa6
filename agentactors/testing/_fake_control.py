"""The FakeVendor's control API: steer the fake over HTTP, from a test in any language.

``python -m agentactors fakevendor`` serves the vendor wires to a service under test in another process; a test
written in Go or JavaScript could not say "the vendor answers 429 on the next call" (only :meth:`FakeVendor.script`
could, from Python).  These endpoints, on the same port under :data:`PREFIX` — a path no vendor uses, and one no
vendor route reaches — map JSON onto the class's own scripting: JSON in, JSON out.

=======================================  ===============================================================
``GET  /_fakevendor``                    what the fake holds now (pending items, counts, settings)
``POST /_fakevendor/script``             ``{"items": [ITEM, ...], "wire"?, "model"?}``: :meth:`FakeVendor.script`
``POST /_fakevendor/on``                 ``{"item": ITEM | null, "wire"?, "model"?}``: :meth:`FakeVendor.on`
``POST /_fakevendor/outage``             ``{"wire"?, "model"?, "duration"?, "status"?}``: :meth:`FakeVendor.outage`
``DELETE /_fakevendor/outage``           :meth:`FakeVendor.end_outages`
``POST /_fakevendor/faults``             :class:`FaultPlan` fields, or ``null``: :attr:`FakeVendor.faults`
``POST /_fakevendor/settings``           any of ``latency``, ``chunk_latency``, ``auto_tools``
``GET  /_fakevendor/requests``           the record (``?since=N``: requests after index N)
``POST /_fakevendor/reset``              :meth:`FakeVendor.clear`
=======================================  ===============================================================

An ITEM is a string (a text answer) or an object with one key: ``reply`` (:class:`FakeReply`'s fields, its
``tool_calls`` a list of ``{"name", "arguments", "id"}`` and its ``stream_error`` an error's fields), ``error``
(:class:`FakeError`'s) or ``malformed`` (:class:`FakeMalformed`'s).  A body that is not that is a 400 naming
the problem (``items[1].error.status: ...``), and nothing is queued: a field the fake does not know is refused,
never dropped.  The control requests are not vendor requests: they are not recorded, counted or scripted.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from typing import Any, TypeVar
from urllib.parse import parse_qsl

import attrs

from ._fake_batch import FakeBatches
from ._fake_script import Action, FakeError, FakeMalformed, FakeReply, FakeToolCall, FaultPlan, RecordedRequest
from ._fake_state import Outage, VendorState

__all__ = ["PREFIX", "ControlAnswer", "handle", "is_control"]

#: Where the control API lives: no vendor path starts with an underscore.
PREFIX = "/_fakevendor"

ControlAnswer = tuple[int, dict[str, Any]]
_T = TypeVar("_T")


class _Bad(Exception):
    """A control body the fake cannot act on: a 400 with this message."""


def is_control(path: str) -> bool:
    """Whether ``path`` is the control API's (``/_fakevendor`` or below it; never a vendor path)."""
    return path == PREFIX or path.startswith(PREFIX + "/")


def handle(method: str, path: str, query: str, raw: bytes, state: VendorState, batches: FakeBatches) -> ControlAnswer:
    """The answer (status, JSON object) to one control request.  Synchronous: nothing here waits."""
    endpoint = path[len(PREFIX):].rstrip("/") or "/"
    allowed = _ENDPOINTS.get(endpoint)
    if allowed is None:
        return 404, _error(f"no control endpoint {path}; the endpoints: {', '.join(_listing())}", "not_found")
    act = allowed.get(method)
    if act is None:
        return 405, _error(f"{method} {path}: use {' or '.join(sorted(allowed))}", "method_not_allowed")
    try:
        return 200, act(_Call(query, raw, state, batches))
    except _Bad as exc:
        return 400, _error(str(exc), "invalid_control_request")


@attrs.frozen
class _Call:
    query: str
    raw: bytes
    state: VendorState
    batches: FakeBatches

    def body(self, *, empty: Any = None) -> Any:
        if not self.raw.strip():
            if empty is None:
                raise _Bad("the body must be a JSON object")
            return empty
        try:
            return json.loads(self.raw)
        except (ValueError, RecursionError) as exc:
            raise _Bad(f"the body is not JSON: {exc}") from None

    def object(self, *, allowed: frozenset[str], empty: Any = None) -> dict[str, Any]:
        body = self.body(empty=empty)
        if not isinstance(body, dict):
            raise _Bad(f"the body must be a JSON object, not {_kind(body)}")
        _known(body, allowed, "the body")
        return body


def _error(message: str, kind: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind}}


def _kind(value: Any) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean", type(None): "null",
            int: "a number", float: "a number"}.get(type(value), type(value).__name__)


def _known(obj: Mapping[str, Any], allowed: frozenset[str] | tuple[str, ...], where: str) -> None:
    unknown = sorted(set(obj) - set(allowed))
    if unknown:
        raise _Bad(f"{where}: unknown field {unknown[0]!r} (the fields: {', '.join(sorted(allowed))})")


def _make(where: str, build: Callable[[], _T]) -> _T:
    """Build a script item, a plan or an outage: the class's own ``TypeError`` / ``ValueError`` is the 400."""
    try:
        return build()
    except (TypeError, ValueError) as exc:
        raise _Bad(f"{where}: {exc}") from None


def _fields(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in attrs.fields(cls))


_REPLY_FIELDS = _fields(FakeReply)
_ERROR_FIELDS = _fields(FakeError)
_MALFORMED_FIELDS = _fields(FakeMalformed)
_CALL_FIELDS = _fields(FakeToolCall)
_ITEM_KINDS = ("reply", "error", "malformed")


def _object(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _Bad(f"{where} must be an object, not {_kind(value)}")
    return value


def _fake_error(value: Any, where: str) -> FakeError:
    fields = _object(value, where)
    _known(fields, _ERROR_FIELDS, where)
    if "status" not in fields:
        raise _Bad(f"{where}: 'status' is required (an HTTP error status, 400-599)")
    return _make(where, lambda: FakeError(**fields))


def _tool_call(value: Any, where: str) -> FakeToolCall:
    fields = _object(value, where)
    _known(fields, _CALL_FIELDS, where)
    if "name" not in fields:
        raise _Bad(f"{where}: 'name' is required")
    return _make(where, lambda: FakeToolCall(**fields))


def _reply(value: Any, where: str) -> FakeReply:
    fields = dict(_object(value, where))
    _known(fields, _REPLY_FIELDS, where)
    calls = fields.get("tool_calls")
    if calls is not None:
        if not isinstance(calls, list):
            raise _Bad(f"{where}.tool_calls must be an array of calls, not {_kind(calls)}")
        fields["tool_calls"] = tuple(_tool_call(c, f"{where}.tool_calls[{i}]") for i, c in enumerate(calls))
    if fields.get("stream_error") is not None:
        fields["stream_error"] = _fake_error(fields["stream_error"], f"{where}.stream_error")
    return _make(where, lambda: FakeReply(**fields))


def _malformed(value: Any, where: str) -> FakeMalformed:
    fields = _object(value, where)
    _known(fields, _MALFORMED_FIELDS, where)
    return _make(where, lambda: FakeMalformed(**fields))


def item_from_json(value: Any, where: str) -> Action:
    """One script item from its JSON (see the module docstring); ``_Bad`` naming ``where`` otherwise."""
    if isinstance(value, str):
        return FakeReply(text=value)
    if not isinstance(value, dict) or len(value) != 1 or next(iter(value)) not in _ITEM_KINDS:
        got = f"an object with the keys {sorted(value)}" if isinstance(value, dict) else _kind(value)
        raise _Bad(f"{where} must be a string (a text answer) or an object with one key, "
                   f"{', '.join(map(repr, _ITEM_KINDS))}; not {got}")
    ((kind, fields),) = value.items()
    at = f"{where}.{kind}"
    if kind == "reply":
        return _reply(fields, at)
    if kind == "error":
        return _fake_error(fields, at)
    return _malformed(fields, at)


def _target(body: Mapping[str, Any]) -> Any:
    wire, model = body.get("wire"), body.get("model")
    return _make("wire / model", lambda: VendorState.key(wire, model))


# --- the endpoints ------------------------------------------------------------------------------


def _overview(call: _Call) -> dict[str, Any]:
    state = call.state
    faults = state.faults
    return {
        "pending_script": state.pending(),
        "requests": len(state.snapshots()),
        "outcomes": dict(state.outcomes),
        "faults_injected": dict(state.faults_injected),
        "settings": {"latency": state.latency, "chunk_latency": state.chunk_latency, "auto_tools": state.auto_tools,
                     "faults": _plan_json(faults) if faults is not None else None},
        "endpoints": _listing(),
    }


def _script(call: _Call) -> dict[str, Any]:
    body = call.object(allowed=frozenset({"items", "wire", "model"}))
    items = body.get("items")
    if not isinstance(items, list) or not items:
        raise _Bad(f"'items' must be a non-empty array of items, not {_kind(items)}")
    actions = [item_from_json(item, f"items[{i}]") for i, item in enumerate(items)]  # all checked, then queued
    call.state.enqueue(actions, _target(body))
    return {"queued": len(actions), "pending_script": call.state.pending()}


def _on(call: _Call) -> dict[str, Any]:
    body = call.object(allowed=frozenset({"item", "wire", "model"}))
    if "item" not in body:
        raise _Bad("'item' is required (null removes the route)")
    item = body["item"]
    action = None if item is None else item_from_json(item, "item")
    call.state.set_route(_target(body), action)
    return {"routed": action is not None}


def _outage(call: _Call) -> dict[str, Any]:
    body = call.object(allowed=frozenset({"wire", "model", "duration", "status"}), empty={})
    outage = _make("outage", lambda: Outage(wire=body.get("wire"), model=body.get("model"),
                                            duration=body.get("duration"), status=body.get("status")))
    call.state.add_outage(outage)
    return {"outage": {"wire": outage.wire, "model": outage.model, "status": outage.status,
                       "duration": body.get("duration")}}


def _end_outages(call: _Call) -> dict[str, Any]:
    call.state.end_outages()
    return {"outages": 0}


_PLAN_FIELDS = _fields(FaultPlan)


def _plan_json(plan: FaultPlan) -> dict[str, Any]:
    return {"rate": plan.rate, "seed": plan.seed, "weights": {k.value: v for k, v in plan.weights.items()},
            "retry_after": plan.retry_after, "hang": plan.hang, "cut_after": plan.cut_after,
            "wires": sorted(plan.wires) if plan.wires is not None else None,
            "models": sorted(plan.models) if plan.models is not None else None}


def _faults(call: _Call) -> dict[str, Any]:
    if not call.raw.strip():
        raise _Bad("the body is empty: send a FaultPlan's fields as a JSON object, or null to stop the faults")
    body = call.body()
    if body is None:
        call.state.faults = None
        return {"faults": None}
    fields = _object(body, "the body")
    _known(fields, _PLAN_FIELDS, "the body")
    for name in ("rate", "retry_after"):  # FaultPlan converts with float(): "0.5" would pass, and True as 1.0
        if name in fields and (isinstance(fields[name], bool) or not isinstance(fields[name], int | float)):
            raise _Bad(f"{name} must be a number, not {_kind(fields[name])}")
    plan = _make("faults", lambda: FaultPlan(**fields))
    call.state.faults = plan
    return {"faults": _plan_json(plan)}


def _settings(call: _Call) -> dict[str, Any]:
    body = call.object(allowed=frozenset({"latency", "chunk_latency", "auto_tools"}))
    checked: dict[str, Any] = {}
    for name in ("latency", "chunk_latency"):
        if name in body:
            seconds = body[name]
            if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not 0 <= seconds < math.inf:
                raise _Bad(f"{name} must be a number of seconds >= 0, not {seconds!r}")
            checked[name] = float(seconds)
    if "auto_tools" in body:
        value = body["auto_tools"]
        if not isinstance(value, bool) and not (isinstance(value, int) and value >= 0):
            raise _Bad(f"auto_tools must be a boolean or a number of calls >= 0, not {value!r}")
        checked["auto_tools"] = value
    for name, value in checked.items():  # every field checked before any is set
        setattr(call.state, name, value)
    return {"settings": {"latency": call.state.latency, "chunk_latency": call.state.chunk_latency,
                         "auto_tools": call.state.auto_tools}}


def _requests(call: _Call) -> dict[str, Any]:
    params = parse_qsl(call.query, keep_blank_values=True)
    _known(dict(params), ("since",), "the query")
    since = 0
    for _, text in params:
        try:
            since = int(text)
        except ValueError:
            raise _Bad(f"since must be a request index (an integer), not {text!r}") from None
    return {"requests": [request_json(r) for r in call.state.snapshots() if r.index > since]}


def _reset(call: _Call) -> dict[str, Any]:
    call.state.clear()
    call.batches.clear()
    return {"reset": True}


def request_json(r: RecordedRequest) -> dict[str, Any]:
    """A recorded request as JSON (credentials are redacted in the record already)."""
    duration = r.completed_at - r.received_at if r.completed_at is not None else None
    return {
        "index": r.index, "wire": r.wire, "method": r.method, "path": r.path, "model": r.model, "stream": r.stream,
        "body": r.body, "body_size": r.body_size, "headers": dict(r.headers), "api_key_present": r.api_key_present,
        "key_leaks": list(r.key_leaks), "status": r.status, "outcome": r.outcome, "fault": r.fault,
        "disconnected": r.disconnected, "duration": duration,
        "conversation": attrs.asdict(r.conversation) if r.conversation is not None else None,
    }


_ENDPOINTS: dict[str, dict[str, Callable[[_Call], dict[str, Any]]]] = {
    "/": {"GET": _overview},
    "/script": {"POST": _script},
    "/on": {"POST": _on},
    "/outage": {"POST": _outage, "DELETE": _end_outages},
    "/faults": {"POST": _faults},
    "/settings": {"POST": _settings},
    "/requests": {"GET": _requests},
    "/reset": {"POST": _reset},
}


def _listing() -> list[str]:
    return [f"{m} {PREFIX}{'' if e == '/' else e}" for e, methods in _ENDPOINTS.items() for m in methods]
