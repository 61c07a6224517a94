"""Each judge's accuracy and card beside its verdicts in `speceval export --format inspect`: the numbers the report's
judge card shows for the judge entry (`speceval.analysis.tables.judge_card`), so that in Inspect View a judge the
card rejects does not look like any other.

What a log carries for each of its judges (`eval.metadata["speceval"]["judge_card"][judge]`, an `ExportedCard`):

* canary accuracy: the spec's own good and bad examples judged right, k of n, the rate with its 95% Wilson interval
  and the registry's method (the canary verdicts are a small file per judge and statement, which the export's survey
  already reads: nothing of the report is built);
* human accuracy and Cohen's kappa against human labels, when the export has labels (`--labels`, or the study's
  own labels file as its experiment.json records it, as `speceval report` reads it): the accuracy weighed by the
  label sheet's design where it is beside the labels (the card's), the labelled sample's k of n beside it;
* retest agreement and wording flips, when the study's card re-sent a sample (its `card/` verdicts);
* `passes`, `failed_checks`, `unmeasured`: the entry held to the lines the report holds it to (the study's
  `judge_card:` block and `min_canary_accuracy`, `experiment_options`), and when it fails, a note saying the report
  keeps it out of its headline (the log's tags say so too: `judge_card_failed:<judge>`).

Self-preference and position consistency are left out: they need every verdict (leniency per candidate) or the
rankings, i.e. the whole report, and no line is held to them, so `passes` does not depend on them.

Beside the scores, each judge's score (each turn's of a per-turn judge) gets the accuracies as extra metrics
(named as judge_card.csv's columns: `canary_accuracy`, `canary_ci_low`, `canary_ci_high`, and with labels
`human_accuracy`, `human_accuracy_ci_low`, `human_accuracy_ci_high`), each metric's metadata naming its counts and
interval method, and `card_passes` (1 or 0) when a line is set: Inspect View prints a score's metrics beside its own.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from speceval.analysis.reading.card_verdicts import card_verdicts
from speceval.analysis.reading.rows import CanaryRow
from speceval.analysis.rendering.experiment_options import report_settings
from speceval.analysis.statistics.columns import Estimate
from speceval.analysis.tables.card_records import JudgeCardRow
from speceval.analysis.tables.judge_card import card_lines, judge_card
from speceval.analysis.tables.judge_checks import judge_accuracy, judge_checks
from speceval.analysis.tables.labelled import labelled_tally

if TYPE_CHECKING:
    from inspect_ai.log import EvalResults

CARD_TAG = "judge_card_failed:"
"""A log's tag for each of its judges that fails its card (`judge_card_failed:<judge>`): View shows tags as chips."""

_METRICS = {"canary": ("canary_correct", "canary_judged"), "human_accuracy": ("human_agree", "human_labelled")}
"""The card's measures added to a judge's score as metrics (named by judge_card.csv's columns), with their counts."""


class ExportedCard(BaseModel):
    """One judge entry's card as a log carries it: the report's judge card row's numbers for the measures the export
    reads (see the module's docstring), and whether the entry passes the lines."""

    spec: str
    judge: str
    canary_correct: int = Field(default=0, description="the spec's examples judged right (k of canary_judged)")
    canary_judged: int = 0
    canary: Estimate = Field(default_factory=Estimate, description="canary accuracy, Wilson interval")
    canary_shared_from: str | None = None
    human_agree: int = Field(default=0, description="labelled answers where the judge agreed with the person")
    human_labelled: int = 0
    human_accuracy: Estimate = Field(
        default_factory=Estimate,
        description="weighed by the label sheet's design where it is known (human_accuracy_weighted), else the "
        "labelled answers' share: k of n above are the sample's either way",
    )
    human_accuracy_weighted: bool | None = None
    human_accuracy_note: str | None = None
    human_kappa: Estimate = Field(default_factory=Estimate)
    human_kappa_informative: bool | None = None
    retest_items: int = 0
    retest: Estimate = Field(default_factory=Estimate)
    wording_excess: Estimate = Field(default_factory=Estimate)
    lines: dict[str, float] = Field(description="the lines held to (empty: none set, nothing checked)")
    passes: bool | None = Field(description="None: no line was checked")
    failed_checks: list[str] = Field(default_factory=list)
    unmeasured: list[str] = Field(default_factory=list)
    note: str = Field(description="what the report does with this judge's rates, in words")


