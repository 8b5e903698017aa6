"""Every async test runs on asyncio and trio.

Mark a test (or module) with ``@pytest.mark.virtual_time`` to run it on virtual,
autojumping clocks instead: trio's ``MockClock(autojump_threshold=0)`` and
:class:`agentactors.testing.VirtualTimeLoop` on asyncio.  Only where no real I/O
happens (no sockets, no worker threads).
"""

from __future__ import annotations

import gc
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import hypothesis  # (imported before any gc.freeze(): see _frozen_heap_after_each_module)
import pytest
import trio.testing

from agentactors.testing import VirtualTimeLoop
from tests.support.paths import CORPUS

# Read by the cloud providers when no argument says otherwise (Vertex's project and location, Bedrock's endpoint):
# a developer's shell that sets them must not redirect the tests' providers.  Tests that need them set them.
_CLOUD_ENV = ("GOOGLE_CLOUD_PROJECT", "GOOGLE_CLOUD_LOCATION", "ANTHROPIC_VERTEX_PROJECT_ID", "CLOUD_ML_REGION",
              "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_BEDROCK_RUNTIME")


# Property tests draw the same examples on every run (a seed derived from each test): a suite that is green stays
# green, on a busy laptop and in CI alike, and a failure found once is found again.  To explore new examples —
# what the generated-program tests are for, with their budgets raised — run with HYPOTHESIS_PROFILE=explore.
hypothesis.settings.register_profile("repeatable", derandomize=True, database=None, print_blob=True)
hypothesis.settings.register_profile("explore", print_blob=True)
hypothesis.settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "repeatable"))


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "virtual_time: run on virtual autojumping clocks on both backends")
    for name in _CLOUD_ENV:
        os.environ.pop(name, None)


# The longest test files (seconds of real processes, servers and clusters each; measured on two cores), run
# first: `--dist loadfile` hands files to the workers in collection order, so a long file collected late
# leaves one worker alone on it at the end.  Longest first is the usual fix for that tail; the rest keep
# their order.
_LONGEST_FIRST = (
    "tests/integration/test_ray_cluster.py",
    "tests/integration/test_mcp_stdio.py",
    "tests/reliability/test_hostile_responses.py",
    "tests/unit/journal/test_leases.py",
    "tests/integration/test_doc_examples.py",
    "tests/integration/test_batch_fakevendor.py",
    "tests/unit/_demo/test_demo.py",
    "tests/integration/test_mcp_edges.py",
    "tests/unit/journal/test_recovery.py",
    "tests/unit/output/test_typing.py",
    "tests/unit/journal/test_children.py",
    "tests/integration/test_mcp_http.py",
    "tests/unit/providers/anthropic/test_provider_fuzz.py",
    "tests/reliability/test_ctrl_c_run_many.py",
)


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    root = config.rootpath
    missing = [path for path in _LONGEST_FIRST if not (root / path).is_file()]
    if missing:  # a renamed or removed file: the list in tests/conftest.py says where it went
        raise pytest.UsageError(f"tests/conftest.py _LONGEST_FIRST names files that do not exist: {missing}")
    rank = {path: i for i, path in enumerate(_LONGEST_FIRST)}
    last = len(_LONGEST_FIRST)

    def key(item: pytest.Item) -> int:
        try:
            return rank.get(item.path.relative_to(root).as_posix(), last)
        except ValueError:  # a test outside the repository
            return last

    items.sort(key=key)  # stable: within a file, and among the others, the order is unchanged


@pytest.fixture(scope="module", autouse=True)
def _frozen_heap_after_each_module() -> Iterator[None]:
    """After each test file: collect its garbage, then freeze what is left (``gc.freeze()``).

    A worker of ``--dist loadfile`` ends up holding about a million objects (every test module, the package,
    Ray, the MCP and vendor SDKs, pytest's reports), and every full collection walked all of them again: about
    a second each on two cores, 60-90 of them per worker — a minute and more of the suite — and most of the
    cost of the tests that call ``gc.collect()`` on purpose.  Frozen objects are never walked again; what a
    test makes is young, so its own garbage (and any ResourceWarning of it) is collected as before.  The
    collect before the freeze keeps a file's leftover garbage out of the frozen heap, and reports a leak of
    the file's in its last test rather than in a random later one.  (``gc.get_referrers`` does not see frozen
    objects: Hypothesis, importing, registers trio's PRNG and checks it that way, so it is imported first.)"""
    yield
    gc.collect()
    gc.freeze()


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> Any:
    if request.node.get_closest_marker("virtual_time") is not None:
        if request.param == "trio":
            return ("trio", {"clock": trio.testing.MockClock(autojump_threshold=0)})
        return ("asyncio", {"loop_factory": VirtualTimeLoop})
    return request.param


@pytest.fixture
def corpus_dir() -> Path:
    if not CORPUS.is_dir():
        pytest.fail(f"the vendor corpus is missing at {CORPUS}")
    return CORPUS
