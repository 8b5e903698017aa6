"""RayCluster's arguments are checked when it is made, with a typed error naming the argument.

Found in a trial of docs/ray.md: ``drain_timeout`` and ``start_timeout`` went unchecked, so
``drain_timeout="5"`` failed every input on the workers (reported as the agent_factory's failure) and
then the cluster's own exit with a bare ``TypeError`` from ``"5" + 5.0`` — before it killed its workers,
which outlived the block; ``start_timeout=0`` started Ray's workers only to end in a ``TimeoutError``
with no message.  ``budgets`` given as a list failed with an ``AttributeError``, a budget named by a
non-``str`` was accepted, and ``init="local"`` failed with ``dict()``'s "dictionary update sequence"
``ValueError``.  No Ray is needed: the constructor refuses them before anything starts.
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from agentactors import Agent, ScriptedProvider
from agentactors.ray import RayCluster, SharedBudget


def echo_agent() -> Agent:
    return Agent(ScriptedProvider("echo", record=False))


@pytest.mark.parametrize(
    ("arguments", "error", "names"),
    [
        ({"drain_timeout": "5"}, TypeError, "drain_timeout"),
        ({"drain_timeout": True}, TypeError, "drain_timeout"),
        ({"drain_timeout": -1}, ValueError, "drain_timeout"),
        ({"drain_timeout": math.nan}, ValueError, "drain_timeout"),
        ({"start_timeout": "x"}, TypeError, "start_timeout"),
        ({"start_timeout": 0}, ValueError, "start_timeout"),
        ({"start_timeout": -1.0}, ValueError, "start_timeout"),
        ({"start_timeout": math.nan}, ValueError, "start_timeout"),
        ({"budgets": [SharedBudget(max_concurrency=1)]}, TypeError, "budgets"),
        ({"budgets": {1: SharedBudget(max_concurrency=1)}}, TypeError, "budgets"),
        ({"budgets": {"": SharedBudget(max_concurrency=1)}}, ValueError, "budgets"),
        ({"init": "local"}, TypeError, "init"),
        ({"init": ["address"]}, TypeError, "init"),
        ({"worker_options": ["num_cpus"]}, TypeError, "worker_options"),
    ],
)
def test_a_bad_argument_is_refused_when_the_cluster_is_made(
    arguments: dict[str, Any], error: type[Exception], names: str
) -> None:
    with pytest.raises(error, match=names):
        RayCluster(echo_agent, workers=1, **arguments)


@pytest.mark.parametrize(
    "arguments",
    [
        {"drain_timeout": 0},
        {"drain_timeout": math.inf},
        {"drain_timeout": 2},
        {"start_timeout": 0.5},
        {"start_timeout": math.inf},
        {"budgets": {}},
        {"budgets": {"openai": SharedBudget(max_concurrency=1)}},
        {"init": {}},
        {"init": {"num_cpus": 2}},
        {"worker_options": {"num_cpus": 0}},
    ],
)
def test_good_arguments_are_taken(arguments: dict[str, Any]) -> None:
    RayCluster(echo_agent, workers=1, **arguments)
