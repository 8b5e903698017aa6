"""A component the tests start that this machine lacks: a skip that says how to install it — a failure under CI.

``make test`` installs every component (the extras, Debian's chromium and PostgreSQL); a machine that cannot gets
a skip naming the command, never a silent pass.  Under ``CI=true`` the same is a failure: a skip in CI would let
an untested feature through.
"""

from __future__ import annotations

import os
from typing import NoReturn

import pytest


def missing(what: str, *, module: bool = False) -> NoReturn:
    """Skip (the whole module when ``module``) because ``what`` is missing — or, under ``CI=true``, fail."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"{what}; under CI=true a missing component fails instead of skipping", pytrace=False)
    pytest.skip(what, allow_module_level=module)
