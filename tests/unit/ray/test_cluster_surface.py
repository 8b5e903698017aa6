"""RayCluster's checks that need no Ray: arguments, options that would stack retries, misuse."""

from __future__ import annotations

import pytest

from agentactors import Agent, ScriptedProvider
from agentactors.ray import RayCluster, SharedBudget
from agentactors.ray.cluster import ClusterCompletions

pytestmark = pytest.mark.anyio


def factory() -> Agent:
    return Agent(ScriptedProvider("x"))


def test_arguments_are_checked() -> None:
    with pytest.raises(ValueError, match="workers"):
        RayCluster(factory, workers=0)
    with pytest.raises(ValueError, match="inflight"):
        RayCluster(factory, workers=1, inflight=0)
    with pytest.raises(ValueError, match="retries"):
        RayCluster(factory, workers=1, retries=-1)
    with pytest.raises(ValueError, match="chunk"):
        RayCluster(factory, workers=1, chunk=0)
    with pytest.raises(TypeError, match="SharedBudget"):
        RayCluster(factory, workers=1, budgets={"b": {"max_concurrency": 3}})  # type: ignore[dict-item]
    with pytest.raises(TypeError, match="callable"):
        RayCluster("factory", workers=1)  # type: ignore[arg-type]
    assert "budgets=['b']" in repr(RayCluster(factory, workers=2, budgets={"b": SharedBudget(max_concurrency=1)}))


@pytest.mark.parametrize("option", ["max_task_retries", "max_restarts"])
def test_ray_retries_never_stack_on_the_drivers(option: str) -> None:
    with pytest.raises(ValueError, match="twice over"):
        RayCluster(factory, workers=1, worker_options={option: 3})


async def test_using_a_cluster_outside_async_with_is_an_error() -> None:
    cluster = RayCluster(factory, workers=1)
    with pytest.raises(RuntimeError, match="async with RayCluster"):
        cluster.as_completed(["a"])
    with pytest.raises(RuntimeError, match="async with RayCluster"):
        await cluster.stats()


async def test_iterating_completions_outside_async_with_is_an_error() -> None:
    completions = ClusterCompletions(RayCluster(factory, workers=1), ["a"])
    with pytest.raises(RuntimeError, match=r"async with cluster\.as_completed"):
        await completions.__anext__()


def test_neither_the_core_nor_the_package_imports_ray_before_a_cluster_starts() -> None:
    import subprocess
    import sys

    code = "import sys, agentactors, agentactors.ray; assert 'ray' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)
