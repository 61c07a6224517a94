"""The test run's shared Ray cluster (tests/raydata/shared_ray.py) is found and joined by nothing outside the run.

Other Ray users run on the same machine (other test runs, other worktrees): their `ray.init()` must never land on
this cluster, and a process that learns its address without its token must be turned away.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import REPO, cli_env
from tests.raydata import NEEDS_RAY

pytestmark = NEEDS_RAY

CONNECT = "import sys, ray; ray.init(address=sys.argv[1], include_dashboard=False); print('joined')"


def test_an_address_none_or_auto_init_elsewhere_never_resolves_to_the_shared_cluster(
    shared_ray_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from ray._private.services import canonicalize_bootstrap_address

    address = shared_ray_env["RAY_ADDRESS"]
    for name in ("RAY_ADDRESS", "RAY_AUTH_MODE", "RAY_AUTH_TOKEN_PATH"):
        monkeypatch.delenv(name, raising=False)
    # `ray.init()` reads RAY_ADDRESS, then /tmp/ray/ray_current_cluster (the last `ray start` on the machine).
    assert canonicalize_bootstrap_address(None) != address


def test_a_process_without_the_token_is_turned_away(shared_ray_env: dict[str, str]) -> None:
    # `ray.init("auto")` elsewhere may pick this cluster's GCS among the running ones: the token is what stops it.
    env = cli_env(RAY_DISABLE_USAGE_STATS="1", RAY_gcs_server_port_wait_time_s="1")  # one attempt, not 20 s
    for name in ("RAY_ADDRESS", "RAY_AUTH_MODE", "RAY_AUTH_TOKEN_PATH"):
        env.pop(name, None)
    stranger = subprocess.run(
        [sys.executable, "-c", CONNECT, shared_ray_env["RAY_ADDRESS"]],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert stranger.returncode != 0 and "joined" not in stranger.stdout
    assert "InvalidAuthToken" in stranger.stderr, stranger.stderr[-3000:]
