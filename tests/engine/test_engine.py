"""The engine's own logic (chunking, retries, resume, reconciliation) against an in-memory provider."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from speceval.batch.engine import BatchEngine, EngineOptions
from speceval.batch.records import Outcome, RemoteJob, SubmissionIntent
from speceval.batch.store import RunStore
from speceval.cli.console import close_logging, setup_logging
from speceval.wire.prompt import PromptItem
from tests.engine.fake_provider import FakeBatchedModel, FakeProvider


def make_items(statements: dict[str, list[str]]) -> list[PromptItem]:
    return [
        PromptItem(statement_id=sid, original_index=i, input_text=text)
        for sid, texts in statements.items()
        for i, text in enumerate(texts)
    ]


def run(tmp_path: Path, remote: FakeProvider, items: list[PromptItem], **options: float) -> tuple:
    opts = EngineOptions(
        batch_size=int(options.get("batch_size", 4)),
        poll_interval=0.01,
        max_attempts=int(options.get("max_attempts", 3)),
    )
    store = RunStore(tmp_path / "run")
    summary = BatchEngine(FakeBatchedModel(remote), store, opts, sleep=lambda s: None).run(items)
    return summary, store


def results_of(store: RunStore, statement_id: str) -> list[dict]:
    return json.loads(store.results_path(statement_id).read_text())


ITEMS = {"be_honest": [f"honest question {i}" for i in range(5)], "no.dots here": [f"dots {i}" for i in range(4)]}


def test_every_result_lands_on_its_own_input_in_order(tmp_path):
    summary, store = run(tmp_path, FakeProvider(), make_items(ITEMS))
    assert summary.finished
    assert summary.outcome_counts == {Outcome.SUCCEEDED: 9}
    for sid, texts in ITEMS.items():
        records = results_of(store, sid)
        assert [r["original_index"] for r in records] == list(range(len(texts)))
        assert [r["output_text"] for r in records] == [f"answer to: {t}" for t in texts]
        assert all(r["input_text"] == t for r, t in zip(records, texts, strict=True))
    assert summary.usage.input_tokens == 27 and summary.usage.output_tokens == 45


def test_no_job_exceeds_batch_size_and_each_has_a_record(tmp_path):
    remote = FakeProvider()
    summary, store = run(tmp_path, remote, make_items(ITEMS), batch_size=4)
    records = store.load_records()
    assert [r.request_count for r in records] == [4, 4, 1]
    assert remote.creates == 3 == summary.jobs
    assert {r.batch_id for r in records} == set(remote.jobs)
    assert not list((store.run_dir / "intents").glob("*.json"))


def test_permanent_errors_are_reported_not_retried(tmp_path):
    remote = FakeProvider()
    items = make_items({"s": ["fine", "please [fail]", "also fine"]})
    summary, store = run(tmp_path, remote, items)
    assert summary.outcome_counts == {Outcome.SUCCEEDED: 2, Outcome.ERRORED: 1}
    failed = results_of(store, "s")[1]
    assert failed["outcome"] == "errored" and failed["output_text"] is None
    assert failed["error"]["message"] == "prompt rejected" and failed["error"]["status_code"] == 400
    assert remote.creates == 1


def test_transient_errors_are_resubmitted_alone(tmp_path):
    remote = FakeProvider()
    items = make_items({"s": ["a", "b [flaky]", "c"]})
    summary, store = run(tmp_path, remote, items)
    assert summary.outcome_counts == {Outcome.SUCCEEDED: 3}
    assert remote.creates == 2
    assert [len(job.lines) for job in remote.jobs.values()] == [3, 1]
    retried = results_of(store, "s")[1]
    assert retried["attempts"] == 2 and retried["output_text"] == "answer to: b [flaky]"
    # a job's record says how often its requests were tried before (taken once per chunk from the ledger)
    assert [record.attempt for record in store.load_records()] == [1, 2]


def test_expired_job_keeps_finished_results_and_resubmits_only_the_rest(tmp_path):
    remote = FakeProvider(expire_next=1)
    items = make_items({"s": [f"q{i}" for i in range(4)]})
    summary, store = run(tmp_path, remote, items)
    assert summary.outcome_counts == {Outcome.SUCCEEDED: 4}
    first, second = remote.jobs.values()
    assert len(first.lines) == 4 and len(second.lines) == 2
    resubmitted = {line["prompt"] for line in second.lines}
    for record in results_of(store, "s"):
        assert record["attempts"] == (2 if record["input_text"] in resubmitted else 1)


def test_a_result_missing_from_one_download_is_fetched_again_not_paid_again(tmp_path):
    remote = FakeProvider(drop_results={"q1": 1})
    summary, store = run(tmp_path, remote, make_items({"s": ["q0", "q1", "q2"]}))
    assert summary.outcome_counts == {Outcome.SUCCEEDED: 3}
    assert remote.creates == 1 and store.load_records()[0].collect_failures == 1


def test_results_missing_from_every_download_are_resubmitted(tmp_path):
    remote = FakeProvider(drop_results={"q1": 2})
    summary, store = run(tmp_path, remote, make_items({"s": ["q0", "q1", "q2"]}))
    assert summary.outcome_counts == {Outcome.SUCCEEDED: 3}
    assert [len(job.lines) for job in remote.jobs.values()] == [3, 1]
    first = store.load_records()[0]
    assert first.outcome_counts == {Outcome.SUCCEEDED: 2, Outcome.MISSING: 1}


def test_attempts_are_bounded_and_the_last_outcome_is_final(tmp_path):
    remote = FakeProvider(expire_next=10)
    summary, store = run(tmp_path, remote, make_items({"s": ["q0", "q1"]}), max_attempts=2)
    assert summary.finished
    assert remote.creates == 2
    outcomes = [r["outcome"] for r in results_of(store, "s")]
    assert sorted(outcomes) == ["expired", "succeeded"]


def test_lost_create_response_is_reconciled_without_a_duplicate(tmp_path):
    remote = FakeProvider(lose_create_responses=1)
    summary, store = run(tmp_path, remote, make_items({"s": ["q0", "q1"]}))
    assert summary.outcome_counts == {Outcome.SUCCEEDED: 2}
    assert remote.creates == 1 and len(store.load_records()) == 1


def test_every_failed_create_is_shown_on_the_terminal_with_its_try_and_the_wait(tmp_path, capsys):
    """docs/providers-and-keys.md's real run, given a key but no network, printed one "could not create job ... yet
    (will retry)" and then nothing for as long as --timeout-hours (24 h by default): the terminal shows a warning
    once per text, and every retry's text was the same. Each says its try and when the next is, so it shows."""
    remote = FakeProvider(unreachable_creates=3, unreachable_polls=2)
    setup_logging(verbose=False)
    try:
        summary, _ = run(tmp_path, remote, make_items({"s": ["q0", "q1"]}))
    finally:
        close_logging()
    assert summary.outcome_counts == {Outcome.SUCCEEDED: 2} and remote.creates == 1
    err = capsys.readouterr().err.splitlines()
    for what, tries in (("could not create job", ["1", "2", "3"]), ("poll batch failed", ["1", "2"])):
        shown = [line for line in err if what in line]
        assert [re.search(r"try (\d+) failed", line).group(1) for line in shown] == tries, err
        assert all("next try in" in line for line in shown), shown


