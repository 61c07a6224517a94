"""The study matrix's fixed sample in the suite, and its checks seen failing on planted defects (a report whose counts
do not recompute, a model × variation compound as a candidate, a request sent twice, a dry run that miscounts, a
label off its aim, an export that loses a verdict or a score)."""

from __future__ import annotations

import csv
import itertools
import json
import math
import os
import shutil
from pathlib import Path

import pytest

from tests.once import built_once
from tests.study_matrix import checks, checks_flow, checks_turns
from tests.study_matrix.matrix import FEATURES, Outcome, all_pairs, check_export, label_aim, run_one

# One configuration meeting most joins at once: a model at turn and conversation scope, a simulated user, a budget
# stopped and raised, an aimed label sheet and an export read back (the other formats are exported in the tests).
SAMPLE = {
    "candidates": "2",
    "judges": "binary@turn+binary",
    "variation": "simulated_user",
    "runs": "1",
    "budget": "raised",
    "tier": "batch",
    "labels": "aimed",
    "export": "jsonl",
    "report": "gated",
}


def test_the_covering_array_meets_every_pair_of_feature_values() -> None:
    configs = all_pairs(FEATURES, seed=0)
    for a, b in itertools.combinations(FEATURES, 2):
        met = {(c[a], c[b]) for c in configs}
        assert met == set(itertools.product(FEATURES[a], FEATURES[b])), (a, b)
    assert configs == all_pairs(FEATURES, seed=0)  # deterministic: the suite and the benchmark run the same list


def test_the_dry_runs_total_is_parsed_and_a_budget_must_stop_then_finish() -> None:
    table = "│ compliance │ 6 │ 264 │ 6 │ $0.6870 │ $5.5485 │\n│ total │ │ 1,504 │ 12 │ $1.0462 │ $6.0618 │"
    assert checks_flow.planned_requests(table) == 1504
    assert checks_flow.planned_requests("no table") is None
    assert checks_flow.budget_raised(3, "Stopped by the budget: next job $0.4", 0, "Report: out") == []
    assert checks_flow.budget_raised(0, "Report: out", 0, "Report: out")  # the tight budget did not stop it
    assert checks_flow.budget_raised(3, "Stopped by the budget: x", 3, "Stopped by the budget: x")


