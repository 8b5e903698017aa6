"""Server-side error answers of the vendor wires: HTTP error bodies and in-band stream errors.

Shapes from the vendors' documentation and the recorded corpus, independent of the
client-side classifier they are meant to exercise.
"""

from __future__ import annotations

from typing import Any

from ._fake_bedrock import bedrock_error_payload, bedrock_error_type, stream_exception_event
from ._fake_script import FakeError
from ._fake_wires import Frame, WireContext, content_type, dumps, request_id_headers

__all__ = ["error_response", "stream_error_frame"]


def num(value: float) -> str:
    """A header/RetryInfo number: ``7`` rather than ``7.0``."""
    value = float(value)
    return str(int(value)) if value.is_integer() else repr(value)


_OPENAI_ERRORS: dict[int, tuple[str, str | None, str]] = {
    400: ("invalid_request_error", None, "Invalid request."),
    401: ("invalid_request_error", "invalid_api_key", "Incorrect API key provided."),
    403: ("invalid_request_error", "unsupported_country_region_territory", "Country, region, or territory not "
          "supported"),
    404: ("invalid_request_error", "model_not_found", "The model `{model}` does not exist or you do not have "
          "access to it."),
    413: ("invalid_request_error", "request_too_large", "Request too large."),
    429: ("requests", "rate_limit_exceeded", "Rate limit reached for {model} on requests per min (RPM). "
          "Please try again later."),
    500: ("server_error", None, "The server had an error while processing your request. Sorry about that!"),
    503: ("server_error", None, "The engine is currently overloaded, please try again later."),
}
_ANTHROPIC_ERRORS: dict[int, tuple[str, str]] = {
    400: ("invalid_request_error", "Invalid request."),
    401: ("authentication_error", "invalid x-api-key"),
    403: ("permission_error", "Your API key does not have permission to use the specified resource."),
    404: ("not_found_error", "model: {model}"),
    413: ("request_too_large", "Request exceeds the maximum allowed number of bytes."),
    429: ("rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit."),
    500: ("api_error", "Internal server error"),
    503: ("overloaded_error", "Overloaded"),
    529: ("overloaded_error", "Overloaded"),
}
_GEMINI_ERRORS: dict[int, tuple[str, str]] = {
    400: ("INVALID_ARGUMENT", "Request contains an invalid argument."),
    401: ("UNAUTHENTICATED", "Request is missing required authentication credential."),
    403: ("PERMISSION_DENIED", "Method doesn't allow unregistered callers."),
    404: ("NOT_FOUND", "models/{model} is not found for API version v1beta, or is not supported for "
          "generateContent."),
    429: ("RESOURCE_EXHAUSTED", "Resource has been exhausted (e.g. check quota)."),
    500: ("INTERNAL", "An internal error has occurred."),
    503: ("UNAVAILABLE", "The model is overloaded. Please try again later."),
    504: ("DEADLINE_EXCEEDED", "Deadline expired before operation could complete."),
}


def _error_payload(err: FakeError, ctx: WireContext) -> dict[str, Any]:
    status = err.status
    if ctx.wire == "openai":
        kind, code, message = _OPENAI_ERRORS.get(status, ("server_error" if status >= 500 else
                                                          "invalid_request_error", None, f"HTTP {status}"))
        return {"error": {"message": err.message or message.format(model=ctx.model), "type": kind,
                          "param": err.param, "code": err.code or code}}
    if ctx.wire == "bedrock":
        return bedrock_error_payload(err)
    if ctx.wire == "anthropic":
        kind, message = _ANTHROPIC_ERRORS.get(status, ("api_error" if status >= 500 else
                                                       "invalid_request_error", f"HTTP {status}"))
        return {"type": "error", "error": {"type": err.code or kind, "message": err.message or
                                           message.format(model=ctx.model)},
                "request_id": f"req_fake{ctx.index:05d}"}
    kind, message = _GEMINI_ERRORS.get(status, ("UNAVAILABLE" if status >= 500 else "INVALID_ARGUMENT",
                                                f"HTTP {status}"))
    error: dict[str, Any] = {"code": status, "message": err.message or message.format(model=ctx.model),
                             "status": err.code or kind}
    if status == 429 and err.retry_after is not None:
        error["details"] = [
            {"@type": "type.googleapis.com/google.rpc.QuotaFailure",
             "violations": [{"quotaMetric": "generativelanguage.googleapis.com/generate_content_requests",
                             "quotaId": "GenerateRequestsPerMinutePerProjectPerModel"}]},
            {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": f"{num(err.retry_after)}s"},
        ]
    return {"error": error}


def error_response(err: FakeError, ctx: WireContext) -> tuple[int, list[tuple[str, str]], bytes]:
    """``(status, headers, body)`` for an HTTP error answer."""
    headers: list[tuple[str, str]] = list(request_id_headers(ctx))
    if err.retry_after is not None:
        headers.append(("retry-after", num(err.retry_after)))
    if err.retry_after_ms is not None:
        headers.append(("retry-after-ms", num(err.retry_after_ms)))
    if err.should_retry is not None:
        headers.append(("x-should-retry", "true" if err.should_retry else "false"))
    if ctx.wire == "bedrock":
        headers.append(("x-amzn-ErrorType", f"{bedrock_error_type(err)}:http://internal.amazon.com/coral/com.amazon.bedrock/"))
    if err.body is None:
        body = dumps(_error_payload(err, ctx), compact=ctx.wire != "gemini").encode("utf-8")
        headers.append(("content-type", content_type(ctx.wire, sse=False)))
    elif isinstance(err.body, bytes | str):
        body = err.body.encode("utf-8") if isinstance(err.body, str) else err.body
        headers.append(("content-type", "text/plain; charset=utf-8"))
    else:
        body = dumps(err.body).encode("utf-8")
        headers.append(("content-type", content_type(ctx.wire, sse=False)))
    headers.extend(err.headers.items())
    return err.status, headers, body


def stream_error_frame(err: FakeError, ctx: WireContext) -> Frame:
    """An error inside an HTTP 200 stream, as each wire sends one."""
    payload = err.body if err.body is not None else _error_payload(err, ctx)
    if ctx.wire == "anthropic":
        if isinstance(payload, dict):
            payload = {k: v for k, v in payload.items() if k != "request_id"}
        return Frame(payload, "error")
    if ctx.wire == "bedrock":
        return Frame(payload, stream_exception_event(err))
    return Frame(payload)
