"""speceval's verdicts as Inspect scores (one per judge, one per judged turn of a per-turn judge, and a panel's),
and what a log keeps of the report's rates, for `inspect_log` (the mapping is in its docstring and docs/inspect.md).

Every exported score is finite: a verdict that is not `judged` (unparsed, failed, missing) gets no score (Inspect's
`Score.unscored` would store NaN, which a reader of the scores takes for a number); its outcome and reason are in
the sample's `metadata["not_judged"]` and the whole log's counts in `eval.metadata["speceval"]["rates"]`.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from speceval.analysis.reading.columns import VerdictColumns
from speceval.analysis.reading.rows import ComplianceRow
from speceval.analysis.tables.panel import PANEL, panel_verdicts
from speceval.defaults import Mode

SampleKey = tuple[str, int, int]
"""A sample of a log: statement id, original index, epoch (the verdict's run: a log of an Inspect candidate's epochs
holds each of them; a conversation is one sample, its judged turns its scores)."""

PANEL_MODES = ("binary", "likert")
"""The scales a panel is formed on: one panel per scale, over the judges of the whole answer on that scale (a
share of compliant judges and a mean rating are not one number; a turn's verdict is not the answer's)."""

RATE_FIELDS = {
    "judged",
    "compliant",
    "not_judged",
    "rate",
    "ci_low",
    "ci_high",
    "ci_method",
    "inputs",
    "mean_rating",
    "rating_ci_low",
    "rating_ci_high",
}
"""What a log's metadata keeps of the report's `RateSummary` for each judge and the panel."""


def metrics(mode: str) -> list[str]:
    """Inspect's metrics per mode: accuracy of "C"/"I", the mean of Likert ratings; categories have none."""
    return {"binary": ["accuracy", "stderr"], "likert": ["mean", "stderr"]}.get(mode, [])


def sample_key(row: ComplianceRow) -> SampleKey:
    """The sample a verdict belongs to (its row must carry its `detail`: `load_verdicts(..., detail=True)`)."""
    index = row.detail.original_index if row.detail is not None else None
    return row.statement_id, index if index is not None else -1, row.run


def score_name(judge: str, turn: int | None) -> str:
    """A score's name: the judge's, `_turn<k>` added for a per-turn judge's verdict on turn k."""
    return judge if turn is None else f"{judge}_turn{turn}"


def panel_names(modes: dict[str, str]) -> dict[str, list[str]]:
    """The panels of a log (name → its judges): one per scale that two or more whole-answer judges share, named
    `panel`, or `panel_<scale>` when the log has panels on two scales."""
    by_mode: dict[str, list[str]] = defaultdict(list)
    for judge, mode in sorted(modes.items()):
        if mode in PANEL_MODES:
            by_mode[mode].append(judge)
    formed = {mode: judges for mode, judges in by_mode.items() if len(judges) > 1}
    if len(formed) == 1:
        return {PANEL: next(iter(formed.values()))}
    return {f"{PANEL}_{mode}": judges for mode, judges in sorted(formed.items())}


Score = dict[str, Any]
"""An Inspect `Score` as its log stores it (`Score.model_dump(mode="json", exclude_none=True)`): the samples are
written as JSON without an inspect_ai object per sample (`inspect_zip`)."""


def score(value: str | float | int, answer: str | None, explanation: str | None, metadata: dict[str, Any]) -> Score:
    """A score in the order and form inspect_ai dumps it (a None field left out, an empty edit history)."""
    made: Score = {"value": value}
    if answer is not None:
        made["answer"] = answer
    if explanation is not None:
        made["explanation"] = explanation
    made["metadata"] = metadata
    made["history"] = []
    return made


def judge_score(row: ComplianceRow, answer: str | None) -> Score | None:
    """One judge's verdict: "C"/"I", a rating or a category, with the answer it judged (Inspect View's answer
    column); None for a verdict that is not `judged` (see the module's docstring)."""
    if row.outcome != "judged":
        return None
    value: str | float | int | None
    if row.mode == Mode.CATEGORIES:
        value = row.category
    elif row.mode == Mode.LIKERT:
        value = None if row.rating is None else int(row.rating)
    else:
        value = None if row.compliant is None else ("C" if row.compliant else "I")
    if value is None:
        return None
    detail = row.detail
    metadata = {
        "outcome": row.outcome,
        "prompt_version": row.prompt_version,
        "raw_judge_response": detail.raw_judge_response if detail is not None else None,
        "confidence": row.confidence,
    }
    return score(value, answer, row.explanation, metadata)


def not_judged(row: ComplianceRow) -> dict[str, str | None]:
    """What a sample's metadata says of a verdict that has no score."""
    detail = row.detail
    return {
        "outcome": row.outcome,
        "reason": row.problem,
        "parse_error": detail.parse_error if detail is not None else None,
    }


def panel_scores(rows: list[ComplianceRow], answers: Mapping[SampleKey, str]) -> dict[SampleKey, Score | str]:
    """The panel's score of every answer some of its judges judged (as the report's panel: the share of judges that
    found it compliant, or their mean rating, on answers every judge judged), or the outcome of an answer left out
    (`panel_incomplete`). `rows` are the panel's judges' verdicts on the whole answer, of one scale."""
    panel = panel_verdicts(rows)
    if panel is None:
        return {}
    c: VerdictColumns = panel.verdicts
    scores: dict[SampleKey, Score | str] = {}
    for position in range(len(c)):
        key = sample_key(rows[int(c.source_row[position])])
        value = float(c.score[position]) if not math.isnan(c.score[position]) else float(c.rating[position])
        outcome = c.outcomes[int(c.outcome[position])]
        scores[key] = (
            score(value, answers.get(key), panel.explanation(position), {"outcome": outcome})
            if outcome == "judged" and math.isfinite(value)
            else outcome
        )
    return scores
