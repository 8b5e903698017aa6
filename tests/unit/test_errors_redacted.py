"""Every AgentActorsError's text is redacted, not only ProviderError's.

A library error built with a key in its message (a URL with a token, a header, a stored config quoted back)
showed it in ``str()``, ``repr()``, ``args`` — and in the pickle a Ray worker sends its driver.  Now the base
class redacts its ``args`` (and notes) once, when the error is built: registered secrets and key shapes nobody
registered alike.
"""

from __future__ import annotations

import pickle

import pytest

from agentactors.errors import (
    ActorStoppedError,
    AgentActorsError,
    AskTimeoutError,
    ProviderError,
    RunError,
    SessionError,
)
from agentactors.journal import JournalFormatError
from agentactors.journal.store import LeaseLostError
from agentactors.ray.errors import WorkerLostError
from agentactors.redaction import register_secret
from agentactors.tools.schema import ConversionError
from agentactors.tools.toolset import ToolsetError

REGISTERED = "corp-internal-credential-7f3a9c"  # a shape no pattern knows: only registration masks it
SHAPES = [
    "sk-proj-abcdefghijklmnopqrstuv",
    "aws_secret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.payload.signature",
]
LEAKS = [REGISTERED, "abcdefghijklmnopqrstuv", "wJalrXUtnFEMI", "eyJhbGciOiJIUzI1NiJ9"]


@pytest.fixture(autouse=True, scope="module")
def _registered() -> None:
    register_secret(REGISTERED)


def built(text: str) -> list[AgentActorsError]:
    return [
        AgentActorsError(text),
        RunError(text),
        SessionError(text),
        ActorStoppedError(text),
        AskTimeoutError(text),
        JournalFormatError(text),
        LeaseLostError(text, run_id="r1"),
        ToolsetError(text),
        ConversionError("arguments.url", text),
        WorkerLostError(text, worker="w1"),
        AgentActorsError("two parts", text),
        RunError(ValueError(text)),  # not a str: its text is what str() shows
        ProviderError(text, provider="p", kind="request"),
    ]


def shown(error: BaseException) -> str:
    return " ".join([str(error), repr(error), repr(error.args), *getattr(error, "__notes__", ())])


@pytest.mark.parametrize("secret", [REGISTERED, *SHAPES], ids=["registered", "sk", "aws", "bearer"])
def test_no_library_error_shows_a_credential_in_its_text(secret: str) -> None:
    for error in built(f"could not reach https://host/v1?x=1 with {secret} (after 3 tries)"):
        text = shown(error)
        assert "[REDACTED]" in text, type(error).__name__
        assert not any(leak in text for leak in LEAKS), type(error).__name__
        assert "after 3 tries" in text  # the rest of the message is kept


@pytest.mark.parametrize("secret", [REGISTERED, SHAPES[0]])
def test_what_a_pickle_carries_to_another_process_is_redacted(secret: str) -> None:
    for error in (RunError(f"run failed: {secret}"), WorkerLostError(f"lost: {secret}", worker="w"),
                  ActorStoppedError(f"stopped: {secret}")):
        data = pickle.dumps(error)
        assert secret.encode() not in data
        again = pickle.loads(data)
        assert type(again) is type(error) and "[REDACTED]" in str(again)


def test_notes_are_redacted_on_every_library_error() -> None:
    error = RunError("failed")
    error.add_note(f"while calling with {REGISTERED}")
    assert error.__notes__ == ["while calling with [REDACTED]"]


def test_what_holds_nothing_to_redact_is_kept_as_it_was() -> None:
    cause = ValueError("plain")
    error = RunError("plain text", 3, None, cause)
    assert error.args == ("plain text", 3, None, cause) and error.args[3] is cause
    assert str(RunError()) == "" and RunError().args == ()
