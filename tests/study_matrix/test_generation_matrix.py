"""The generation matrix in the suite: a small configuration run once per session and held to every invariant, each
check seen failing on the defect it guards against (planted in a copy of that run), and the fixed sample (slow)."""

from __future__ import annotations

import itertools
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.once import built_once
from tests.study_matrix import checks_flow
from tests.study_matrix import checks_generation as gen
from tests.study_matrix.generation_matrix import FAKE_KEYS, FEATURES, budget_for, run_one
from tests.study_matrix.matrix import Outcome, all_pairs

# Round 1 through the Batch API (jobs of 2, a share errored and retried, one input refused), round 2 at flex (a
# journal), then the identical command (reused) and a --new-run, planned on the first run's learned Gemini times.
SMALL = {
    "provider": "google",
    "tier": "auto",
    "conversation": "follow_ups",
    "runs": "2",
    "faults": "errors",
    "interruption": "none",
    "budget": "none",
    "ids": "odd",
}
# Most joins at once: a simulated user at auto, killed while a budget holds round 1's batch jobs, stopped by it, then
# raised (before the engine reserved a job it adopted, the resume spent $0.0016 of a $0.001 limit here).
SAMPLE = {**SMALL, "conversation": "simulated_user", "interruption": "killed", "budget": "stopped", "runs": "1"}


def test_the_covering_array_meets_every_pair_of_the_generation_features() -> None:
    configs = all_pairs(FEATURES, seed=0)
    for a, b in itertools.combinations(FEATURES, 2):
        assert {(c[a], c[b]) for c in configs} == set(itertools.product(FEATURES[a], FEATURES[b])), (a, b)
    assert configs == all_pairs(FEATURES, seed=0)


def test_the_dry_runs_plan_and_job_bound_are_read() -> None:
    shown = (
        "│ round 1             │ o4-mini │ batch │        6 │ $0.0541 │  6.00 │\n"
        "│ round 2 (candidate) │ o4-mini │ flex  │        6 │ $0.0679 │  0.03 │\n"
        "│ round 2 (user turns) │ gpt-4.1-mini │ standard │ 6 │ $0.01 │ 0.01 │\n"
        "│ preprocessed/batch_input_7e.jsonl │        2 │   530 │         $0.0181 │\n"
    )
    plan = gen.planned_tiers(shown)
    assert plan == {"round 1": "batch", "round 2 (candidate)": "flex", "round 2 (user turns)": "standard"}
    assert budget_for(SMALL, shown, plan) == pytest.approx(1.5 * 0.0181)
    assert budget_for({**SMALL, "tier": "flex"}, shown, {}) < 0.0181 / 2  # a realtime round 1: below one call


