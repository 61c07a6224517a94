"""One Ray cluster for a whole test run: started once, found by nothing outside the run, gone when the run is.

A local Ray takes ~10 s to start on 2 cores (more under load), and each `--org ray` command that starts its own
pays it again. The Ray tests' commands instead join this cluster through `RAY_ADDRESS` (one start-up per test run,
shared by the pytest-xdist workers); one command keeps starting its own local Ray, as a user's first run does.

`python -m tests.raydata.shared_ray WATCH_PID STATE_DIR` is the keeper: it runs `ray start --head --block` in a
session of its own and stops it once WATCH_PID (the pytest process that owns the run: xdist's controller, or
pytest itself without xdist) has exited, or when it receives SIGTERM. Why it cannot leak into anything else:

- Ray's `ray.init()` without an address joins the cluster named in `<temp dir>/ray_current_cluster`, and
  `ray start` writes that file into its `--temp-dir`. The keeper gives Ray a temp dir of its own under STATE_DIR,
  so `/tmp/ray/ray_current_cluster`, which every other `ray.init()` on the machine reads, is never written.
- It uses ports the kernel just handed out (nothing fixed such as 6379 or 8265), and requires a token
  (`RAY_AUTH_MODE=token`) made here and kept in STATE_DIR (mode 700), given only to the run's commands: Ray's GCS
  listens on every interface whatever `--node-ip-address` says, and `ray.init("auto")` connects to any GCS it
  sees running, so the token, not the address, is what turns everything else away.
- Stopping does not use `ray stop`, which stops every Ray on the machine. The keeper kills by pid what is in the
  session it started `ray start` in (Ray's daemons and workers) or names the cluster's temp dir, then removes
  STATE_DIR. It watches WATCH_PID through a pidfd, so a reused pid cannot keep it alive, and a pytest that crashes
  or is killed still takes the cluster with it.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import secrets
import select
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

START_TIMEOUT = 180.0  # seconds for `ray start` on a loaded 2-core machine (it takes ~10 s idle)
# The CPUs a local Ray started by a command would have here. More would not speed the commands up (Ray waits on
# the server, two cores do the work): it deepens Ray's pipeline, and the SIGKILL test then resends more (72 of 240
# with 8, its limit; 32 and 48 with 2, as with a command's own Ray).
LOGICAL_CPUS = os.cpu_count() or 1
_PORT_FLAGS = (
    "--port",
    "--object-manager-port",
    "--node-manager-port",
    "--dashboard-port",
    "--dashboard-agent-listen-port",
    "--dashboard-agent-grpc-port",
    "--runtime-env-agent-port",
    "--metrics-export-port",
)


def state_dir_for(run_key: str) -> Path:
    """Where a run's cluster keeps its address and token: short, because Ray's socket paths must fit 107 bytes."""
    digest = hashlib.sha256(run_key.encode()).hexdigest()[:12]
    return Path("/tmp") / f"speceval-ray-{digest}"


def command_env(state_dir: Path) -> dict[str, str]:
    """The variables that make a command join the cluster (and nothing else that a test did not ask for)."""
    return {
        "RAY_ADDRESS": (state_dir / "address").read_text().strip(),
        "RAY_AUTH_MODE": "token",
        "RAY_AUTH_TOKEN_PATH": str(state_dir / "token"),
    }


def join(watch_pid: int, run_key: str) -> dict[str, str]:
    """The cluster of this test run (started by whichever pytest process asks first); its `command_env`."""
    state_dir = state_dir_for(run_key)
    with open(f"{state_dir}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # the other xdist workers wait here while the first one starts it
        if not _alive(state_dir):
            shutil.rmtree(state_dir, ignore_errors=True)  # a keeper that died: its files describe nothing
            state_dir.mkdir(mode=0o700)
            with open(state_dir / "keeper.log", "ab") as log:  # the keeper's own copy stays open
                subprocess.Popen(
                    [sys.executable, "-m", "tests.raydata.shared_ray", str(watch_pid), str(state_dir)],
                    cwd=Path(__file__).resolve().parents[2],
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=log,
                    start_new_session=True,
                )  # a Ctrl+C in the terminal is pytest's
            deadline = time.monotonic() + START_TIMEOUT
            while not (state_dir / "address").exists():
                if (state_dir / "failed").exists() or time.monotonic() > deadline:
                    tail = (state_dir / "keeper.log").read_bytes()[-3000:].decode(errors="replace")
                    shutil.rmtree(state_dir, ignore_errors=True)
                    raise RuntimeError(f"the shared Ray cluster did not start:\n{tail}")
                time.sleep(0.2)
        return command_env(state_dir)


def stop(run_key: str, timeout: float = 60.0) -> None:
    """Stop this run's cluster now and wait until its keeper has cleaned up (the owner's last step)."""
    state_dir = state_dir_for(run_key)
    with contextlib.suppress(FileNotFoundError, ProcessLookupError, ValueError):
        os.kill(int((state_dir / "keeper.pid").read_text()), signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while state_dir.exists() and time.monotonic() < deadline:
        time.sleep(0.1)


def _alive(state_dir: Path) -> bool:
    try:
        os.kill(int((state_dir / "keeper.pid").read_text()), 0)
    except (FileNotFoundError, ProcessLookupError, ValueError):
        return False
    return (state_dir / "address").exists()


def _free_ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    try:
        for sock in sockets:  # all bound at once, so no two of them get the same port
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def _write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    tmp.rename(path)  # readers poll for the file: they see all of it or none


def _stragglers(session: int, ray_dir: Path) -> list[int]:
    """Pids still in the cluster's session or naming its temp dir (Ray's daemons and workers, nothing else)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        with contextlib.suppress(OSError):
            if (entry / "stat").read_text().rsplit(")", 1)[1].split()[0] == "Z":
                continue  # already dead, waiting for its parent to collect it
            if os.getsid(int(entry.name)) == session or str(ray_dir).encode() in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
    return found


