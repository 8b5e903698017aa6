"""``mypy --strict`` sees ``result.output`` as the declared output type (Agent[T] -> RunResult[T].output: T)."""

from __future__ import annotations

import shutil
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


ROOT = Path(__file__).resolve().parents[3]


def _warm_cache(cache: Path) -> None:
    """A copy of the repository's mypy cache (``make test`` runs ``mypy --strict`` over the tree first), or none.

    Checked from scratch, mypy reads the whole package and its dependencies again (3 s idle, ~9 s on a busy
    worker) to type twenty lines; from the cache it rechecks only what changed since (mypy compares each
    module's size, mtime and hash with its cache entry), so the snippet is typed against the sources as they
    are either way.  A copy: the test never writes the repository's cache.  No cache, or one caught mid-write:
    mypy starts from scratch, slower and the same."""
    try:
        shutil.copytree(ROOT / ".mypy_cache", cache)
    except (OSError, shutil.Error):
        shutil.rmtree(cache, ignore_errors=True)


def test_mypy_types_the_output_as_declared(tmp_path: Path) -> None:
    source = tmp_path / "typed_example.py"
    source.write_text(textwrap.dedent(SNIPPET), encoding="utf-8")
    _warm_cache(tmp_path / "cache")
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(tmp_path / "cache"), str(source)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
