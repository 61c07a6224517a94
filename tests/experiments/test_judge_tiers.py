"""`tier: auto` for the judges: a judge's round is re-planned as its first task starts, as a candidate's later
rounds are. A study that ran late (its generation job took longer than planned) sends its judges at flex, the batch
price, instead of a batch round trip that can no longer meet the deadline; experiment.json and the run say so. A
judge that an earlier invocation started keeps the tier it started at: its batch jobs in flight are collected,
never sent again at flex (found missing by the study matrix's late clock: the judges kept the first plan's tier)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections import Counter
from datetime import timedelta
from pathlib import Path

import pytest

from speceval.batch.records import utcnow
from speceval.defaults import Tier
from speceval.emulator import Emulator, FaultConfig
from tests import forked
from tests.conftest import SAMPLE_INPUTS, SAMPLE_SPEC, TEST_KEY, cli_env
from tests.experiments.test_auto_rounds import _study_tiers

JUDGE = "gpt-5-mini"  # on the shipped table's flex list, as the candidate
STUDY = f"""experiment_name: auto-judges
output_dir: out
specs:
  - name: openai
    spec_path: {SAMPLE_SPEC}
    inputs_dir: {SAMPLE_INPUTS}
candidates:
  - model: o4-mini
judges:
  - model: {JUDGE}
stages: [generation, compliance]
engine:
  tier: auto
  deadline_hours: 13
  poll_interval: 0.1
