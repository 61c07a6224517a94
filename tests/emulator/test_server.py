"""Server-level behaviour: persistence across restarts, other processes, clean shutdown, stats, `serve()`."""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from speceval.emulator import Emulator, FaultConfig
from tests import forked
from tests.conftest import interruptible

from .helpers import (
    KEY,
    anthropic_client,
    anthropic_requests,
    openai_client,
    openai_lines,
    parse_jsonl,
    raw,
    wait_until,
)

REPO = Path(__file__).resolve().parents[2]


def test_state_dir_lets_a_new_emulator_finish_the_old_jobs(tmp_path: Path) -> None:
    state = tmp_path / "state"
    faults = FaultConfig(turnaround_seconds=0.6)
    with (
        Emulator(faults=faults, state_dir=state) as first,
        openai_client(first) as client,
        anthropic_client(first) as claude,
    ):
        uploaded = client.files.create(file=("in.jsonl", openai_lines(["a", "b", "c"])), purpose="batch")
        batch = client.batches.create(
            input_file_id=uploaded.id,
            endpoint="/v1/chat/completions",
            completion_window="24h",
            metadata={"speceval_key": "k"},
        )
        message_batch = claude.messages.batches.create(requests=anthropic_requests(["x"]))  # type: ignore[arg-type]
        assert client.batches.retrieve(batch.id).status in ("validating", "in_progress")
    assert not list(state.rglob("*.tmp")), "atomic writes leave no temp files"
    with (
        Emulator(faults=FaultConfig(turnaround_seconds=5.0), state_dir=state) as second,
        openai_client(second) as client,
        anthropic_client(second) as claude,
    ):
        # The job keeps the turnaround it was created with, measured on the wall clock.
        final = wait_until(lambda: client.batches.retrieve(batch.id), lambda b: b.status == "completed")
        assert final.metadata == {"speceval_key": "k"} and client.files.retrieve(uploaded.id).bytes > 0
        lines = parse_jsonl(client.files.content(final.output_file_id).text)
        assert sorted(line["custom_id"] for line in lines) == ["r0", "r1", "r2"]
        ended = wait_until(
            lambda: claude.messages.batches.retrieve(message_batch.id), lambda b: b.processing_status == "ended"
        )
        assert ended.results_url and ended.results_url.startswith(second.anthropic_base_url)
        assert [r.result.type for r in claude.messages.batches.results(message_batch.id)] == ["succeeded"]
        jobs = second.list_jobs("openai")
        assert [(j.id, j.state, j.request_count) for j in jobs] == [(batch.id, "completed", 3)]
        assert second.stats.batches_created == {"openai": 0, "anthropic": 0, "gemini": 0}
    with Emulator(state_dir=state) as third, openai_client(third) as client:
        # Results written by the second emulator are served unchanged by a third one.
        assert parse_jsonl(client.files.content(final.output_file_id).text) == lines


def test_sdk_in_another_process_uses_the_emulator(emu: Emulator, tmp_path: Path) -> None:
    # Another process (forked, tests/forked.py: its own pid, no thread of this one, so not the emulator's) whose only
    # configuration is its environment, as a user's script would be.
    env = {**os.environ, "OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": emu.openai_base_url}
    done = forked.run(
        [sys.executable, "-m", "tests.emulator.other_process_client"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    result = json.loads(done.stdout)
    assert result["pid"] != os.getpid()
    assert [job.id for job in emu.list_jobs("openai")] == [result["id"]]
    assert json.loads(result["text"])["custom_id"] == "only"


def test_close_ends_every_thread_even_with_open_keep_alive_connections() -> None:
    before = set(threading.enumerate())
    emu = Emulator(faults=FaultConfig(turnaround_seconds=0.05)).start()
    client = openai_client(emu)
    try:
        client.files.list()  # leaves a pooled keep-alive connection open on the server
        started = time.monotonic()
        emu.close()
        assert time.monotonic() - started < 2.0
    finally:
        client.close()
    assert set(threading.enumerate()) - before == set()


def test_concurrent_clients_and_request_stats(emu: Emulator) -> None:
    with openai_client(emu) as client:
        uploaded = client.files.create(file=("in.jsonl", openai_lines(["a"])), purpose="batch")

        def create(_: int) -> str:
            return client.batches.create(
                input_file_id=uploaded.id, endpoint="/v1/chat/completions", completion_window="24h"
            ).id

        with ThreadPoolExecutor(max_workers=8) as pool:
            ids = list(pool.map(create, range(24)))
    assert len(set(ids)) == 24
    stats = emu.stats
    assert stats.batches_created["openai"] == 24 and stats.files_uploaded == 1
    assert stats.requests["POST /openai/v1/batches"] == 24 and stats.requests["POST /openai/v1/files"] == 1
    assert {j.id for j in emu.list_jobs("openai")} == set(ids)


def test_unknown_prefix_is_a_json_404(emu: Emulator) -> None:
    status, headers, body = raw("GET", f"{emu.base_url}/v1/batches")
    assert status == 404 and headers["content-type"] == "application/json"
    assert "/openai/v1" in json.loads(body)["error"]["message"]


def test_serve_runs_in_the_foreground_until_interrupted(tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    script = f"from speceval.emulator import serve\nserve(port={port}, state_dir={str(tmp_path)!r})\n"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([*sys.path, str(REPO)])}
    process = subprocess.Popen(
        [sys.executable, "-c", script],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=interruptible,
    )
    try:

        def answer() -> int:
            try:
                return raw("GET", f"http://127.0.0.1:{port}/anthropic/v1/messages/batches", headers={"x-api-key": KEY})[
                    0
                ]
            except OSError:
                return 0

        assert wait_until(answer, lambda status: status == 200, timeout=30) == 200
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=30)  # raises if SIGINT did not end it
    finally:
        if process.poll() is None:  # the test failed, or the server ignored SIGINT: never leave it running
            process.kill()
            process.communicate()
    assert process.returncode != 0 and b"KeyboardInterrupt" in stderr


def test_a_client_killed_on_a_keep_alive_connection_prints_no_traceback(capsys: pytest.CaptureFixture[str]) -> None:
    """A benchmark kills its client (SIGKILL) mid-run: the kernel resets the connection, and the server says nothing."""
    emu = Emulator(faults=FaultConfig(turnaround_seconds=0.05)).start()

    # This emulator's handlers only: a handler thread an earlier test in this worker left (its client still holding
    # a keep-alive connection) failed this test whenever the two ran in one process.
    earlier = {t for t in threading.enumerate() if "process_request_thread" in t.name}

    def handlers() -> list[threading.Thread]:
        return [t for t in threading.enumerate() if "process_request_thread" in t.name and t not in earlier]

    try:
        host, port = emu.base_url.removeprefix("http://").split(":")
        connection = http.client.HTTPConnection(host, int(port))
        connection.request("GET", "/openai/v1/models", headers={"Authorization": f"Bearer {KEY}"})
        response = connection.getresponse()
        assert response.status == 200 and response.read()  # all of it: the handler now waits for the next request
        assert handlers() and connection.sock is not None
        connection.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close = RST
        connection.close()
        wait_until(handlers, lambda alive: not alive)  # the handler met the reset (not the shutdown below) and ended
    finally:
        emu.close()
    assert "Traceback" not in capsys.readouterr().err