@pytest.fixture(scope="session")
def small(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> tuple[Path, Outcome]:
    def build(folder: Path) -> tuple[Path, Outcome]:
        return folder, run_one(SMALL, folder, {**os.environ, "SPECEVAL_OFFLINE_TURNAROUND": "0.05"})

    return built_once(tmp_path_factory, worker_id, "generation-matrix-small", build)


def test_a_small_configuration_holds_every_invariant(small: tuple[Path, Outcome]) -> None:
    _, outcome = small
    assert outcome.failures == {}
    assert {"reused", "tier_recorded", "sent_as_recorded", "journal_once", "tier_recorded@new_run"} <= set(
        outcome.names
    )


def _copy(small: tuple[Path, Outcome], tmp_path: Path) -> Path:
    """A copy of the small configuration's first run directory."""
    shutil.copytree(small[0], tmp_path / "c", ignore=shutil.ignore_patterns("*.lock"))
    return sorted(p.parent for p in (tmp_path / "c" / "out").glob("*/*/*/run.json"))[0]


def _texts(run: Path) -> dict[str, list[str]]:
    folder = run.parents[3] / "inputs"
    items = {p.stem: json.loads(p.read_text(encoding="utf-8"))["inputs"] for p in sorted(folder.glob("*.json"))}
    return {sid: [i["turns"][0] for i in inputs] for sid, inputs in items.items()}


def _edit(path: Path, change: Any) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    path.write_text(json.dumps(change(data) or data), encoding="utf-8")


def test_inputs_accounted_fails_on_a_dropped_duplicated_misfiled_or_untyped_answer(small, tmp_path: Path) -> None:
    run = _copy(small, tmp_path)
    texts, results = _texts(run), sorted((run / "results").glob("*.json"))
    assert gen.inputs_accounted(run, texts) == []
    original = results[0].read_bytes()
    _edit(results[0], lambda records: records[:1])
    assert any("records of indices [0]" in f for f in gen.inputs_accounted(run, texts))  # dropped
    _edit(results[0], lambda records: [*records, records[0]])
    assert any("records of indices [0, 0]" in f for f in gen.inputs_accounted(run, texts))  # duplicated
    results[0].write_bytes(original)
    # Two answers filed under each other's input (their indices kept in order)
    _edit(results[1], lambda records: [{**r, "original_index": i} for i, r in enumerate(reversed(records))])
    assert any("input_text" in f for f in gen.inputs_accounted(run, texts))
    path = next(p for p in results if json.loads(p.read_text())[0]["outcome"] == "succeeded")
    _edit(path, lambda records: [{**records[0], "output_text": None}, *records[1:]])
    assert any("succeeded with output_text 'None'" in f for f in gen.inputs_accounted(run, texts))
    _edit(path, lambda records: [{**records[0], "outcome": "ERROR: timeout"}, *records[1:]])
    assert any("is not final" in f for f in gen.inputs_accounted(run, texts))


def test_custom_ids_map_back_fails_on_an_answer_filed_by_result_order(small, tmp_path: Path) -> None:
    """Two answers of one job swapped (as a collector that trusted the provider's result order would file them)."""
    run = _copy(small, tmp_path)
    assert gen.custom_ids_map_back(run) == []
    path = next(
        p for p in sorted((run / "rounds" / "1" / "results").glob("*.json")) if len(json.loads(p.read_text())) > 1
    )

    def swap(records: list[dict[str, Any]]) -> None:
        records[0]["custom_id"], records[1]["custom_id"] = records[1]["custom_id"], records[0]["custom_id"]
        records[0]["batch_id"], records[1]["batch_id"] = records[1]["batch_id"], records[0]["batch_id"]

    _edit(path, swap)
    assert any("custom id" in f for f in gen.custom_ids_map_back(run))


def test_sent_checks_fail_on_a_job_sent_again_or_paid_without_a_record(small, tmp_path: Path) -> None:
    run = _copy(small, tmp_path)
    assert gen.sent_as_recorded(run) == [] and checks_flow.sent_once(run) == []
    job = next((run / ".emulator" / "jobs").glob("*/*.json"))
    shutil.copy(job, job.with_name("resent.json"))  # the same requests in a second job (a resume that re-created it)
    assert any("sent 2 times" in f for f in checks_flow.sent_once(run))
    assert any("no local record: ['resent']" in f for f in gen.sent_as_recorded(run))
    (job.with_name("resent.json")).unlink()
    record = next((run / "rounds" / "1" / "metadata").glob("*.json"))
    record.unlink()  # a job the provider holds (and bills) that the run lost track of
    failures = gen.sent_as_recorded(run)
    assert any("no local record" in f for f in failures) and any("attempt(s) recorded" in f for f in failures)


def test_journal_once_fails_on_a_realtime_answer_recorded_twice(small, tmp_path: Path) -> None:
    run = _copy(small, tmp_path)
    assert gen.journal_once(run) == []
    journal = run / "rounds" / "2" / "realtime" / "outcomes.jsonl"
    first = journal.read_text(encoding="utf-8").splitlines()[0]
    journal.write_text(journal.read_text(encoding="utf-8") + first + "\n", encoding="utf-8")
    assert any("recorded 2 times" in f for f in gen.journal_once(run))


def test_tier_recorded_fails_on_a_round_sent_elsewhere_than_run_json_or_the_dry_run_says(small, tmp_path: Path) -> None:
    run = _copy(small, tmp_path)
    plan = {"round 1": "batch", "round 2 (candidate)": "flex"}
    assert gen.tier_recorded(run, "auto", plan) == []
    assert any(
        "the dry run planned batch" in f
        for f in gen.tier_recorded(run, "auto", {**plan, "round 2 (candidate)": "batch"})
    )

    def all_batch(manifest: dict[str, Any]) -> None:
        manifest["parameters"]["round_tiers"]["tiers"] = ["batch", "batch"]

    _edit(run / "run.json", all_batch)
    assert any("round 2: sent at flex, run.json records batch" in f for f in gen.tier_recorded(run, "auto"))
    _edit(
        run / "rounds" / "1" / "results" / next((run / "rounds/1/results").glob("*.json")).name,
        lambda rs: [{**r, "service_tier": "flex"} for r in rs],
    )
    assert any("served at 'flex'" in f for f in gen.tier_recorded(run, "auto"))


def test_the_user_tier_check_fails_on_a_user_half_sent_elsewhere_than_its_tier(tmp_path: Path) -> None:
    half = tmp_path / "rounds" / "2" / "user"
    half.mkdir(parents=True)
    (half / "run.json").write_text(json.dumps({"parameters": {"realtime": {"service_tier": None}}}), encoding="utf-8")
    assert gen._user_tier(half, {"simulated_user": {"tier": "standard"}}, "flex") == []
    assert gen._user_tier(half, {}, "flex") == []  # beside a realtime candidate: realtime
    assert gen._user_tier(half, {"simulated_user": {"tier": "batch"}}, "flex") == [
        "2/user: sent at standard, expected batch"
    ]
    assert gen._user_tier(half, {"round_tiers": {"user": {"tier": "batch"}}}, "auto") == [
        "2/user: sent at standard, expected batch"
    ]
    (half / "metadata").mkdir()
    (half / "metadata" / "b.json").write_text("{}", encoding="utf-8")
    assert gen._user_tier(half, {}, "flex") == ["2/user: sent at standard, batch jobs made"]


def test_summary_counts_fail_on_totals_or_a_printed_table_that_disagree_with_the_files(small, tmp_path: Path) -> None:
    run = _copy(small, tmp_path)
    records = [r for p in sorted((run / "results").glob("*.json")) for r in json.loads(p.read_text())]
    outcomes = {o: sum(r["outcome"] == o for r in records) for o in ("succeeded", "errored")}
    table = "\n".join(f"│ {o} │ {n} │" for o, n in outcomes.items()) + f"\n│ total requests │ {len(records)} │"
    assert gen.summary_counts(run, table) == []
    assert any(
        "printed summary" in f
        for f in gen.summary_counts(run, table.replace("total requests │ 6", "total requests │ 5"))
    )

    def one_more(manifest: dict[str, Any]) -> None:
        manifest["totals"]["outcome_counts"]["succeeded"] += 1
        manifest["totals"]["jobs"] += 1

    _edit(run / "run.json", one_more)
    failures = gen.summary_counts(run)
    assert any("totals.outcome_counts" in f for f in failures) and any("totals.jobs" in f for f in failures)


def test_no_key_written_and_reused_fail_on_a_key_on_disk_or_a_rerun_that_sent(small, tmp_path: Path) -> None:
    run, key = _copy(small, tmp_path), FAKE_KEYS["OPENAI_API_KEY"]
    assert gen.no_key_written(run, list(FAKE_KEYS.values())) == []
    (run / "logs" / "run.log").write_text(f"Authorization: Bearer {key}\n", encoding="utf-8")
    assert gen.no_key_written(run, [key]) == [f"{key[:12]}… in logs/run.log"]
    assert gen.no_key_written(tmp_path / "empty", [key], f"printed {key}") == [f"{key[:12]}… printed"]
    assert gen.reused(0, {"a"}, {"a"}, b"x", b"x") == []
    assert gen.reused(0, {"a"}, {"a", "b"}, b"x", b"x") == ["the identical command again sent 1 job(s)"]
    assert gen.reused(3, {"a"}, {"a"}, b"x", b"y") == [
        "the identical command again: exit 3",
        "the identical command again changed the finished run's results",
    ]


def test_budget_stop_fails_on_a_spend_past_the_limit_or_a_run_not_stopped_for_the_budget(small, tmp_path: Path) -> None:
    run = _copy(small, tmp_path)
    line = "Stopped by the budget: spent $0.0016, reserved $0.0000 of the $0.0010 limit; not sent: 2 request(s)."
    failures = gen.budget_stop(run, line)
    assert "spent $0.0016 over the $0.001 limit" in failures
    assert any("stopped with reason 'finished'" in f for f in failures)  # the small run was not stopped
    # A spend that leaves out round 2's flex answers (a resume that forgot a closed realtime round)
    assert gen.realtime_cost(run) > 0
    assert any("answers on file cost" in f for f in gen.budget_stop(run, line.replace("$0.0016", "$0.0000")))
    assert gen.budget_stop(run, "Stopped by the budget.") == [
        "no spend in the budget's last line 'Stopped by the budget.'"
    ]


@pytest.mark.slow
def test_a_fixed_sample_configuration_holds_every_invariant(tmp_path: Path) -> None:
    outcome = run_one(SAMPLE, tmp_path, {**os.environ, "SPECEVAL_OFFLINE_TURNAROUND": "0.05"})
    assert outcome.failures == {}
    assert {"killed_mid_run", "resumed", "budget_stop", "budget_raised", "sent_as_recorded"} <= set(outcome.names)