@pytest.fixture(scope="session")
def sample(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> tuple[Path, Outcome]:
    """The fixed sample's folder and outcome, built once per session (tests/once.py): the tests that plant defects
    copy the folder first."""

    def build(folder: Path) -> tuple[Path, Outcome]:
        return folder, run_one(SAMPLE, folder, {**os.environ, "SPECEVAL_OFFLINE_TURNAROUND": "0.05"})

    return built_once(tmp_path_factory, worker_id, "study-matrix-sample", build)


@pytest.mark.slow
def test_a_fixed_sample_configuration_holds_every_invariant(sample) -> None:
    _, outcome = sample
    assert outcome.failures == {}
    names = {"budget_raised", "sent_once", "dry_run_matches", "labels_aimed", "export_jsonl", "report_rerenders"}
    assert names <= set(outcome.names)
    assert set(outcome.expected) <= set(checks.EXPECTED_FAIL)  # recorded with the owner, not skipped


def _copy(folder: Path, tmp_path: Path) -> Path:
    shutil.copytree(folder, tmp_path / "c", ignore=shutil.ignore_patterns("*.lock"))
    return tmp_path / "c"


def _rewrite(table: Path, change) -> None:
    rows = list(csv.DictReader(table.open(encoding="utf-8", newline="")))
    change(rows)
    with table.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


@pytest.mark.slow
def test_the_checks_fail_on_a_report_that_miscounts_or_names_a_compound_candidate(sample, tmp_path: Path) -> None:
    out = _copy(sample[0], tmp_path) / "out"
    table = out / "report" / "compliance.csv"
    pooled = lambda rows: next(r for r in rows if not r["statement_id"] and r["judge"] != "panel")  # noqa: E731
    _rewrite(table, lambda rows: pooled(rows).update(judged=str(int(pooled(rows)["judged"]) + 1)))
    assert any("judged=" in failure for failure in checks.compliance_counts(out))
    models = {r["candidate"] for r in csv.DictReader(table.open(encoding="utf-8", newline=""))}
    assert checks.candidates_are_configured(out, models) == []
    assert checks.candidates_are_configured(out, {next(iter(models))})  # a candidate not configured is named
    judges = {json.loads(p.read_text(encoding="utf-8"))["metadata"]["judge"] for p in checks._verdict_files(out)}
    assert len(judges) == 2 and checks.panels_one_scale(out) == []  # a turn and a whole-conversation judge
    panel = out / "report" / "panel.csv"
    _rewrite(
        panel,
        lambda rows: rows.append(
            {"candidate": "m", "variation": "v", "judge_rates": json.dumps(dict.fromkeys(judges, 0.5))}
        ),
    )
    assert any("mixes" in failure for failure in checks.panels_one_scale(out))  # a panel over two scopes


@pytest.mark.slow
def test_the_accounting_check_fails_on_an_answer_the_report_leaves_out(sample, tmp_path: Path) -> None:
    """Every answer of a candidate is in its rows, judged or not judged: an answer the report does not count (here
    one more results record than the verdicts and not-judged counts hold) is named."""
    out = _copy(sample[0], tmp_path) / "out"
    assert checks.answers_accounted(out) == []
    results = next((out / "generations").glob("*/*/run*/*/results/*.json"))
    records = json.loads(results.read_text(encoding="utf-8"))
    results.write_text(json.dumps([*records, {**records[0], "original_index": len(records)}]), encoding="utf-8")
    assert any("judged + not judged" in failure for failure in checks.answers_accounted(out))


@pytest.mark.slow
def test_the_health_check_fails_on_a_statement_left_out_or_never_judged_and_not_flagged(sample, tmp_path: Path) -> None:
    """Every statement with a yes/no judge's row is in spec health, and one with none judged is flagged: a row
    taken out, and a statement whose per-statement rows say none was judged but whose health row is not flagged,
    are each named."""
    out = _copy(sample[0], tmp_path) / "out"
    assert checks.health_statements(out) == []
    health = out / "report" / "statement_health.csv"
    first = next(r for r in csv.DictReader(health.open(encoding="utf-8", newline="")) if r["kind"] == "statement")
    _rewrite(health, lambda rows: rows.remove(next(r for r in rows if r["statement_id"] == first["statement_id"])))
    key = (first["spec"], first["statement_id"])
    assert checks.health_statements(out) == [f"statement_health.csv: no row for {key}"]
    shutil.copy(sample[0] / "out" / "report" / "statement_health.csv", health)
    never = lambda rows: [r.update(judged="0") for r in rows if r["statement_id"] == first["statement_id"]]  # noqa: E731
    _rewrite(out / "report" / "compliance_per_statement.csv", never)
    assert any("flag not_judged False" in failure for failure in checks.health_statements(out))


@pytest.mark.slow
def test_the_flow_checks_fail_on_a_request_sent_twice_or_a_miscounted_plan(sample, tmp_path: Path) -> None:
    out = _copy(sample[0], tmp_path) / "out"
    sent = sum(checks_flow.sent_requests(out).values())
    assert checks_flow.dry_run_matches(sent, out, bounded=False) == []
    assert checks_flow.dry_run_matches(sent - 1, out, bounded=True)  # more sent than planned: never fine
    assert checks_flow.dry_run_matches(sent + 1, out, bounded=False)
    job = next((out / ".emulator" / "jobs").rglob("*.json"))
    shutil.copy(job, job.with_name("batch_again.json"))  # the same requests in a second job: paid twice
    assert checks_flow.sent_once(out)


@pytest.mark.slow
def test_the_label_check_fails_on_a_label_off_its_aim(sample, tmp_path: Path) -> None:
    folder = _copy(sample[0], tmp_path)
    aim = label_aim(folder / "out")
    assert aim is not None
    labelled = sum(1 for row in csv.DictReader((folder / "labels.csv").open(encoding="utf-8")))
    assert checks_flow.labels_aimed(folder / "labels.csv", folder / "labelled", aim, labelled) == []
    assert checks_flow.labels_aimed(folder / "labels.csv", folder / "labelled", aim, labelled + 5)  # labels lost
    other = {**aim, "candidate": "gpt-4o-mini-2024-07-18"}
    assert any(
        "not the aim" in f
        for f in checks_flow.labels_aimed(folder / "labels.csv", folder / "labelled", other, labelled)
    )
    _rewrite(
        folder / "labelled" / "ppi.csv", lambda rows: [r.update(ci_low="nan") for r in rows if r["labelled"] != "0"]
    )
    assert any(
        "ci_low" in f for f in checks_flow.labels_aimed(folder / "labels.csv", folder / "labelled", aim, labelled)
    )


LIKERT_LABELS = {
    "candidates": "1",
    "judges": "likert",
    "variation": "simulated_user",
    "runs": "1",
    "budget": "none",
    "tier": "batch",
    "labels": "aimed",
    "report": "defaults",
}
"""A Likert judge alone with an aimed label sheet: its answers are offered, and its human accuracy is counted. (Its
sheet holds a 3 labelled yes and a 3 labelled no: a rule that took a 3 for either would miscount it.)"""


@pytest.mark.slow
def test_a_likert_judges_human_accuracy_is_the_hand_count_of_its_filled_sheet(tmp_path: Path) -> None:
    folder = tmp_path / "likert"
    outcome = run_one(LIKERT_LABELS, folder, {**os.environ, "SPECEVAL_OFFLINE_TURNAROUND": "0.05"})
    assert outcome.failures == {} and "labels_aimed" in outcome.names
    aim = label_aim(folder / "out")
    assert aim is not None and aim["mode"] == "likert"
    rows = list(csv.DictReader((folder / "labels.csv").open(encoding="utf-8")))
    assert 12 <= len(rows) <= 60 and all(r["human_compliant"] for r in rows)  # label-sheet --n 60
    rated = {
        (meta["statement_id"], entry["input"], entry["output"]): entry.get("rating")
        for meta, entry in checks_flow._verdicts(folder / "out")
    }
    threes = {r["human_compliant"] for r in rows if rated.get((r["statement_id"], r["input"], r["output"])) == 3}
    assert threes == {"yes", "no"}  # the rule's 3 is met both ways
    [pooled] = [
        r
        for r in csv.DictReader((folder / "labelled" / "human_agreement.csv").open(encoding="utf-8"))
        if r["candidate"] == "all"
    ]
    assert 0 < int(pooled["agree"]) < int(pooled["labelled"]) <= len(rows)  # some agree, some (3s among them) not
    assert checks_flow.weighted_by_hand(folder / "labels.csv", folder / "labelled", aim) == []
    # Planted: the card's accuracy off the design's weighing by a hundredth.
    _rewrite(
        folder / "labelled" / "judge_card.csv",
        lambda found: [r.update(human_accuracy=str(float(r["human_accuracy"]) + 0.01)) for r in found],
    )
    failed = checks_flow.weighted_by_hand(folder / "labels.csv", folder / "labelled", aim)
    assert any("weighed by the design" in f for f in failed), failed
    # Planted: one agreement more than the sheet's hand count.
    _rewrite(
        folder / "labelled" / "human_agreement.csv",
        lambda found: [r.update(agree=str(int(r["agree"]) + 1)) for r in found],
    )
    failed = checks_flow.labels_aimed(folder / "labels.csv", folder / "labelled", aim, len(rows))
    assert any("by hand" in f for f in failed), failed


@pytest.mark.slow
def test_the_export_checks_fail_on_a_lost_verdict_a_nan_score_or_a_missing_answer(sample, tmp_path: Path) -> None:
    folder = _copy(sample[0], tmp_path)
    exported = folder / "exported.jsonl"
    rows = [json.loads(line) for line in exported.read_text(encoding="utf-8").splitlines()]
    assert checks_flow.export_rows(exported, "jsonl", folder / "out") == []
    rows[0]["confidence"], rows[1]["output"] = math.nan, ""
    exported.write_text("\n".join(json.dumps(r) for r in rows[:-1]) + "\n", encoding="utf-8")
    failures = " ".join(checks_flow.export_rows(exported, "jsonl", folder / "out"))
    assert "compliance rows" in failures and "confidence=nan" in failures and "no answer" in failures
    env = dict(os.environ)
    for fmt in ("original", "inspect"):
        assert check_export(fmt, folder, env) == []
    lost = next((folder / "exported_original").rglob("results/*.json"))
    lost.unlink()  # a verdict file lost on the way
    assert any("read back" in f for f in checks_flow.export_original(folder / "exported_original", folder / "out"))
    logs = sorted((folder / "exported_inspect").glob("*.eval"))
    logs[0].unlink()
    assert any("read back as" in f for f in checks_flow.export_inspect(folder / "exported_inspect", folder / "out"))


@pytest.mark.slow
def test_the_inspect_card_check_fails_on_a_card_the_report_does_not_show(sample, tmp_path: Path) -> None:
    """The sample is gated (min_canary_accuracy 0.99): its judges fail their card, and the export says so. A log whose
    card differs from the study's judge_card.csv (an accuracy, a pass) is named by the check."""
    folder = _copy(sample[0], tmp_path)
    assert check_export("inspect", folder, dict(os.environ)) == []
    card = folder / "out" / "report" / "judge_card.csv"
    rows = list(csv.DictReader(card.open(encoding="utf-8", newline="")))
    assert rows and any(r["passes"] == "False" for r in rows)  # gated: the export marked them (checked above)
    log = checks_flow.read_first_log(folder / "exported_inspect")
    assert checks_flow.inspect_card("log", log, card) == []
    judge = next(iter(log.eval.metadata["speceval"]["judges"].values()))
    mine = lambda rows: next(r for r in rows if r["judge"] == judge)  # noqa: E731
    _rewrite(card, lambda rows: mine(rows).update(canary_accuracy="0.5", passes="True", failed_checks="[]"))
    failures = " ".join(checks_flow.inspect_card("log", log, card))
    assert "canary_accuracy" in failures and "passes" in failures and "tags" in failures


def test_tier_auto_check_finds_a_round_sent_at_another_tier_than_planned(tmp_path: Path) -> None:
    """`tier_as_planned` on a hand-made folder: round 1 through the Batch API (a job, no served tier), round 2 at
    flex (records say flex): holds against that plan, and fails when the plan said batch for round 2 or when
    round 1's job is missing."""
    run = tmp_path / "generations" / "openai" / "pushback" / "run1" / "o4-mini"
    for number, realtime in ((1, None), (2, {"service_tier": "flex"})):
        folder = run / "rounds" / str(number)
        (folder / "results").mkdir(parents=True)
        parameters = {"realtime": realtime} if realtime else {}
        (folder / "run.json").write_text(json.dumps({"model_name": "o4-mini", "parameters": parameters}))
        served = realtime and realtime["service_tier"]
        rows = [{"original_index": 0, "outcome": "succeeded", "service_tier": served}]
        (folder / "results" / "s.json").write_text(json.dumps(rows))
    (run / "rounds" / "1" / "metadata").mkdir()
    (run / "rounds" / "1" / "metadata" / "batch_1.json").write_text("{}")
    (tmp_path / "experiment.json").write_text("{}")
    plan = [{"model": "o4-mini", "label": "round 1", "tier": "batch"}, {"model": "o4-mini", "label": "round 2"}]
    assert checks.tier_as_planned(tmp_path, [plan[0], {**plan[1], "tier": "flex"}]) == []
    assert checks.tier_as_planned(tmp_path, [plan[0], {**plan[1], "tier": "batch"}])
    # A late clock: round 2 planned at batch holds only with the re-plan that sent it at flex recorded for its run.
    assert checks.tier_as_planned(tmp_path, [plan[0], {**plan[1], "tier": "batch"}], late=True)
    where = run.relative_to(tmp_path).as_posix()
    moved = {"entry": "candidates[0]", "run": where, "round": 2, "planned": "batch", "sent": "flex"}
    (tmp_path / "experiment.json").write_text(json.dumps({"replans": [moved]}))
    assert checks.tier_as_planned(tmp_path, [plan[0], {**plan[1], "tier": "batch"}], late=True) == []
    assert checks.tier_as_planned(tmp_path, [plan[0], {**plan[1], "tier": "batch"}])  # a clock that kept time
    back = {**moved, "planned": "flex", "sent": "batch"}
    (tmp_path / "experiment.json").write_text(json.dumps({"replans": [back]}))
    assert checks.tier_as_planned(tmp_path, [plan[0], {**plan[1], "tier": "flex"}], late=True)
    elsewhere = {**moved, "run": "generations/openai/pushback/run2/o4-mini"}  # another run's round: not this one's
    (tmp_path / "experiment.json").write_text(json.dumps({"replans": [elsewhere]}))
    assert checks.tier_as_planned(tmp_path, [plan[0], {**plan[1], "tier": "batch"}], late=True)
    (tmp_path / "experiment.json").write_text("{}")
    (run / "rounds" / "1" / "metadata" / "batch_1.json").unlink()
    assert checks.tier_as_planned(tmp_path, [plan[0], {**plan[1], "tier": "flex"}])


@pytest.mark.slow
def test_a_late_clock_replans_every_run_and_a_budget_raised_after_the_deadline_goes_on(tmp_path: Path) -> None:
    """`tier: auto` on a clock that runs late (the factor `auto-late`), two runs of a two-round study stopped by a
    tight budget and run again with it raised. Found here first: the rerun was refused ("no plan is expected to end
    within deadline_hours") because the plan was made again from what round 1's jobs had taken, and a round planned
    at flex went back to batch once the deadline was lost. Both runs' round 2 must say why they moved, flex never
    goes back to batch, and the raised budget finishes the study."""
    late = {
        "candidates": "2",
        "judges": "binary",
        "variation": "follow_ups",
        "runs": "2",
        "budget": "raised",
        "tier": "auto-late",
        "labels": "none",
        "export": "jsonl",
    }
    outcome = run_one(late, tmp_path / "late", {**os.environ, "SPECEVAL_OFFLINE_TURNAROUND": "0.05"})
    assert outcome.failures == {}, outcome.failures
    assert {"budget_raised", "tier_served"} <= set(outcome.names)
    replans = json.loads((tmp_path / "late" / "out" / "experiment.json").read_text(encoding="utf-8"))["replans"]
    assert replans and all(not r["meets_deadline"] for r in replans)
    assert ("batch", "flex") in {(r["planned"], r["sent"]) for r in replans}


def test_endpoint_check_finds_an_endpoint_run_sent_through_a_batch_api(tmp_path: Path) -> None:
    """`endpoint_sent_realtime` on hand-made folders: an endpoint candidate's run (org openai-compatible) with its
    realtime settings and no job holds; one with a batch job, or without its realtime settings, fails; a batch
    candidate's run is not its business."""
    run = tmp_path / "generations" / "openai" / "default" / "run1"
    local, batch = run / "llama-3.1-8b-local", run / "gpt-4.1-mini-2025-04-14"
    for folder, provider, parameters in (
        (local, "openai-compatible", {"realtime": {"rpm": 6000}}),
        (batch, "openai", {}),
    ):
        folder.mkdir(parents=True)
        (folder / "run.json").write_text(json.dumps({"provider": provider, "parameters": parameters}))
    (batch / "metadata").mkdir()
    (batch / "metadata" / "batch_1.json").write_text("{}")
    assert checks.endpoint_sent_realtime(tmp_path) == []
    (local / "metadata").mkdir()
    (local / "metadata" / "batch_2.json").write_text("{}")
    assert checks.endpoint_sent_realtime(tmp_path) == [f"{local / 'run.json'}: batch jobs made for an endpoint run"]
    (local / "metadata" / "batch_2.json").unlink()
    (local / "run.json").write_text(json.dumps({"provider": "openai-compatible", "parameters": {}}))
    assert checks.endpoint_sent_realtime(tmp_path)


def test_user_limits_check_finds_a_plan_or_a_run_that_ignored_the_users_limits(tmp_path: Path) -> None:
    """`user_limits` on a hand-made folder: a user-turns round planned at its limits' bound and a user half sent with
    them holds; the round planned as if 32 were in flight, or a half sent without the limits, fails."""
    limits = {"rpm": 40, "rate_period_seconds": 1, "max_concurrency": 2}
    half = tmp_path / "generations" / "openai" / "default" / "run1" / "o4-mini" / "rounds" / "2" / "user"
    half.mkdir(parents=True)
    realtime = {"rpm": 40.0, "period_seconds": 1.0, "max_concurrency": 2}
    (half / "run.json").write_text(json.dumps({"parameters": {"realtime": realtime}}))
    # 120 turns, 2 in flight at 10 s a call: 600 s; at 40 a second, 3 s.
    row = {"label": "round 2 (user turns)", "tier": "standard", "requests": 120, "hours": 600 / 3600}
    assert checks_turns.user_limits(tmp_path, [row], limits) == []
    assert checks_turns.user_limits(tmp_path, [{**row, "hours": 40 / 3600}], limits)  # 32 in flight: 4 calls of 10 s
    assert checks_turns.user_limits(tmp_path, [], limits)  # no user round planned at all
    (half / "run.json").write_text(json.dumps({"parameters": {"realtime": {**realtime, "max_concurrency": 32}}}))
    assert checks_turns.user_limits(tmp_path, [row], limits)