def export_cards(
    paths: Sequence[Path],
    canaries: Sequence[CanaryRow],
    entries: Iterable[tuple[str, str]],
    labels: Path | None = None,
    min_canary_accuracy: float | None = None,
) -> tuple[dict[tuple[str, str], ExportedCard], list[str]]:
    """The card of every (spec, judge) of `entries` (and of any other the report's card holds), computed as
    `speceval report` on `paths` computes it: with the study's report settings, `labels` and `min_canary_accuracy`
    (the report's flags) in place of the study's when given; and the notes the report would show about the
    settings (a recorded labels file that is not found)."""
    given = {k: v for k, v in (("labels", labels), ("min_canary_accuracy", min_canary_accuracy)) if v is not None}
    settings, notes = report_settings(paths, given)
    options = (
        settings.options() if settings is not None else {"labels": labels, "min_canary_accuracy": min_canary_accuracy}
    )
    lines = card_lines(options.get("card"), options.get("min_canary_accuracy"))
    accuracy = judge_accuracy(judge_checks(list(canaries)), lines.get("min_canary_accuracy"))
    found = options.get("labels")
    tally = labelled_tally(paths, found) if found is not None else None
    rows = judge_card(entries, accuracy, list(canaries), tally, [], [], card_verdicts(paths), lines)
    correct = {(a.spec, a.judge): a.correct for a in accuracy}
    cards = {}
    for row in rows:  # every entry the report's card has (a judge of canaries only too), as it has them
        cards[(row.spec, row.judge)] = ExportedCard(
            **{name: getattr(row, name) for name in ExportedCard.model_fields if name in JudgeCardRow.model_fields},
            canary_correct=correct.get((row.spec, row.judge), 0) if row.canary_judged else 0,
            lines=lines,
            note=_note(row.passes, row.failed_checks, lines),
        )
    return cards, notes


def _note(passes: bool | None, failed: list[str], lines: dict[str, float]) -> str:
    if passes is False:
        return f"FAILS its judge card ({'; '.join(failed)}): speceval report keeps this judge out of its headline"
    if passes is None:
        return "no judge card line set (no judge_card: block, no min_canary_accuracy): nothing checked"
    return "passes its judge card's lines (" + ", ".join(f"{k} {v:g}" for k, v in sorted(lines.items())) + ")"


def card_metrics(results: EvalResults | None, judges: dict[str, str], cards: dict[str, dict[str, Any]]) -> None:
    """Add each judge's accuracies to its scores' metrics in `results` (score name → judge in `judges`; the
    log's cards by judge, as its metadata holds them). A measure without a value adds nothing (every metric stays
    finite)."""
    from inspect_ai.log import EvalMetric

    columns = JudgeCardRow.estimate_columns()
    for score in results.scores if results is not None else []:
        card = cards.get(judges.get(score.name, ""))
        if card is None:
            continue
        for field, (k, n) in _METRICS.items():
            estimate = card[field]
            if estimate["value"] is None:
                continue
            counts = {k.split("_", 1)[1]: card[k], n.split("_", 1)[1]: card[n]}  # correct/judged, agree/labelled
            about = {**counts, **estimate, "of": "the judge (its judge card), not this score's samples"}
            # judge_card.csv's names (its fourth, the method, is text: in the metadata)
            for name, value in zip(
                columns[field].names(), (estimate["value"], estimate["ci_low"], estimate["ci_high"]), strict=False
            ):
                if value is not None:
                    score.metrics[name] = EvalMetric(name=name, value=value, metadata=about)
        if card["passes"] is not None:
            score.metrics["card_passes"] = EvalMetric(
                name="card_passes", value=int(card["passes"]), metadata={"note": card["note"]}
            )
