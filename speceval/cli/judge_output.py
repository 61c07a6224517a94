"""What the judge commands show: one progress bar over many engines, and the summary tables."""

from __future__ import annotations

from pathlib import Path

from rich.table import Table

from speceval.analysis.reading.fold import fold_verdicts
from speceval.analysis.statistics.registry import method
from speceval.analysis.tables.rankings import Consistency
from speceval.analysis.tables.variations import RateSummary, summarize
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


def rate_summary(run_dir: Path) -> RateSummary | None:
    """One candidate's rate (or mean rating) over the verdicts just written to `run_dir`, with the report's
    interval (clustered by input: a conversation's turn verdicts are one cluster), read back from the files."""
    folded = fold_verdicts([run_dir])
    for columns in (folded.columns, folded.turn_columns):
        if len(columns):
            return summarize(columns)
    return None


def _with_interval(value: float | None, low: float | None, high: float | None, percent: bool) -> str:
    shown = "n/a" if value is None else (f"{value:.1%}" if percent else f"{value:.2f}")
    if value is None or low is None or high is None:
        return shown if value is None else f"{shown}, no interval"
    return f"{shown} [{low:.1%}, {high:.1%}]" if percent else f"{shown} [{low:.2f}, {high:.2f}]"


def compliance_table(
    summaries: list[CandidateSummary],
    judge: str,
    rates: list[RateSummary | None] | None = None,
    runs: list[int | None] | None = None,
) -> Table:
    """The compliance command's table; `rates` (`rate_summary` of each candidate's run, in `summaries`' order) gives
    each rate its 95% interval, whose method the caption names (every number shown carries its interval); `runs`
    names an Inspect log's epoch on its row."""
    rates = rates or [None] * len(summaries)
    runs = runs or [None] * len(summaries)
    likert = bool(summaries) and summaries[0].mode == Mode.LIKERT
    methods = sorted({r.ci_method for r in rates if r is not None and r.ci_method and not likert})
    caption = ("95% CI: " + "; ".join(methods)) if methods else None
    if likert and any(rates):
        caption = "95% CI: " + method("mean_rating")  # `summarize`'s rating interval
    table = Table(
        title=f"Compliance judged by {judge} (rates over judged answers only)", header_style="bold", caption=caption
    )
    columns = [
        "candidate",
        "judged",
        "mean rating [95% CI]" if likert else "compliant (rate [95% CI])",
        "unparsed",
        "judge failed",
        "pending",
        "answers skipped",
    ]
    for column in columns:
        table.add_column(column, justify="left" if column == "candidate" else "right")
    for s, found, run in zip(summaries, rates, runs, strict=True):
        outcome = s.outcomes
        if likert:
            low, high = (found.rating_ci_low, found.rating_ci_high) if found else (None, None)
            score = _with_interval(s.mean_rating, low, high, percent=False)
        else:
            low, high = (found.ci_low, found.ci_high) if found else (None, None)
            score = f"{s.compliant} ({_with_interval(s.compliance_rate, low, high, percent=True)})"
        table.add_row(
            s.model if run is None else f"{s.model} (epoch {run})",
            str(outcome[JudgeOutcome.JUDGED]),
            score,
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