def test_truncated_download_is_fetched_again(tmp_path):
    remote = FakeProvider(truncate_downloads=2)
    summary, store = run(tmp_path, remote, make_items({"s": ["q0", "q1"]}))
    assert summary.outcome_counts == {Outcome.SUCCEEDED: 2}
    assert remote.creates == 1
    assert store.load_records()[0].collect_failures == 2


class CrashAfterCreate(FakeBatchedModel):
    """Dies (as a SIGKILL would) right after the provider created the job, before we record its id."""

    def generate_batch(self, intent: SubmissionIntent, request_file: Path) -> RemoteJob:
        super().generate_batch(intent, request_file)
        raise SystemExit("killed in the window")


def test_crash_between_create_and_record_is_adopted_on_resume(tmp_path):
    remote = FakeProvider()
    items = make_items({"s": ["q0", "q1", "q2"]})
    store = RunStore(tmp_path / "run")
    opts = EngineOptions(batch_size=10, poll_interval=0.01)
    with pytest.raises(SystemExit):
        BatchEngine(CrashAfterCreate(remote), store, opts, sleep=lambda s: None).run(items)
    assert remote.creates == 1 and not store.load_records() and len(store.load_intents()) == 1
    summary = BatchEngine(FakeBatchedModel(remote), store, opts, sleep=lambda s: None).run(items)
    assert summary.outcome_counts == {Outcome.SUCCEEDED: 3}
    assert remote.creates == 1  # adopted, not paid for twice
    assert [r.batch_id for r in store.load_records()] == ["batch_0001"]
    assert not store.load_intents()


