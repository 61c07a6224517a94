"""speceval's verdicts as Inspect scores (one per judge, and the panel's), and what a log keeps of the report's
rates, for `inspect_log` (the mapping is in its docstring and docs/inspect.md)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from speceval.analysis.reading.columns import VerdictColumns
from speceval.analysis.reading.rows import ComplianceRow
from speceval.analysis.tables.panel import panel_verdicts
from speceval.defaults import Mode

if TYPE_CHECKING:
    from inspect_ai.scorer import Score

SampleKey = tuple[str, int, int | None]
"""A sample of a log: statement id, original index, turn (None: the whole answer)."""

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
    return row.statement_id, index if index is not None else -1, row.turn


def judge_score(row: ComplianceRow) -> Score:
    """One judge's verdict: "C"/"I", a rating or a category; a verdict that is not `judged` is unscored (Inspect's
    metrics leave it out, as speceval's rates do), its outcome and reason kept."""
    from inspect_ai.scorer import Score

    detail = row.detail
    metadata = {
        "outcome": row.outcome,
        "prompt_version": row.prompt_version,
        "raw_judge_response": detail.raw_judge_response if detail is not None else None,
    }
    if row.outcome != "judged":
        return Score.unscored(
            reason="grader_failed",
            explanation=row.problem,
            metadata={**metadata, "parse_error": detail.parse_error if detail else None},
        )
    value: str | float | int | None
    if row.mode == Mode.CATEGORIES:
        value = row.category
    elif row.mode == Mode.LIKERT:
        value = None if row.rating is None else int(row.rating)
    else:
        value = None if row.compliant is None else ("C" if row.compliant else "I")
    if value is None:
        return Score.unscored(reason="grader_failed", explanation=row.problem, metadata=metadata)
    return Score(value=value, explanation=row.explanation, metadata={**metadata, "confidence": row.confidence})


def panel_scores(rows: list[ComplianceRow]) -> dict[SampleKey, Score]:
    """The `panel` score of every answer some judge judged (as the report's panel: the share of judges that found
    it compliant, on answers every judge judged; others unscored). The panel's rate is the whole log's
    (`inspect_parts`)."""
    from inspect_ai.scorer import Score

    panel = panel_verdicts(rows)
    if panel is None:
        return {}
    c: VerdictColumns = panel.verdicts
    scores: dict[SampleKey, Score] = {}
    for position in range(len(c)):
        key = sample_key(rows[int(c.source_row[position])])
        value = float(c.score[position]) if not math.isnan(c.score[position]) else float(c.rating[position])
        outcome = c.outcomes[int(c.outcome[position])]
        explanation = panel.explanation(position)
        scores[key] = (
            Score(value=value, explanation=explanation, metadata={"outcome": outcome})
            if outcome == "judged" and not math.isnan(value)
            else Score.unscored(reason="grader_failed", explanation=explanation, metadata={"outcome": outcome})
        )
    return scores
