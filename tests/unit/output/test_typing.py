"""``mypy --strict`` sees ``result.output`` as the declared output type (Agent[T] -> RunResult[T].output: T)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

SNIPPET = '''
from __future__ import annotations

import dataclasses
from typing import assert_type

from agentactors import Agent, AgentRun, NativeOutput, RunResult, ScriptedProvider, ToolOutput


@dataclasses.dataclass
class Person:
    name: str


async def main() -> None:
    provider = ScriptedProvider(["x"])
    text = Agent(provider)
    assert_type(text, Agent[str])
    assert_type((await text.run("q")).output, str)
    typed = Agent(provider, output_type=Person)
    result = await typed.run("q")
    assert_type(result, RunResult[Person])
    assert_type(result.output, Person)
    assert_type((await Agent(provider, output_type=ToolOutput(Person)).run("q")).output, Person)
    assert_type((await Agent(provider, output_type=NativeOutput(int)).run("q")).output, int)
    many = await typed.run_many(["a", "b"])
    assert_type(many, list[RunResult[Person]])
    async with typed.stream("q") as run:
        assert_type(run, AgentRun[Person])
        async for partial in run.partial_output():
            assert_type(partial, Person)
        assert_type(run.result.output, Person)
    bound = typed.bind(...)  # type: ignore[arg-type]
    assert_type(bound, Agent[Person])
'''


def test_mypy_types_the_output_as_declared(tmp_path: Path) -> None:
    source = tmp_path / "typed_example.py"
    source.write_text(textwrap.dedent(SNIPPET), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--cache-dir", str(tmp_path / "cache"),
         str(source)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
