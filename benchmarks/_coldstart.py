"""Import time and cold start: each framework in a fresh interpreter, rounds interleaved, best of N.

* ``import``: the wall time of ``python -c "import X"`` (process start to exit), less the best time of
  ``python -c "pass"`` measured in the same rounds — what importing the package adds to a process.
* first answer: a fresh process that imports the framework, builds an agent on an OpenAI-compatible
  provider and runs one prompt against a FakeVendor in another process (JSON, no latency): process start
  to the answer printed, the interpreter's own start included (the same for everyone).
* ``-X importtime`` of ``import agentactors``: the top-level packages that cost the most (cumulative).

Every package is timed with its bytecode cache written, as an installed package has it (pip compiles on install):
the interpreters run without ``PYTHONDONTWRITEBYTECODE`` and an untimed round before the timed ones writes the
caches.  Until 2026-12-06 the environment's ``PYTHONDONTWRITEBYTECODE=1`` was inherited, so whichever package's
source had changed since its cache was written — agentactors' own, in a checkout — was compiled again in every
timed process (15–30 ms of its import), while the peers' caches, written at install, were used.

Run alone: ``python benchmarks/_coldstart.py`` prints the JSON.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
KEY = "sk-bench-key-0000"

IMPORTS = {
    "agentactors": "agentactors",
    "pydantic-ai": "pydantic_ai",
    "openai-agents": "agents",
    "autogen-core": "autogen_core",
    "langgraph": "langgraph.graph",
    "openai SDK": "openai",
}

_AGENTACTORS = """
import anyio
from agentactors import Agent, OpenAIProvider
async def main():
    agent = Agent(OpenAIProvider("gpt-4o-mini", api_key=KEY, base_url=BASE + "/v1"))
    print((await agent.run("Say hello.")).content)
anyio.run(main, backend=BACKEND)
"""

_PYDANTIC_AI = """
import asyncio
from pydantic_ai import Agent
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider
async def main():
    agent = Agent(OpenAIChatModel("gpt-4o-mini", provider=OpenAIProvider(base_url=BASE + "/v1", api_key=KEY)))
    print((await agent.run("Say hello.")).output)
asyncio.run(main())
"""

_OPENAI_AGENTS = """
import asyncio
from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner, set_tracing_disabled
from openai import AsyncOpenAI
set_tracing_disabled(True)
async def main():
    client = AsyncOpenAI(api_key=KEY, base_url=BASE + "/v1", max_retries=0)
    agent = Agent(name="cold", model=OpenAIChatCompletionsModel(model="gpt-4o-mini", openai_client=client))
    print((await Runner.run(agent, "Say hello.", run_config=RunConfig(tracing_disabled=True))).final_output)
asyncio.run(main())
"""

_OPENAI_SDK = """
import asyncio
from openai import AsyncOpenAI
async def main():
    client = AsyncOpenAI(api_key=KEY, base_url=BASE + "/v1", max_retries=0)
    r = await client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "Hi"}])
    print(r.choices[0].message.content)