def _keep(watch_pid: int, state_dir: Path) -> int:
    _write(state_dir / "keeper.pid", str(os.getpid()))
    token = state_dir / "token"
    token.touch(mode=0o600)
    token.write_text(secrets.token_hex(32))
    ray_dir = state_dir / "r"
    free = _free_ports(len(_PORT_FLAGS))
    ports = [arg for flag, port in zip(_PORT_FLAGS, free, strict=True) for arg in (flag, str(port))]
    env = {**os.environ, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(token), "RAY_DISABLE_USAGE_STATS": "1"}
    env.pop("RAY_ADDRESS", None)
    command = [
        str(Path(sys.executable).with_name("ray")),
        "start",
        "--head",
        "--block",
        "--temp-dir",
        str(ray_dir),
        "--node-ip-address",
        "127.0.0.1",
        "--include-dashboard",
        "false",
        "--num-cpus",
        str(LOGICAL_CPUS),
        "--disable-usage-stats",
        *ports,
    ]
    watched = os.pidfd_open(watch_pid)  # readable once that process has exited, whatever its pid becomes later
    stopping = False

    def on_term(signum: int, frame: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)
    ray = subprocess.Popen(command, env=env, stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while not (ray_dir / "ray_current_cluster").exists():
            if ray.poll() is not None or time.monotonic() > deadline or stopping:
                print(f"ray start ended with {ray.poll()}", flush=True)
                return 1
            time.sleep(0.2)
        _write(state_dir / "address", (ray_dir / "ray_current_cluster").read_text().strip())
        print(f"shared Ray at {(state_dir / 'address').read_text()} for pid {watch_pid}", flush=True)
        while not stopping and ray.poll() is None and not select.select([watched], [], [], 0.5)[0]:
            pass
        return 0
    finally:
        # Nothing in a test cluster needs draining (SIGTERM drains for up to 30 s): its whole session is killed,
        # again until nothing is left, in case a daemon started a worker while the others were being killed.
        for _ in range(50):
            left = _stragglers(ray.pid, ray_dir)
            if not left:
                break
            for pid in left:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.1)
        ray.wait()
        print(f"stopped; still running: {_stragglers(ray.pid, ray_dir)}", flush=True)
        if (state_dir / "address").exists():
            shutil.rmtree(state_dir, ignore_errors=True)
            with contextlib.suppress(FileNotFoundError):
                os.unlink(f"{state_dir}.lock")
        else:  # `join` is waiting for it: it reports the log and removes the files
            _write(state_dir / "failed", "")


if __name__ == "__main__":
    sys.exit(_keep(int(sys.argv[1]), Path(sys.argv[2])))
