"""`speceval` / `python -m speceval` as a user runs it. The emulator commands run forked from the test process
(tests/forked.py: a real process that a signal ends, without a new interpreter's SDK imports); `--help` runs in a
new interpreter, so that `python -m speceval` from nothing is run here too."""

from __future__ import annotations

import socket
import subprocess
import sys
import time

import openai

from tests import forked
from tests.conftest import REPO, cli_env


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_emulator_command_serves_the_openai_batch_api(tmp_path):
    port = free_port()
    proc = forked.Popen(
        [sys.executable, "-m", "speceval", "emulator", "--port", str(port), "--state-dir", str(tmp_path)],
        cwd=REPO,
        env=cli_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    try:
        client = openai.OpenAI(api_key="sk-test-cli", base_url=f"http://127.0.0.1:{port}/openai/v1", max_retries=0)
        deadline = time.monotonic() + 20
        while True:
            try:
                page = client.batches.list(limit=5)
                break
            except openai.APIConnectionError:
                assert time.monotonic() < deadline, "emulator did not start"
                time.sleep(0.1)
        assert page.data == []
        uploaded = client.files.create(
            file=(
                "in.jsonl",
                b'{"custom_id":"a","method":"POST","url":"/v1/chat/completions","body":{"model":"m","messages":[]}}\n',
            ),
            purpose="batch",
        )
        batch = client.batches.create(
            input_file_id=uploaded.id, endpoint="/v1/chat/completions", completion_window="24h"
        )
        assert client.batches.retrieve(batch.id).id == batch.id
    finally:
        proc.terminate()
        out, err = proc.communicate(timeout=20)
    assert f"OPENAI_BASE_URL=http://127.0.0.1:{port}/openai/v1" in err
    assert list(tmp_path.iterdir()), "state was persisted"


def test_emulator_on_port_0_announces_the_port_it_bound_and_that_url_answers(tmp_path):
    import re

    proc = forked.Popen(
        [sys.executable, "-m", "speceval", "emulator", "--port", "0"],
        cwd=REPO,
        env=cli_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()  # printed once the socket is bound
        found = re.search(r"speceval emulator on (http://127\.0\.0\.1:(\d+))", line)
        assert found and found.group(2) != "0", line
        client = openai.OpenAI(api_key="sk-test-cli", base_url=f"{found.group(1)}/openai/v1", max_retries=0)
        assert client.batches.list(limit=1).data == []
    finally:
        proc.terminate()
        proc.communicate(timeout=20)


def test_help_lists_the_commands():
    done = subprocess.run(
        [sys.executable, "-m", "speceval", "--help"],
        cwd=REPO,
        env=cli_env(),
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
    )
    assert done.returncode == 0 and "emulator" in done.stdout
