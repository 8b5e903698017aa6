"""A misconfigured cluster fails at ``async with RayCluster(...)``, once, with the factory's own error.

Found in a user study: an ``agent_factory`` that fails on the workers — a budget name missing from
``budgets`` (``KeyError``), a missing environment variable, argparse's ``SystemExit`` — let the cluster start,
and the failure showed up only as every input of every job failing with that error.  Each worker now builds
its agent during the startup handshake: its failure is raised by ``__aenter__`` (the error the runs would have
carried), after what was started is shut down — no Ray actor left, no Ray left that ``init=`` started.

Against real Ray workers (the local Ray instance of tests/integration/test_ray_cluster.py's fixtures, one
small cluster per test: ``num_cpus=0`` workers).  The factories live in this module, which the workers cannot
import: they travel by value.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

import anyio
import pytest

from tests.support.required import missing

try:
    import ray
except ImportError:  # pragma: no cover - the dev extra installs ray
    missing("the Ray tests need ray, the [ray] extra: pip install -e '.[dev]' (make test does)", module=True)

from agentactors import Agent, ScriptedProvider
from agentactors.ray import RayCluster, RemoteError, SharedBudget, with_shared_budget
from agentactors.ray.errors import WorkerLostError
from tests.integration.test_ray_cluster import (  # noqa: F401  (the module's Ray)
    WORKER,
    local_ray,
    ray_running,
    start_local_ray,
)

pytestmark = pytest.mark.anyio

#: An environment variable no worker has.
MISSING_VAR = "AGENTACTORS_TEST_RAY_ENTER_NEVER_SET"
BUDGETS = {"anthropic": SharedBudget(max_concurrency=4)}


# --- factories (this module travels by value) ---------------------------------------------------


def misnamed_budget_agent() -> Agent:
    return Agent(with_shared_budget(ScriptedProvider("hi", record=False), "openai"))  # budgets has "anthropic"


def env_agent() -> Agent:
    token = os.environ[MISSING_VAR]  # the driver's shell had it; the workers do not
    return Agent(ScriptedProvider(f"token {len(token)}", record=False))


def argparse_agent() -> Agent:
    import argparse

    parser = argparse.ArgumentParser(prog="make_agent")
    parser.add_argument("--model", required=True)
    parser.parse_args()  # SystemExit(2): the worker's sys.argv is Ray's default_worker.py's
    raise AssertionError("unreachable")


def stamped_agent(path: str) -> Agent:
    """A working factory that says when it ran (the worker's clock: same machine)."""
    with open(path, "a") as stamps:
        stamps.write(f"{time.time()}\n")
    return Agent(with_shared_budget(ScriptedProvider(lambda request: "ok", record=False), "anthropic"))


def dying_agent() -> Agent:
    os._exit(3)  # a native library aborting the process, say


async def hanging_agent() -> Agent:
    await anyio.sleep(3600)  # a factory waiting for something that never comes
    raise AssertionError("unreachable")


# --- helpers ------------------------------------------------------------------------------------


def cluster_actors_alive() -> list[str]:
    """This Ray's workers and budget actors not (yet) dead (Ray's actor table: the state API needs a dashboard)."""
    table: Any = ray._private.state.actors()  # (Ray's GCS table: untyped)
    return [
        f"{a['ActorClassName']} {a['State']}"
        for a in table.values()
        if a["ActorClassName"] in ("ClusterWorker", "BudgetActor") and a["State"] != "DEAD"
    ]


async def assert_no_actor_left() -> None:
    """Every worker and budget actor is dead (``ray.kill`` is asynchronous: Ray's table says so soon after)."""
    with anyio.move_on_after(20):
        while cluster_actors_alive():  # noqa: ASYNC110 - Ray's table, in another process: no event
            await anyio.sleep(0.1)
    assert cluster_actors_alive() == []


# --- tests --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("factory", "error", "match"),
    [
        (misnamed_budget_agent, KeyError, r"the cluster has no budget named 'openai'; it has \['anthropic'\]"),
        (env_agent, KeyError, MISSING_VAR),
    ],
    ids=["missing-budget", "missing-env-var"],
)
async def test_a_failing_factory_fails_the_entry_with_its_own_error(
    factory: Callable[[], Any], error: type[BaseException], match: str
) -> None:
    assert MISSING_VAR not in os.environ
    entered = False
    with anyio.fail_after(120), pytest.raises(error, match=match) as caught:
        async with RayCluster(factory, workers=2, budgets=BUDGETS, worker_options=WORKER):
            entered = True  # (it used to: every input of every job then failed with the error)
    assert not entered
    notes = getattr(caught.value, "__notes__", ())
    assert any("building its agent at the cluster's start" in note for note in notes), notes  # names the worker
    await assert_no_actor_left()


