"""The exception tree's classes: fields, kinds, groups, pickling, redaction, old names, signals; and the moved
classifier names."""

from __future__ import annotations

import importlib
import pickle
import subprocess
import sys

import pytest

import agentactors.errors
from agentactors import (
    AgentActorsError,
    AllProvidersFailedError,
    CircuitOpenError,
    ErrorKind,
    ProviderError,
    ProviderTimeout,
    StreamInterruptedError,
    UnsupportedToolChoiceError,
)
from agentactors.errors import ActorStopped, ActorStoppedError, AskTimeout, ModelRetry, Signal, ToolDenied
from agentactors.providers import classify_exception, classify_http_error
from agentactors.redaction import register_secret

CANARY = "sk-canary-0123456789abcdefSECRET"


def test_provider_error_fields_and_kinds() -> None:
    e = ProviderError("boom", provider="p", kind="transient", model="m", status=503, retry_after=2)
    assert e.retryable and e.kind is ErrorKind.transient and e.retry_after == 2.0
    assert "p/m" in str(e) and "503" in str(e) and "boom" in str(e)
    assert ProviderError("x", provider="p", kind=ErrorKind.account).retryable is False
    assert ProviderError("x", provider="p", kind="transient", retryable=False).retryable is False
    with pytest.raises(ValueError):
        ProviderError("x", provider="p", kind="sometimes")


def test_subclasses() -> None:
    u = UnsupportedToolChoiceError(provider="anthropic", model="claude-x")
    assert u.kind is ErrorKind.request and u.retryable is False and "claude-x" in str(u)
    c = CircuitOpenError(provider="p", model="m", retry_after=3.5, last_error=RuntimeError("x"))
    assert c.kind is ErrorKind.circuit_open and not c.retryable and c.retry_after == 3.5
    assert isinstance(c.last_error, RuntimeError)
    s = StreamInterruptedError("cut", provider="p", partial_text="Hel")
    assert s.kind is ErrorKind.transient and s.retryable is False and s.partial_text == "Hel"
    t = ProviderTimeout("slow", provider="p")
    assert t.kind is ErrorKind.transient and t.retryable


def test_all_providers_failed_is_group_and_provider_error() -> None:
    a = ProviderError("a", provider="a", kind="transient")
    b = ProviderError("b", provider="b", kind="account", retry_after=4)
    err = AllProvidersFailedError("all failed", [a, b])
    assert isinstance(err, ExceptionGroup) and isinstance(err, ProviderError)
    assert err.exceptions == (a, b) and err.kind is ErrorKind.account and err.retry_after == 4.0
    caught = []
    try:
        raise err
    except* ProviderError as group:
        caught.append(group)
    assert caught and type(caught[0]) is AllProvidersFailedError
    sub = err.subgroup(lambda e: e is a)
    assert isinstance(sub, AllProvidersFailedError) and sub.exceptions == (a,)
    with pytest.raises(ProviderError):
        raise err
    clone = pickle.loads(pickle.dumps(err))
    assert isinstance(clone, AllProvidersFailedError) and len(clone.exceptions) == 2


def test_no_canary_secret_in_any_error_text() -> None:
    register_secret(CANARY)
    body = {"error": {"message": f"Incorrect API key provided: {CANARY}", "type": "invalid_request_error",
                      "code": "invalid_api_key"}}
    errors: list[ProviderError] = [
        classify_http_error(401, {"authorization": f"Bearer {CANARY}"}, body, provider="openai", model="gpt"),
        ProviderError(f"failed with key {CANARY}", provider="p", kind="request", body_excerpt=CANARY * 3),
        classify_exception(RuntimeError(f"https://x.test/?key={CANARY}"), provider="p"),
        StreamInterruptedError(f"cut {CANARY}", provider="p"),
        AllProvidersFailedError(f"all {CANARY}", [ProviderError(CANARY, provider="p", kind="transient")]),
    ]
    for err in errors:
        err.add_note(f"attempt 1 with {CANARY}")
        texts = [str(err), repr(err), err.body_excerpt or "", *getattr(err, "__notes__", [])]
        for text in texts:
            assert CANARY not in text, text
    # Unregistered keys shaped like vendor keys are masked too.
    shaped = ProviderError("bad key sk-proj-abcdefghijklmnop1234 and AIzaSyA1234567890abcdefghijklmno", provider="p",
                           kind="account")
    assert "sk-proj-abcdefghijklmnop1234" not in str(shaped) and "AIzaSy" not in str(shaped)


def test_body_excerpt_is_bounded() -> None:
    err = classify_http_error(500, {}, b"x" * 5000, provider="p")
    assert err.body_excerpt is not None and len(err.body_excerpt) <= 500


# --- the classifier's old home: agentactors.errors names it for one release --------------------

MOVED_TO_CLASSIFY = ["classify_error_body", "classify_exception", "classify_http_error", "explicit_retryable",
                     "parse_retry_after"]