def test_resume_of_a_finished_run_submits_nothing(tmp_path):
    remote = FakeProvider()
    items = make_items(ITEMS)
    run(tmp_path, remote, items)
    before = (remote.creates, {p.name: p.read_bytes() for p in (tmp_path / "run" / "results").iterdir()})
    summary, store = run(tmp_path, remote, items)
    assert summary.finished and summary.outcome_counts == {Outcome.SUCCEEDED: 9}
    after = (remote.creates, {p.name: p.read_bytes() for p in (tmp_path / "run" / "results").iterdir()})
    assert before == after


def test_resume_with_jobs_in_flight_polls_instead_of_resubmitting(tmp_path):
    remote = FakeProvider(polls_to_complete=1000)
    items = make_items({"s": ["q0", "q1"]})
    store = RunStore(tmp_path / "run")
    opts = EngineOptions(batch_size=10, poll_interval=0.01, timeout_hours=1e-9)
    summary = BatchEngine(FakeBatchedModel(remote), store, opts, sleep=lambda s: None).run(items)
    assert not summary.finished and summary.outstanding == 2 and remote.creates == 1
    remote.jobs["batch_0001"].polls_left = 0
    opts.timeout_hours = 1
    summary = BatchEngine(FakeBatchedModel(remote), store, opts, sleep=lambda s: None).run(items)
    assert summary.finished and remote.creates == 1


class PerRequestCost:
    """One dollar per request reserved, `actual_per_request` spent once a job is collected: easy to reason about."""

    def __init__(self, actual_per_request: float = 1.0):
        self.actual_per_request = actual_per_request

    def estimate(self, model, intent, request_file) -> float:
        return float(intent.request_count)

    def actual(self, record) -> float:
        return record.request_count * self.actual_per_request


def _budgeted_engine(remote: FakeProvider, store: RunStore, budget) -> BatchEngine:
    """Jobs of 2; each wait takes a minute of a fake clock, so a run held for good ends at its 1-hour timeout
    instead of spinning."""
    opts = EngineOptions(batch_size=2, poll_interval=0.01, timeout_hours=1, budget=budget)
    now = [0.0]

    def sleep(seconds: float) -> None:
        now[0] += 60

    return BatchEngine(FakeBatchedModel(remote), store, opts, clock=lambda: now[0], sleep=sleep)


def test_a_collected_job_counts_its_actual_cost_so_held_jobs_go_in_the_same_run(tmp_path):
    """Upper bound 9 × the budget's 5 would stop after 2 jobs if reservations stayed; actual cost is a quarter."""
    from speceval.batch.budget import Budget

    remote = FakeProvider()
    store = RunStore(tmp_path / "run")
    budget = Budget(5.0, PerRequestCost(actual_per_request=0.25))
    summary = _budgeted_engine(remote, store, budget).run(make_items(ITEMS))
    assert summary.finished and remote.creates == 5
    assert budget.spent_usd == pytest.approx(9 * 0.25) and budget.reserved_usd == pytest.approx(0.0)
    assert [r.cost_usd for r in store.load_records()] == [0.5, 0.5, 0.5, 0.5, 0.25]


def test_spend_never_passes_the_budget_when_every_answer_costs_its_upper_bound(tmp_path):
    from speceval.batch.budget import Budget
    from speceval.batch.progress import StopReason

    remote = FakeProvider()
    store = RunStore(tmp_path / "run")
    budget = Budget(5.0, PerRequestCost(actual_per_request=1.0))
    summary = _budgeted_engine(remote, store, budget).run(make_items(ITEMS))
    assert summary.reason is StopReason.BUDGET and remote.creates == 2
    assert budget.spent_usd == 4.0 <= budget.limit_usd and budget.reserved_usd == 0.0
    assert "spent $4.0000, reserved $0.0000 of the $5.0000 limit" in budget.stop_line("5 request(s)")


def test_a_zero_budget_sends_nothing(tmp_path):
    from speceval.batch.budget import Budget
    from speceval.batch.progress import StopReason

    remote = FakeProvider()
    opts = EngineOptions(batch_size=2, poll_interval=0.01, budget=Budget(0.0, PerRequestCost()))
    engine = BatchEngine(FakeBatchedModel(remote), RunStore(tmp_path / "run"), opts, sleep=lambda s: None)
    summary = engine.run(make_items(ITEMS))
    assert summary.reason is StopReason.BUDGET and remote.creates == 0 and summary.outstanding == 9


