"""What the judge commands show: one progress bar over many engines, and the summary tables."""

from __future__ import annotations

from pathlib import Path

from rich.table import Table

from speceval.analysis.tables.rankings import Consistency
from speceval.batch.progress import EngineObserver, EngineSummary, StopReason
from speceval.batch.records import BatchRecord
from speceval.cli.console import ProgressObserver
from speceval.defaults import Mode
from speceval.judging.files import JudgeOutcome
from speceval.pipelines.compliance_files import CandidateSummary
from speceval.pipelines.judge_run import JudgeTarget
from speceval.pipelines.ranking import PairSummary

_FAILURES = (
    JudgeOutcome.JUDGE_ERRORED,
    JudgeOutcome.JUDGE_EXPIRED,
    JudgeOutcome.JUDGE_CANCELLED,
    JudgeOutcome.JUDGE_MISSING,
)


class MultiProgress:
    """One progress bar over many engines: each engine's view reports its latest summary here."""

    def __init__(self, progress: ProgressObserver):
        self.progress = progress
        self.latest: dict[Path, EngineSummary] = {}

    def view(self, target: JudgeTarget) -> EngineObserver:
        return _EngineView(self, target.run_dir)

    def update(self, key: Path, summary: EngineSummary) -> None:
        self.latest[key] = summary
        values = list(self.latest.values())
        self.progress.started(
            EngineSummary(
                reason=StopReason.RUNNING,
                total_requests=sum(s.total_requests for s in values),
                outstanding=sum(s.outstanding for s in values),
                active_jobs=sum(s.active_jobs for s in values),
            )
        )


class _EngineView(EngineObserver):
    def __init__(self, parent: MultiProgress, key: Path):
        self.parent = parent
        self.key = key

    def started(self, summary: EngineSummary) -> None:
        self.parent.update(self.key, summary)

    def waiting(self, seconds: float, summary: EngineSummary) -> None:
        self.parent.update(self.key, summary)

    def finished(self, summary: EngineSummary) -> None:
        self.parent.update(self.key, summary)

    def job_submitted(self, record: BatchRecord) -> None:
        self.parent.progress.job_submitted(record)

    def job_collected(self, record: BatchRecord) -> None:
        self.parent.progress.job_collected(record)


def _rate(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1%}"


def compliance_table(summaries: list[CandidateSummary], judge: str) -> Table:
    likert = bool(summaries) and summaries[0].mode == Mode.LIKERT
    table = Table(title=f"Compliance judged by {judge} (rates over judged answers only)", header_style="bold")
    columns = [
        "candidate",
        "judged",
        "mean rating" if likert else "compliant",
        "unparsed",
        "judge failed",
        "pending",
        "answers skipped",
    ]
    for column in columns:
        table.add_column(column, justify="left" if column == "candidate" else "right")
    for s in summaries:
        outcome = s.outcomes
        score = "n/a" if s.mean_rating is None else f"{s.mean_rating:.2f}"
        table.add_row(
            s.model,
            str(outcome[JudgeOutcome.JUDGED]),
            score if likert else f"{s.compliant} ({_rate(s.compliance_rate)})",
            str(outcome[JudgeOutcome.UNPARSED]),
            str(sum(outcome[o] for o in _FAILURES)),
            str(outcome[JudgeOutcome.PENDING]),
            ", ".join(f"{n} {k}" for k, n in sorted(s.skipped_answers.items())) or "0",
        )
    return table


def ranking_table(summaries: list[PairSummary], judge: str) -> Table:
    table = Table(title=f"Rankings by {judge} (A shown first)", header_style="bold")
    runs = any(s.run is not None for s in summaries)  # Inspect logs' epochs: one row per pair and epoch
    columns = ("model A", "model B", *(("epoch",) if runs else ()), "A wins", "B wins", "ties", "unparsed")
    for column in (*columns, "judge failed", "pending"):
        table.add_column(column, justify="left" if column.startswith("model") else "right")
    for s in summaries:
        table.add_row(
            s.model_a,
            s.model_b,
            *((str(s.run) if s.run is not None else "",) if runs else ()),
            str(s.a_wins),
            str(s.b_wins),
            str(s.ties),
            str(s.outcomes[JudgeOutcome.UNPARSED]),
            str(sum(s.outcomes[o] for o in _FAILURES)),
            str(s.outcomes[JudgeOutcome.PENDING]),
        )
    return table


def consistency_line(rows: list[Consistency], epochs: bool) -> str:
    """The judge's position consistency over every run it counts (the report's `position_consistency.csv` rows of
    these pairs): the pooled row with its interval, how many runs and inputs it counts, and each run's share."""
    if not rows:
        return "Position consistency: no input was judged in both orders"
    pooled = next((r for r in rows if r.run is None), rows[0])  # one run: its own row is the whole count
    runs = [r for r in rows if r.run is not None]
    word = "epoch" if epochs else "run"
    interval = (
        f"95% CI {pooled.ci_low:.1%}–{pooled.ci_high:.1%}, {pooled.ci_method}"
        if pooled.ci_low is not None and pooled.ci_high is not None
        else "no interval"
    )
    each = ", ".join(f"{word} {r.run} {r.consistent}/{r.compared}" for r in runs)
    return (
        f"Position consistency {_rate(pooled.rate)} ({pooled.consistent}/{pooled.compared}; {interval}) counting "
        f"{pooled.runs} {word}(s) of {pooled.inputs} input(s); per {word}: {each}"
    )
