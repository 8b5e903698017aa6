"""``cluster.stats()`` once the driver's Ray was shut down: ``WorkerLostError``, whenever it is asked.

Found in a trial of docs/ray.md: its docstring promises ``WorkerLostError`` when the driver's Ray was shut
down, and asked at once it raised so; asked a second later — once the workers' watchers had noticed Ray go
and marked every worker lost — it returned ``[]``, as if the cluster were merely empty.  What a monitoring
loop sees must not depend on which of the two got there first.
"""

from __future__ import annotations

from collections.abc import Iterator

import anyio
import pytest

from tests.support.required import missing

try:
    import ray
except ImportError:  # pragma: no cover - the dev extra installs ray: make test always runs these
    missing("the Ray tests need ray, the [ray] extra: pip install -e '.[dev]' (make test does)", module=True)

from agentactors import Agent, ScriptedProvider
from agentactors.ray import RayCluster, WorkerLostError
from agentactors.ray._refs import LIVENESS_POLL

pytestmark = pytest.mark.anyio

WORKER = {"num_cpus": 0}


@pytest.fixture(scope="module", autouse=True)
def local_ray() -> Iterator[None]:
    try:
        yield
    finally:
        ray.shutdown()


@pytest.fixture(autouse=True)
def ray_running(local_ray: None) -> None:
    """Ray, started for each test that finds it down (each backend's run shuts it down)."""
    if not ray.is_initialized():
        ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)


def echo_agent() -> Agent:
    return Agent(ScriptedProvider("echo", record=False))


async def test_stats_raises_worker_lost_once_ray_was_shut_down_even_after_the_watchers_noticed() -> None:
    with anyio.fail_after(60):
        async with RayCluster(echo_agent, workers=1, worker_options=WORKER) as cluster:
            assert len(await cluster.stats()) == 1
            await anyio.to_thread.run_sync(ray.shutdown)
            with pytest.raises(WorkerLostError, match="shut down"):
                await cluster.stats()  # at once
            await anyio.sleep(LIVENESS_POLL * 2)  # real time: the watchers look at Ray's liveness this often
            assert not cluster.workers  # they noticed: every worker is lost
            with pytest.raises(WorkerLostError, match="shut down"):
                await cluster.stats()  # and later, the same
