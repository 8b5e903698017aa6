"""What the model reads about an answer whose JSON breaks a limit, found by a trial of ``docs/output.md``.  Both
backends.

* An integer past the interpreter's digit limit in a text answer was refused with Python's own words — "Exceeds the
  limit (4300 digits) for integer string conversion ...; use sys.set_int_max_str_digits() to increase the limit" —
  as the model's issue: advice for a Python programmer, read by a model.  It now says what any other path says
  (``agentactors._json.check_value``): the JSON holds an integer of more than 4,300 digits.
* A key named twice in a text answer read "the JSON in the answer name the key ..." (the verb agreed with "the
  arguments", the other caller's subject).
"""

from __future__ import annotations

import pytest

from agentactors import (
    Agent,
    InMemoryRecorder,
    NativeOutput,
    OutputValidationError,
    PromptedOutput,
    Runtime,
    ScriptedProvider,
)
from agentactors._json import MAX_INT_DIGITS, JsonBoundError, loads_bounded

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]


async def _issues(agent: Agent[object]) -> tuple[str, ...]:
    memory = InMemoryRecorder()
    async with Runtime(recorders=[memory]) as rt:
        result = await agent.run("how many?", runtime=rt)
    assert isinstance(result.error, OutputValidationError), result.error
    return result.error.issues


@pytest.mark.parametrize("spec", [NativeOutput(int), PromptedOutput(int)])
async def test_an_integer_past_the_digit_limit_is_told_in_the_models_words(spec: object) -> None:
    answer = '{"response": ' + "9" * (MAX_INT_DIGITS + 700) + "}"
    provider = ScriptedProvider([answer])
    agent: Agent[object] = Agent(provider, output_type=spec, output_retries=0)  # type: ignore[arg-type]
    issues = await _issues(agent)
    text = " ".join(issues)
    assert "set_int_max_str_digits" not in text and "Exceeds the limit" not in text, text
    assert f"integer of more than {MAX_INT_DIGITS} digits" in text, text


def test_loads_bounded_names_the_digit_limit_not_the_interpreters_advice() -> None:
    with pytest.raises(JsonBoundError) as caught:
        loads_bounded("[" + "1" * (MAX_INT_DIGITS + 1) + "]", what="the arguments")
    assert "set_int_max_str_digits" not in str(caught.value)
    assert caught.value.limit == "digits"


async def test_a_key_named_twice_in_a_text_answer_is_told_in_good_grammar() -> None:
    provider = ScriptedProvider(['{"response": 1, "response": 2}'])
    agent: Agent[object] = Agent(provider, output_type=NativeOutput(int), output_retries=0)
    (issue,) = await _issues(agent)
    assert "the JSON in the answer names the key 'response' more than once" in issue, issue


def test_the_arguments_still_name_the_key() -> None:
    with pytest.raises(JsonBoundError, match="the arguments name the key 'a' more than once"):
        loads_bounded('{"a": 1, "a": 2}', what="the arguments", unique_keys=True)
