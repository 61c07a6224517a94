"""Provider-neutral pieces of the emulator: lifecycle, deterministic outcomes, responder, multipart, faults."""

from __future__ import annotations

import os

import pytest
from pydantic import ValidationError

from speceval.emulator import FaultConfig, HttpFault, respond
from speceval.emulator.faults import JobPlan
from speceval.emulator.jobs import (
    Job,
    Kind,
    Phase,
    RequestItem,
    emitted,
    executed_count,
    final_outcomes,
    phase,
    processing_order,
    random_id,
)
from speceval.emulator.multipart import parse_multipart


def make_job(n: int, **faults: object) -> Job:
    config = FaultConfig(turnaround_seconds=10.0, **faults)  # type: ignore[arg-type]
    items = [RequestItem(custom_id=f"c{i}", model="m", prompt=f"p{i}") for i in range(n)]
    return Job(provider="openai", id="job1", created_at=1000.0, requests=items, plan=JobPlan.capture(config, "job1"))


def test_lifecycle_is_a_function_of_wall_clock_time() -> None:
    job = make_job(10)
    assert [phase(job, t) for t in (1000.0, 1001.0, 1005.0, 1009.5, 1010.0)] == [
        Phase.QUEUED,
        Phase.RUNNING,
        Phase.RUNNING,
        Phase.FINALIZING,
        Phase.COMPLETED,
    ]
    assert [executed_count(job, t) for t in (1000.5, 1001.0, 1005.0, 1009.0, 2000.0)] == [0, 0, 5, 10, 10]
    job.cancel_requested_at = 1005.0
    assert phase(job, 1005.5) is Phase.CANCELLING and phase(job, 1006.0) is Phase.CANCELLED
    outcomes = final_outcomes(job, Phase.CANCELLED, respond)
    assert sum(o.kind is Kind.SUCCEEDED for o in outcomes) == 5
    assert sum(o.kind is Kind.CANCELLED for o in outcomes) == 5


def test_processing_order_is_seeded_and_never_the_identity() -> None:
    for n in range(2, 8):
        order = processing_order(make_job(n))
        assert sorted(order) == list(range(n)) and order != list(range(n))
    assert processing_order(make_job(30)) == processing_order(make_job(30))
    assert processing_order(make_job(30)) != processing_order(make_job(30, seed=1))


def test_expiry_marker_and_rates_are_deterministic() -> None:
    job = make_job(20, expire_jobs=True, complete_fraction_on_expiry=0.3)
    job.requests[0] = RequestItem(custom_id="c0", model="m", prompt="x [[emulator:error]]")
    assert phase(job, 1010.0) is Phase.EXPIRED
    outcomes = final_outcomes(job, Phase.EXPIRED, respond)
    assert sum(o.kind is Kind.EXPIRED for o in outcomes) == 14
    executed = [o for o in outcomes if o.kind is not Kind.EXPIRED]
    assert all(o.input_tokens > 0 for o in executed)
    assert outcomes[0].kind in (Kind.INVALID, Kind.EXPIRED)
    noisy = make_job(200, error_rate=0.2, drop_rate=0.1, duplicate_rate=0.1)
    first = final_outcomes(noisy, Phase.COMPLETED, respond)
    assert first == final_outcomes(noisy, Phase.COMPLETED, respond)
    assert 20 < sum(o.kind is Kind.SERVER_ERROR for o in first) < 60
    lines = emitted(noisy, first)
    assert len(lines) == 200 - sum(o.dropped for o in first) + sum(o.duplicated and not o.dropped for o in first)


def test_responder_is_deterministic_tagged_and_prompt_specific() -> None:
    assert respond("m", "hello") == respond("m", "hello")
    assert respond("m", "hello") != respond("m", "hello!")
    assert respond("gpt-x", "q").startswith("[synthetic answer from the speceval emulator; model=gpt-x] ")


def test_multipart_parser_keeps_bytes_exactly() -> None:
    payload = b"line one\r\nline two\n\x00\xff"
    body = (
        b'--XyZ\r\nContent-Disposition: form-data; name="purpose"\r\n\r\nbatch\r\n'
        b'--XyZ\r\nContent-Disposition: form-data; name="file"; filename="in.jsonl"\r\n'
        b"Content-Type: application/octet-stream\r\n\r\n" + payload + b"\r\n--XyZ--\r\n"
    )
    parts = parse_multipart(body, 'multipart/form-data; boundary="XyZ"')
    assert parts["purpose"].text == "batch"
    assert parts["file"].filename == "in.jsonl" and parts["file"].data == payload
    with pytest.raises(ValueError):
        parse_multipart(b"nothing", "multipart/form-data")


def test_fault_config_validates() -> None:
    with pytest.raises(ValidationError):
        FaultConfig(error_rate=1.5)
    with pytest.raises(ValidationError):
        FaultConfig(turnaround_secnds=1.0)  # type: ignore[call-arg]
    with pytest.raises(ValidationError):
        HttpFault(provider="azure", path_regex="x", status=500)
    fault = HttpFault(provider="google", method="get", path_regex=r"/batches/", status=503)
    assert fault.provider == "gemini" and fault.matches("gemini", "GET", "/gemini/v1/batches/x")
    assert not fault.matches("openai", "GET", "/openai/v1/batches/x")
    assert (
        FaultConfig.model_validate_json('{"turnaround_seconds": 2, "http_faults": [{"status": 429}]}')
        .http_faults[0]
        .count
        == 1
    )


def test_a_forked_process_makes_ids_of_its_own() -> None:
    """A child forked from a process that imported the emulator (the suite forks its commands, tests/forked.py)
    draws ids from a generator seeded again, not the parent's next ones: two offline runs forked from one process
    gave their batches the same id in one `.emulator/` state."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its next id, then out without the parent's exit handlers
        os.write(write, random_id("batch_").encode())
        os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    with os.fdopen(read) as pipe:
        child = pipe.read()
    assert child.startswith("batch_") and child != random_id("batch_")
