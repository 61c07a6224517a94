"""`shared_ray`: the variables that make a command join the test run's one Ray cluster (tests/raydata/shared_ray.py)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.raydata import shared_ray


@pytest.fixture(scope="session")
def shared_ray_env(request: pytest.FixtureRequest) -> Iterator[dict[str, str]]:
    """`RAY_ADDRESS` and the cluster's token for a command's environment; the cluster starts on first use.

    Under pytest-xdist the workers share one cluster, kept until their controller (their parent) exits; without
    xdist this process owns it and stops it at the end of the session, failed or not.
    """
    worker = getattr(request.config, "workerinput", None)
    if worker is not None:
        run_key, owner = f"xdist-{worker['testrunuid']}", os.getppid()
    else:
        run_key, owner = f"pytest-{os.getpid()}", os.getpid()
    env = shared_ray.join(owner, run_key)
    try:
        yield env
    finally:
        if worker is None:
            shared_ray.stop(run_key)