"""
# Planned all-batch: the answers' round trip and the judges', 6 h each at OpenAI (12 h), meet 13 h.


def test_a_judge_planned_at_batch_goes_at_flex_when_judging_starts_late_and_a_started_judge_keeps_its_tier(
    tmp_path: Path,
) -> None:
    tiers, config = _study_tiers(tmp_path, STUDY)
    judge = config.judges[0]
    assert tiers.tier_of("judges[0]", judge, 2) is Tier.BATCH  # the plan: judging through the Batch API
    said: list[str] = []
    tiers.say = said.append
    # An earlier invocation sent the judge through the Batch API: it stays there, nothing re-planned.
    tiers.started_at = utcnow() - timedelta(hours=12)
    assert tiers.judging_tier("judges[0]", judge, Tier.BATCH) is Tier.BATCH and tiers.replans == []
    # Judging starts 12 h in: 1 h left cannot hold a 6 h batch round trip; flex costs the same.
    assert tiers.judging_tier("judges[0]", judge, None) is Tier.FLEX
    [replan] = tiers.replans
    assert (replan.entry, replan.run, replan.judging, replan.planned, replan.sent) == (
        "judges[0]",
        None,
        True,
        Tier.BATCH,
        Tier.FLEX,
    )
    assert "judges[0] judging at flex (planned batch)" in said[0]


def _env(emulator: Emulator, hour_seconds: str) -> dict[str, str]:
    return cli_env(
        OPENAI_API_KEY=TEST_KEY,
        OPENAI_BASE_URL=emulator.openai_base_url,
        SPECEVAL_POLL_INTERVAL="0.1",
        SPECEVAL_HOUR_SECONDS=hour_seconds,
    )


def _judge_manifests(out: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(out.glob(f"compliance/**/judge_{JUDGE}/**/run.json"))]


@pytest.mark.slow
def test_speceval_run_sends_a_late_studys_judges_at_flex_and_says_so(tmp_path: Path) -> None:
    """A scaled clock (`SPECEVAL_HOUR_SECONDS=0.5`): the answers' job takes 4 s (8 h), so as judging starts 5 h are
    left and the judges go at flex in the same invocation, each answer judged once."""
    (tmp_path / "exp.yaml").write_text(STUDY)
    with Emulator(faults=FaultConfig(turnaround_seconds=4.0, flex_latency_seconds=0.05)) as emulator:
        command = [sys.executable, "-m", "speceval", "run", "exp.yaml"]
        env = _env(emulator, "0.5")
        done = forked.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL)
        jobs = emulator.list_jobs("openai")
        sent = emulator.realtime.prompt_counts()
    assert done.returncode == 0, done.stderr[-3000:]
    shown = " ".join((done.stdout + done.stderr).split())
    assert "judges[0] judging at flex (planned batch)" in shown, shown[-3000:]
    # The spec's canaries were judged as the study started (on time: through the Batch API, as planned); the
    # answers, judged after the late generation, at flex: two jobs, the answers' and the canaries'.
    assert len(jobs) == 2 and len(sent) == 40 and set(sent.values()) == {1}  # every answer judged once, at flex
    out = tmp_path / "out"
    [judged] = [json.loads(p.read_text()) for p in out.glob(f"compliance/openai/default/**/judge_{JUDGE}/*/run.json")]
    assert judged["parameters"]["realtime"]["service_tier"] == "flex"
    [canaries] = [json.loads(p.read_text()) for p in out.glob(f"compliance/openai/canaries/**/judge_{JUDGE}/run.json")]
    assert "realtime" not in canaries["parameters"]
    replans = json.loads((tmp_path / "out" / "experiment.json").read_text())["replans"]
    assert [(r["entry"], r["judging"], r["sent"]) for r in replans] == [("judges[0]", True, "flex")]


@pytest.mark.slow
def test_a_judge_killed_with_its_batch_job_in_flight_is_collected_on_a_late_rerun_never_sent_again(
    tmp_path: Path,
) -> None:
    """On time, the judges go through the Batch API; killed while their job runs; rerun on a clock by which the
    deadline is long lost: the re-plan would say flex, but the judge started at batch, so its job is collected and
    no judge prompt is sent again (nothing paid twice)."""
    (tmp_path / "exp.yaml").write_text(STUDY)
    out = tmp_path / "out"
    command = [sys.executable, "-m", "speceval", "run", "exp.yaml"]
    with Emulator(faults=FaultConfig(turnaround_seconds=3.0, flex_latency_seconds=0.05)) as emulator:
        proc = forked.Popen(
            command,
            cwd=tmp_path,
            env=_env(emulator, "3600"),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            stdin=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 120
        while len(emulator.list_jobs("openai")) < 3:  # the canaries', the answers', then theirs judged: killed
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.05)
        proc.kill()
        proc.wait()
        before = len(emulator.list_jobs("openai"))
        done = forked.run(
            command,
            cwd=tmp_path,
            env=_env(emulator, "0.0001"),
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
        )
        jobs = emulator.list_jobs("openai")
        sent = emulator.realtime.prompt_counts()
    assert done.returncode == 0, done.stderr[-3000:]
    assert before == 3 and sent == {}  # no judge prompt went at flex: the jobs in flight were collected
    assert max(Counter(job.metadata.get("speceval_key") for job in jobs).values()) == 1  # each chunk paid once
    manifests = _judge_manifests(out)
    assert manifests and all("realtime" not in m["parameters"] for m in manifests)  # started at batch, kept
    assert {m["status"] for m in manifests} == {"finished"}
    verdicts = [
        e
        for p in out.glob(f"compliance/**/judge_{JUDGE}/*/results/*.json")
        for e in json.loads(p.read_text())["results"]
    ]
    assert len(verdicts) == 40  # every answer judged once: nothing lost with the kill


def _tiers(folder: Path, study: str, started: bool):
    """The study's tiers as `speceval run` plans them over `folder`'s output, as a first start or a resumed one."""
    from speceval.experiments.runner import plan, preflight
    from speceval.experiments.tier_study import StudyTiers

    experiment = folder / "exp.yaml"
    experiment.write_text(study)
    config, output_dir, _ = preflight(experiment, offline=False, dry_run=True)  # the folder ran against a server
    _, groups = plan(config, output_dir)
    return StudyTiers(config, folder, groups, output_dir=output_dir, started=started)


@pytest.mark.slow
def test_a_started_study_goes_on_from_the_plan_it_started_with_not_a_plan_made_afresh_from_what_its_jobs_took(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found by the study matrix (judges at `auto`, a budget raised on a late clock): resumed, a study past its
    deadline was planned afresh from what its jobs took as if the whole deadline were still ahead, and that plan
    "met" it at standard (twice the price) for the rounds not yet started. It goes on from the plan it started
    with; what its jobs took enters as each round still to start is re-planned against the hours left."""
    # 60 h: the plan it starts with is all batch (12 h); a batch job then takes ~300 h, so a plan made afresh from
    # that pace needs realtime tiers (standard for the judge flex does not serve) to "meet" 60 h.
    both = STUDY.replace(f"  - model: {JUDGE}\n", f"  - model: {JUDGE}\n  - model: gpt-4.1-mini-2025-04-14\n")
    both = both.replace("deadline_hours: 13", "deadline_hours: 60")
    (tmp_path / "exp.yaml").write_text(both)
    with Emulator(faults=FaultConfig(turnaround_seconds=3.0)) as emulator:
        command = [sys.executable, "-m", "speceval", "run", "exp.yaml"]
        done = forked.run(
            command, cwd=tmp_path, env=_env(emulator, "0.01"), capture_output=True, text=True, stdin=subprocess.DEVNULL
        )
    assert done.returncode == 0, done.stderr[-3000:]  # each batch job took ~300 "hours"
    monkeypatch.setenv("SPECEVAL_HOUR_SECONDS", "0.01")  # the same clock for the plans below
    afresh = _tiers(tmp_path, both, started=False)  # what a plan from the jobs' pace alone says
    assert afresh.plan is not None and "standard" in {row.tier.value for row in afresh.plan.rounds}
    resumed = _tiers(tmp_path, both, started=True)
    empty = tmp_path / "empty"
    empty.mkdir()
    configured = _tiers(empty, both.replace("output_dir: out", f"output_dir: {empty / 'out'}"), started=False)
    assert resumed.plan is not None and configured.plan is not None
    assert [row.tier for row in resumed.plan.rounds] == [row.tier for row in configured.plan.rounds]
    assert {row.tier for row in resumed.plan.rounds} == {Tier.BATCH}