def test_budget_stops_submitting_and_a_resume_with_more_budget_finishes(tmp_path):
    from speceval.batch.budget import Budget
    from speceval.batch.progress import StopReason

    remote = FakeProvider()
    items = make_items(ITEMS)  # 9 requests → jobs of 2, 2, 2, 2, 1
    store = RunStore(tmp_path / "run")
    summary = _budgeted_engine(remote, store, Budget(5.0, PerRequestCost())).run(items)
    assert summary.reason is StopReason.BUDGET and not summary.finished
    assert remote.creates == 2 and summary.outcome_counts == {Outcome.SUCCEEDED: 4} and summary.outstanding == 5
    assert [r.estimated_cost_usd for r in store.load_records()] == [2.0, 2.0]

    summary = _budgeted_engine(remote, store, Budget(9.0, PerRequestCost())).run(items)
    assert summary.finished and summary.outcome_counts == {Outcome.SUCCEEDED: 9}
    assert remote.creates == 5  # the two paid jobs were not sent again


def test_a_job_adopted_after_a_crash_counts_against_the_budget_of_the_resume(tmp_path):
    """Killed between the provider creating a job and its record (the generation matrix: SIGKILL, then `--resume`
    with the same budget): the resume adopts the job, and the job counts as reserved, as a recorded job in flight
    does. Adopted without a reservation, the resume sent a second job and spent 4 of a 3 budget."""
    from speceval.batch.budget import Budget
    from speceval.batch.progress import StopReason

    remote = FakeProvider()
    items = make_items(ITEMS)
    store = RunStore(tmp_path / "run")
    opts = EngineOptions(batch_size=2, poll_interval=0.01, budget=Budget(3.0, PerRequestCost()))
    with pytest.raises(SystemExit):
        BatchEngine(CrashAfterCreate(remote), store, opts, sleep=lambda s: None).run(items)
    budget = Budget(3.0, PerRequestCost())
    summary = _budgeted_engine(remote, store, budget).run(items)
    assert summary.reason is StopReason.BUDGET and remote.creates == 1
    assert budget.spent_usd == 2.0 <= budget.limit_usd and budget.reserved_usd == 0.0


def test_a_job_whose_create_response_was_lost_stays_reserved_once_found(tmp_path):
    """The create's answer lost (its reservation given back), the job found by its tag on the next try: reserved
    again, so the next job waits for it instead of passing the limit."""
    from speceval.batch.budget import Budget

    remote = FakeProvider(lose_create_responses=1)
    budget = Budget(3.0, PerRequestCost())
    summary = _budgeted_engine(remote, RunStore(tmp_path / "run"), budget).run(make_items(ITEMS))
    assert remote.creates == 1 and not summary.finished
    assert budget.spent_usd == 2.0 <= budget.limit_usd


def test_plan_writes_request_files_and_submits_nothing_then_run_submits_them(tmp_path):
    remote = FakeProvider()
    items = make_items(ITEMS)
    store = RunStore(tmp_path / "run")
    opts = EngineOptions(batch_size=4, poll_interval=0.01)
    intents = BatchEngine(FakeBatchedModel(remote), store, opts, sleep=lambda s: None).plan(items)
    assert [i.request_count for i in intents] == [4, 4, 1] and remote.creates == 0
    files = sorted(p.name for p in store.preprocessed_dir.iterdir())
    assert len(files) == 3 and not any(i.create_attempted for i in store.load_intents())
    summary = BatchEngine(FakeBatchedModel(remote), store, opts, sleep=lambda s: None).run(items)
    assert summary.finished and remote.creates == 3
    assert sorted(p.name for p in store.preprocessed_dir.iterdir()) == files


def test_run_engines_drives_several_runs_in_one_loop(tmp_path):
    from speceval.batch.engine import run_engines

    remote = FakeProvider(polls_to_complete=3)
    sleeps: list[float] = []
    engines = []
    for name in ("cand_a", "cand_b"):
        store = RunStore(tmp_path / name)
        engine = BatchEngine(FakeBatchedModel(remote), store, EngineOptions(poll_interval=0.5), sleep=sleeps.append)
        engines.append((engine, make_items({"s": [f"{name} q{i}" for i in range(3)]})))
    summaries = run_engines(engines, sleep=sleeps.append)
    assert [s.outcome_counts for s in summaries] == [{Outcome.SUCCEEDED: 3}] * 2
    assert remote.creates == 2
    assert sleeps == [0.5, 0.5]  # three rounds polled both jobs together: one sleep between rounds, not per job


def test_temp_files_left_by_a_killed_write_are_cleaned_on_resume(tmp_path):
    remote = FakeProvider()
    items = make_items({"s": ["q0"]})
    run(tmp_path, remote, items)
    leftover = tmp_path / "run" / "results" / ".s.json.k2j3h4.tmp"
    leftover.write_text('[{"original_ind')
    summary, store = run(tmp_path, remote, items)
    assert summary.finished and not leftover.exists() and remote.creates == 1
