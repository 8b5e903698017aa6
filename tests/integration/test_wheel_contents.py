"""The wheel ``pip install agentactors`` gets is whole: the package, ``py.typed``, its entry points — and nothing else.

Built with pip from the checkout (a few seconds): with ``--no-build-isolation`` when hatchling is in this
environment, else in pip's isolated build environment (which installs hatchling from the configured index; the
test is skipped only when that index has none).  The package reads no data file at run time besides its
modules (nothing uses ``importlib.resources`` or a file beside a module): ``py.typed`` is its one non-Python file.
Then the wheel, unpacked on its own, runs an agent against the FakeVendor with no optional module importable.
"""

from __future__ import annotations

import email.parser
import importlib.util
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.support.no_extras import OPTIONAL, run_without
from tests.support.paths import ROOT

PACKAGE = ROOT / "agentactors"
CORE = {"anyio", "httpx", "attrs", "tenacity", "httpx-sse", "jsonschema", "h11"}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    isolation = [] if importlib.util.find_spec("hatchling") is None else ["--no-build-isolation"]
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", *isolation, "--quiet", "-w", str(out), str(ROOT)],
        capture_output=True, text=True, timeout=300, check=False,
    )
    if done.returncode != 0 and not isolation and "hatchling" in done.stderr and "satisf" in done.stderr:
        pytest.skip(f"no hatchling to build with (neither here nor on the index): {done.stderr[-500:]}")
    assert done.returncode == 0, done.stderr
    (built,) = out.glob("agentactors-*.whl")
    return built


def _names(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as archive:
        return archive.namelist()


def test_the_wheel_holds_every_module_and_py_typed(wheel: Path) -> None:
    names = _names(wheel)
    shipped = {name for name in names if name.startswith("agentactors/")}
    source = {
        path.relative_to(ROOT).as_posix()
        for path in PACKAGE.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc"
    }
    assert "agentactors/py.typed" in shipped
    assert not source - shipped, f"left out of the wheel: {sorted(source - shipped)}"
    assert not shipped - source, f"in the wheel but not in the package: {sorted(shipped - source)}"


def test_the_wheel_holds_nothing_else(wheel: Path) -> None:
    names = _names(wheel)
    dist_info = next(name.partition("/")[0] for name in names if name.endswith(".dist-info/METADATA"))
    strays = [name for name in names if name.partition("/")[0] not in ("agentactors", dist_info)]
    assert not strays, f"outside the package: {strays}"
    junk = [
        name for name in names
        if "__pycache__" in name or name.endswith((".pyc", ".pyo")) or ".venv" in name
        or name.startswith(("tests/", "benchmarks/", "examples/", "docs/"))
    ]
    assert not junk, junk


def test_the_wheel_declares_the_core_the_extras_and_the_entry_points(wheel: Path) -> None:
    dist_info = next(name.partition("/")[0] for name in _names(wheel) if name.endswith(".dist-info/METADATA"))
    with zipfile.ZipFile(wheel) as archive:
        metadata = email.parser.Parser().parsestr(archive.read(f"{dist_info}/METADATA").decode("utf-8"))
        entry_points = archive.read(f"{dist_info}/entry_points.txt").decode("utf-8")
    requires = metadata.get_all("Requires-Dist") or []
    unconditional = {
        req.split(";")[0].split("[")[0].split(">")[0].split("<")[0].split("=")[0].strip().lower()
        for req in requires if ";" not in req
    }
    assert unconditional == CORE, unconditional
    # Imported directly for PEP 696 TypeVar defaults before 3.13 (anyio's floor pulls it only before 3.11).
    marked = [req.replace('"', "'") for req in requires
              if req.lower().replace("_", "-").startswith("typing-extensions")]
    assert [req.partition(";")[2].strip() for req in marked] == ["python_version < '3.13'"], requires
    extras = set(metadata.get_all("Provides-Extra") or [])
    assert {"mcp", "otel", "ray", "bedrock", "vertex", "postgres", "prices", "jiter", "aiohttp", "cli"} <= extras
    assert "agentactors = agentactors.__main__:main" in entry_points
    assert "agentactors = agentactors.testing.pytest_plugin" in entry_points


def test_the_unpacked_wheel_runs_an_agent_on_the_core_install(wheel: Path, tmp_path: Path) -> None:
    """A pure-Python wheel unpacked is installed: first on the path, away from the checkout, no extra importable."""
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(site)
    result = run_without(
        OPTIONAL,
        f"""
        import sys
        sys.path.insert(0, {str(site)!r})
        import anyio
        import agentactors, agentactors.providers, agentactors.serve, agentactors.testing
        assert agentactors.__file__.startswith({str(site)!r}), agentactors.__file__
        from agentactors import Agent, OpenAIProvider
        from agentactors.testing import FakeReply, FakeVendor

        async def main():
            async with FakeVendor() as fv:
                fv.script(FakeReply("served from the wheel"))
                agent = Agent(OpenAIProvider("gpt-4o-mini", api_key="k", base_url=fv.openai_base_url))
                result = await agent.run("hi")
            assert result.output == "served from the wheel", result.error

        anyio.run(main)
        """,
        cwd=tmp_path,
    )
    assert result["ok"], result
