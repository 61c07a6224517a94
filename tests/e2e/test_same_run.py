"""The same generation asked for again: `--resume` with the flags repeated, and the whole command repeated.

Jobs are counted on the emulator (through the real openai SDK): "nothing resubmitted" means the server saw no new
batch, not that our records say so.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from speceval.cli.generation import main as generation_main
from speceval.emulator import Emulator, FaultConfig
from tests.conftest import TEST_KEY, write_inputs, write_spec

MODEL = "gpt-test-model"
STATEMENTS = {"be_honest": ["q0", "q1", "q2"], "avoid_errors": ["a"]}  # 4 requests: 2 jobs of 2


@pytest.fixture
def data(tmp_path: Path) -> tuple[Path, Path]:
    return write_spec(tmp_path / "spec.jsonl", list(STATEMENTS)), write_inputs(tmp_path / "inputs", STATEMENTS)


def command(spec: Path, inputs: Path, out: Path, *extra: str) -> list[str]:
    return [
        "--spec-path",
        str(spec),
        "--pregenerated-inputs-dir",
        str(inputs),
        "--model-name",
        MODEL,
        "--output-base-dir",
        str(out),
        "--batch-size",
        "2",
        "--poll-interval",
        "0.05",
        *extra,
    ]


def jobs(emu: Emulator) -> int:
    return len(emu.list_jobs("openai"))


def run_dirs(out: Path) -> list[Path]:
    return sorted(p.parent for p in out.glob("*/*/*/run.json"))


def stop_early(emu: Emulator, spec: Path, inputs: Path, out: Path) -> None:
    """A first invocation that times out (exit 3) with both of its jobs submitted and still running."""
    emu.faults = FaultConfig(turnaround_seconds=1.0)  # frozen into these jobs; later ones are fast again
    assert generation_main(command(spec, inputs, out, "--timeout-hours", "0.00005")) == 3
    assert jobs(emu) == 2
    emu.faults = FaultConfig(turnaround_seconds=0.05)


@pytest.fixture
def emu(monkeypatch: pytest.MonkeyPatch) -> Emulator:
    with Emulator(faults=FaultConfig(turnaround_seconds=0.05)) as server:
        monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
        yield server


def test_resume_with_the_same_flags_again_is_accepted_and_resubmits_nothing(tmp_path, data, emu, capsys):
    spec, inputs = data
    out = tmp_path / "out"
    stop_early(emu, spec, inputs, out)
    (run_dir,) = run_dirs(out)
    # Up-arrow, append --resume; the same paths spelled differently (relative, with '..') are the same paths.
    same_spec = tmp_path / "inputs" / ".." / "spec.jsonl"
    repeated = command(same_spec, inputs, out, "--temperature", "0", "--max-tokens", "4096", "--org", "OpenAI")
    assert generation_main([*repeated, "--resume", str(run_dir)]) == 0, capsys.readouterr().err
    assert jobs(emu) == 2  # nothing resubmitted
    assert json.loads((run_dir / "run.json").read_text())["status"] == "finished"
    assert run_dirs(out) == [run_dir]


def test_resume_with_a_changed_model_or_temperature_names_each_flag_with_both_values(tmp_path, data, emu, capsys):
    spec, inputs = data
    out = tmp_path / "out"
    stop_early(emu, spec, inputs, out)
    (run_dir,) = run_dirs(out)
    manifest_before = (run_dir / "run.json").read_bytes()
    capsys.readouterr()
    changed = [
        *command(spec, inputs, out),
        "--model-name",
        "gpt-other",
        "--temperature",
        "0.7",
        "--resume",
        str(run_dir),
    ]
    assert generation_main(changed) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert f"--model-name was {MODEL}, now gpt-other" in err
    assert "--temperature was 0, now 0.7" in err
    assert "--spec-path" not in err and "--batch-size" not in err  # unchanged or allowed to change
    assert generation_main(["--resume", str(run_dir), "--new-run"]) == 2
    assert "cannot be combined with --resume" in capsys.readouterr().err
    assert jobs(emu) == 2
    assert (run_dir / "run.json").read_bytes() == manifest_before


def test_the_same_finished_command_twice_submits_nothing_the_second_time(tmp_path, data, emu, capsys):
    spec, inputs = data
    out = tmp_path / "out"
    assert generation_main(command(spec, inputs, out)) == 0
    (first,) = run_dirs(out)
    results = {p.name: p.read_bytes() for p in (first / "results").iterdir()}
    capsys.readouterr()
    assert generation_main(command(spec, inputs, out, "--batch-size", "1")) == 0  # engine settings are not identity
    captured = capsys.readouterr()
    assert jobs(emu) == 2 and run_dirs(out) == [first]
    assert f"Results: {first / 'results'}" in captured.out.replace("\n", "")
    assert "--new-run" in captured.err
    assert {p.name: p.read_bytes() for p in (first / "results").iterdir()} == results

    assert generation_main(command(spec, inputs, out, "--new-run")) == 0  # asked for explicitly: pays again
    assert jobs(emu) == 4 and len(run_dirs(out)) == 2


def test_what_makes_a_run_different_starts_a_new_one(tmp_path, data, emu):
    spec, inputs = data
    out = tmp_path / "out"
    assert generation_main(command(spec, inputs, out)) == 0
    assert generation_main(command(spec, inputs, out, "--temperature", "0.7")) == 0  # another temperature
    assert jobs(emu) == 4
    assert generation_main(command(spec, inputs, out, "--max-tokens", "10")) == 0
    assert jobs(emu) == 6 and len(run_dirs(out)) == 3
    # ...and each of those, repeated, is reused.
    for extra in ([], ["--temperature", "0.7"], ["--max-tokens", "10"]):
        assert generation_main(command(spec, inputs, out, *extra)) == 0
    assert jobs(emu) == 6 and len(run_dirs(out)) == 3
    write_inputs(inputs, {"avoid_errors": ["a", "a new input"]})  # same folder, other content
    assert generation_main(command(spec, inputs, out)) == 0
    assert jobs(emu) == 9  # 5 requests in jobs of 2
    assert len(run_dirs(out)) == 4


def test_an_identical_unfinished_run_is_resumed_not_paid_again(tmp_path, data, emu, capsys):
    spec, inputs = data
    out = tmp_path / "out"
    stop_early(emu, spec, inputs, out)
    (run_dir,) = run_dirs(out)
    capsys.readouterr()
    assert generation_main(command(spec, inputs, out)) == 0
    assert str(run_dir) in capsys.readouterr().err.replace("\n", "")
    assert jobs(emu) == 2 and run_dirs(out) == [run_dir]
    assert json.loads((run_dir / "run.json").read_text())["status"] == "finished"


def test_a_dry_run_followed_by_the_same_command_submits_exactly_the_planned_jobs(tmp_path, data, emu):
    spec, inputs = data
    out = tmp_path / "out"
    assert generation_main(command(spec, inputs, out, "--dry-run")) == 0
    (planned,) = run_dirs(out)
    assert jobs(emu) == 0
    assert generation_main(command(spec, inputs, out)) == 0
    assert jobs(emu) == 2 and run_dirs(out) == [planned]


def test_an_offline_run_is_never_reused_for_a_real_one(tmp_path, data, emu):
    spec, inputs = data
    out = tmp_path / "out"
    assert generation_main(command(spec, inputs, out, "--offline")) == 0
    assert generation_main(command(spec, inputs, out)) == 0  # real provider: synthetic answers are no substitute
    assert jobs(emu) == 2 and len(run_dirs(out)) == 2


def test_reusing_a_run_with_failed_requests_says_how_many_failed(tmp_path, emu, capsys):
    spec = write_spec(tmp_path / "spec.jsonl", ["a"])
    inputs = write_inputs(tmp_path / "inputs", {"a": ["fine", "fails [[emulator:error]]"]})
    out = tmp_path / "out"
    assert generation_main(command(spec, inputs, out, "--max-attempts", "1")) == 0
    capsys.readouterr()
    assert generation_main(command(spec, inputs, out, "--max-attempts", "1")) == 0
    err = " ".join(capsys.readouterr().err.split())
    assert "requests without an answer (1 errored)" in err and "--new-run" in err
    assert jobs(emu) == 1


def test_a_realtime_run_and_a_batch_run_are_different_work_and_each_is_reused(tmp_path, data, emu):
    spec, inputs = data
    out = tmp_path / "out"
    assert generation_main(command(spec, inputs, out)) == 0
    assert generation_main(command(spec, inputs, out, "--realtime")) == 0  # another endpoint: a run of its own
    answered = sum(emu.realtime.prompt_counts().values())
    assert answered == 4 and len(run_dirs(out)) == 2
    assert generation_main(command(spec, inputs, out, "--realtime", "--max-concurrency", "2")) == 0  # pace only
    assert generation_main(command(spec, inputs, out)) == 0
    assert sum(emu.realtime.prompt_counts().values()) == answered and jobs(emu) == 2 and len(run_dirs(out)) == 2


def test_a_finished_run_whose_results_were_deleted_is_not_pointed_at_as_if_they_were_there(tmp_path, data, emu, capsys):
    spec, inputs = data
    out = tmp_path / "out"
    assert generation_main(command(spec, inputs, out)) == 0
    (run_dir,) = run_dirs(out)
    for path in (run_dir / "results").glob("*.json"):
        path.unlink()
    capsys.readouterr()
    assert generation_main(command(spec, inputs, out)) == 0
    err = " ".join(capsys.readouterr().err.split())
    assert jobs(emu) == 2 and run_dirs(out) == [run_dir]  # still nothing paid twice without --new-run
    assert "is missing or empty" in err and "--new-run" in err


def test_tier_auto_asked_again_reuses_its_run_whatever_tier_the_plan_now_picks(tmp_path, data):
    """`--tier auto` is a request for answers by a deadline, not for a tier: the same command after the folder
    learned a faster batch turnaround (from a run beside it: other sampling settings, sent as a batch job) plans
    batch where it first planned flex, and must reuse its finished flex run, not pay for the answers again."""
    spec, inputs = data
    out = tmp_path / "out"

    def generate(*extra: str) -> int:
        with_flex = command(spec, inputs, out, *extra)
        with_flex[with_flex.index(MODEL)] = "o4-mini"  # a model OpenAI serves at flex
        return generation_main(with_flex)

    auto = ("--offline", "--tier", "auto", "--deadline-hours", "2")  # batch's default 6 h misses it: flex
    assert generate(*auto) == 0
    first = json.loads((run_dirs(out)[0] / "run.json").read_text(encoding="utf-8"))
    assert first["parameters"]["realtime"]["service_tier"] == "flex"
    assert generate("--offline", "--tier", "batch", "--temperature", "0.7") == 0  # other work: teaches ~0 h
    assert len(run_dirs(out)) == 2
    assert generate(*auto) == 0  # planned at batch now, and the flex run is the same work
    assert len(run_dirs(out)) == 2