async def test_a_factory_that_exits_fails_the_entry_with_a_remote_error_naming_it() -> None:
    with anyio.fail_after(120), pytest.raises(RemoteError) as caught:
        async with RayCluster(argparse_agent, workers=1, worker_options=WORKER):
            pytest.fail("the cluster started with a factory that exits")
    assert caught.value.type_name == "builtins.SystemExit"
    assert "while running its agent_factory" in str(caught.value)
    await assert_no_actor_left()


async def test_a_factory_that_ends_its_process_fails_the_entry_with_worker_lost() -> None:
    with anyio.fail_after(120), pytest.raises(WorkerLostError, match="died while building its agent"):
        async with RayCluster(dying_agent, workers=1, worker_options=WORKER):
            pytest.fail("the cluster started with a factory that ended its process")
    await assert_no_actor_left()


async def test_a_failing_factory_shuts_down_the_ray_that_init_started() -> None:
    ray.shutdown()  # (the fixture starts it again for the next test)
    init = {"address": "local", "num_cpus": 2, "include_dashboard": False, "log_to_driver": False,
            "configure_logging": False}
    with anyio.fail_after(120), pytest.raises(KeyError, match="no budget named 'openai'"):
        async with RayCluster(misnamed_budget_agent, workers=1, budgets=BUDGETS, worker_options=WORKER, init=init):
            pytest.fail("the cluster started with a failing factory")
    assert not ray.is_initialized()


async def test_a_factory_that_never_returns_fails_the_entry_at_start_timeout() -> None:
    with anyio.fail_after(120), pytest.raises(TimeoutError, match=r"start_timeout.*agent_factory"):
        # start_timeout bounds the workers' own start too: 3 s was not always enough for Ray to start one on a
        # machine whose two cores were busy (the timeout then named the workers, not the factory).
        async with RayCluster(hanging_agent, workers=1, worker_options=WORKER, start_timeout=10, drain_timeout=0):
            pytest.fail("the cluster started with a factory that never returned")
    await assert_no_actor_left()


async def test_a_working_factory_is_built_once_per_worker_before_the_entry_returns(tmp_path: Any) -> None:
    stamps = tmp_path / "stamps"
    factory = _partial(stamped_agent, str(stamps))
    with anyio.fail_after(120):
        async with RayCluster(factory, workers=2, budgets=BUDGETS, worker_options=WORKER) as cluster:
            entered = time.time()
            built = [float(line) for line in stamps.read_text().split()]
            assert len(built) == 2 and max(built) <= entered  # both agents were built during the entry
            results = await cluster.run_many(["a", "b", "c"])
            again = await cluster.run_many(["d"])
    assert [r.content for r in results + again] == ["ok"] * 4, [r.error for r in results + again]
    assert len(stamps.read_text().split()) == 2  # the runs used the agents built then: no second build
    await assert_no_actor_left()


def _partial(fn: Callable[[str], Agent], arg: str) -> Callable[[], Agent]:
    import functools

    return functools.partial(fn, arg)