asyncio.run(main())
"""

FIRST_RUN = {
    "agentactors": (_AGENTACTORS, {"BACKEND": "asyncio"}),
    "agentactors (trio)": (_AGENTACTORS, {"BACKEND": "trio"}),
    "pydantic-ai": (_PYDANTIC_AI, {}),
    "openai-agents": (_OPENAI_AGENTS, {}),
    "openai SDK": (_OPENAI_SDK, {}),
}


#: The environment of every timed interpreter: this one's, but writing bytecode caches (see the module docstring).
_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def _wall(code: str, *flags: str) -> tuple[float, subprocess.CompletedProcess[str]]:
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, *flags, "-c", code], capture_output=True, text=True, timeout=300,
                         check=False, env=_ENV)
    return time.perf_counter() - t0, out


def _first_run_code(impl: str, base: str) -> str:
    body, extra = FIRST_RUN[impl]
    consts = {"KEY": KEY, "BASE": base, **extra}
    # os._exit after the answer: the figure is start to answer, not the interpreter's teardown.
    return "".join(f"{k} = {v!r}\n" for k, v in consts.items()) + body + "import os; os._exit(0)\n"


def _installed(module: str) -> bool:
    code = f"import importlib.util as u, sys; sys.exit(0 if u.find_spec({module.split('.')[0]!r}) else 1)"
    return subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


def importtime_top(module: str = "agentactors", n: int = 12) -> list[tuple[str, int]]:
    """The top-level packages ``import module`` loads, by cumulative µs (``-X importtime``), costliest first."""
    _, out = _wall(f"import {module}", "-X", "importtime")
    costs: dict[str, int] = {}
    for line in out.stderr.splitlines():
        if not line.startswith("import time:") or "|" not in line:
            continue
        _, cumulative, name = (part.strip() for part in line.split(":", 1)[1].split("|"))
        if cumulative.isdigit() and "." not in name and name != module:
            costs[name] = max(costs.get(name, 0), int(cumulative))
    return sorted(costs.items(), key=lambda kv: -kv[1])[:n]


def _start_vendor() -> tuple[subprocess.Popen[str], str]:
    cfg = {"chunks": 1, "interval": 0.0, "words": 3, "first": 0.0}
    proc = subprocess.Popen([sys.executable, str(HERE / "_w12_vendor.py"), json.dumps(cfg)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    return proc, proc.stdout.readline().strip()


def cold_start(*, smoke: bool, best_of: int | None = None) -> dict[str, Any]:
    """Best-of-N import and first-answer times, every framework interleaved in each round."""
    rounds = best_of or (1 if smoke else 7)
    imports = {k: m for k, m in IMPORTS.items() if _installed(m)}
    runs = {k: v for k, v in FIRST_RUN.items() if _installed(IMPORTS.get(k.split(" (")[0], "agentactors"))}
    if smoke:  # the harness check: agentactors only (the peers are not installed in the test environment)
        imports = {k: m for k, m in imports.items() if k == "agentactors"}
        runs = {k: v for k, v in runs.items() if k == "agentactors"}
    bare: list[float] = []
    import_s: dict[str, list[float]] = {k: [] for k in imports}
    first_s: dict[str, list[float]] = {k: [] for k in runs}
    errors: dict[str, str] = {}
    proc, base = _start_vendor()
    try:
        for module in imports.values():  # untimed: each package's bytecode cache written (the module docstring)
            _wall(f"import {module}")
        for name in runs:
            _wall(_first_run_code(name, base))
        for _ in range(rounds):
            bare.append(_wall("pass")[0])
            for name, module in imports.items():
                wall, out = _wall(f"import {module}")
                if out.returncode:
                    errors[name] = out.stderr.strip().splitlines()[-1][:200]
                import_s[name].append(wall)
            for name in runs:
                wall, out = _wall(_first_run_code(name, base))
                if out.returncode or not out.stdout.strip():
                    errors[name + " run"] = (out.stderr.strip().splitlines() or ["no answer"])[-1][:200]
                first_s[name].append(wall)
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=30)
    floor = min(bare)
    rows = []
    for name in dict.fromkeys([*imports, *runs]):
        row: dict[str, Any] = {"impl": name}
        if name in import_s and name not in errors:
            row["import_s"] = min(import_s[name]) - floor
            row["import_wall_s"] = min(import_s[name])
        elif name in errors:
            row["error"] = errors[name]
        if name in first_s and name + " run" not in errors:
            row["first_run_s"] = min(first_s[name])
        elif name + " run" in errors:
            row["run_error"] = errors[name + " run"]
        rows.append(row)
    return {"best_of": rounds, "interpreter_start_s": floor, "rows": rows,
            "agentactors_importtime_top": importtime_top()}


if __name__ == "__main__":
    print(json.dumps(cold_start(smoke="--smoke" in sys.argv), indent=2))