@pytest.mark.parametrize("name", MOVED_TO_CLASSIFY)
def test_a_classifier_name_on_agentactors_errors_warns_and_is_the_moved_function(name: str) -> None:
    moved = getattr(importlib.import_module("agentactors.providers.errors"), name)
    moved_to = r"moved to agentactors\.providers\.errors"
    with pytest.warns(DeprecationWarning, match=rf"agentactors\.errors\.{name} {moved_to}"):
        old = getattr(agentactors.errors, name)
    assert old is moved


def test_the_old_import_statement_still_works_with_a_warning() -> None:
    with pytest.warns(DeprecationWarning, match="import it from agentactors"):
        # answered by the module __getattr__ agentactors._deprecate installs at import time, unseen by mypy
        from agentactors.errors import classify_http_error as old  # type: ignore[attr-defined]
    assert old is classify_http_error
    err = old(503, {}, b"", provider="p")
    assert isinstance(err, ProviderError) and err.kind is ErrorKind.transient


def test_other_missing_names_on_agentactors_errors_are_attribute_errors() -> None:
    with pytest.raises(AttributeError, match="no_such_name"):
        agentactors.errors.no_such_name  # type: ignore[attr-defined]  # noqa: B018  (missing on purpose)
    assert not hasattr(agentactors.errors, "classify_everything")


def test_redaction_names_are_still_importable_from_agentactors_errors_without_a_warning() -> None:
    import warnings

    from agentactors import redaction

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        names = (agentactors.errors.redact, agentactors.errors.register_secret)
    assert names == (redaction.redact, redaction.register_secret)


def test_importing_agentactors_emits_no_deprecation_warning() -> None:
    # A fresh interpreter: in this one the package is long imported, and warnings fire once.
    code = "import agentactors, agentactors.errors, agentactors.providers.openai.provider, agentactors.resilience"
    done = subprocess.run(
        [sys.executable, "-W", "error::DeprecationWarning", "-c", code], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr


def test_errors_outside_errors_py_join_the_tree_and_keep_their_builtin_bases() -> None:
    from agentactors.providers.gemini.provider import GeminiSchemaError, to_gemini_schema
    from agentactors.tools.schema import ConversionError

    assert issubclass(ConversionError, AgentActorsError) and issubclass(ConversionError, ValueError)
    with pytest.raises(ValueError, match="recursive"):  # ``except ValueError`` still catches it
        to_gemini_schema({"$defs": {"A": {"$ref": "#/$defs/A"}}, "$ref": "#/$defs/A"})
    with pytest.raises(AgentActorsError):
        to_gemini_schema({"$defs": {"A": {"$ref": "#/$defs/A"}}, "$ref": "#/$defs/A"})
    assert issubclass(GeminiSchemaError, AgentActorsError)


def test_scrub_chain_is_still_importable_from_agentactors_errors_without_a_warning() -> None:
    """It lives in agentactors._scrub (the cause-chain idea, apart from the tree); the errors name stays."""
    import warnings

    from agentactors import _scrub

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        from agentactors.errors import scrub_chain
    assert scrub_chain is _scrub.scrub_chain is agentactors.errors.scrub_chain


# --- one naming rule: the old names are the same classes ---------------------------------------------------


def test_an_old_error_name_catches_what_the_new_name_raises() -> None:
    with pytest.raises(ActorStopped):
        raise ActorStoppedError("actor 'a' was stopped")
    with pytest.raises(TimeoutError):  # AskTimeout is still a TimeoutError
        raise AskTimeout("no answer in 1s")
    err = AskTimeout("no answer in 1s")
    assert type(err).__name__ == "AskTimeoutError" and isinstance(err, agentactors.errors.ActorError)
    assert pickle.loads(pickle.dumps(err)).args == err.args


# --- signals: control flow, outside the error tree ---------------------------------------------------------


@pytest.mark.parametrize("signal", [ModelRetry(f"bad key {CANARY}"), ToolDenied(f"no {CANARY}")])
def test_a_signal_is_not_a_library_error_and_keeps_its_redacted_text(signal: Signal) -> None:
    register_secret(CANARY)
    assert not isinstance(signal, AgentActorsError)
    with pytest.raises(Signal) as caught:
        try:
            raise signal
        except AgentActorsError:  # what a user's handler around a tool body catches
            pytest.fail("a signal was caught as a library error")
    assert CANARY not in str(caught.value)


def test_scrub_chain_keeps_the_packages_own_exceptions_as_they_are() -> None:
    """Signals and stand-ins are the package's own: their texts were redacted when they were made."""
    from agentactors._scrub import scrub_chain

    register_secret(CANARY)
    for own in (ModelRetry(f"use {CANARY}"), ToolDenied("no"), agentactors.errors.RedactedException("x.Y", "")):
        assert scrub_chain(own) is own
    foreign = RuntimeError(f"key={CANARY}")
    assert isinstance(scrub_chain(foreign), agentactors.errors.RedactedException)
