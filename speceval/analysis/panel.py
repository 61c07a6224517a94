"""A panel verdict per answer when several judges judged it: the share of its judges that found it compliant (so
a split of two judges counts 1/2), the mean of Likert ratings.

Only answers every judge gave a verdict on enter the panel, so the panel's rate is the mean of its judges' rates on
exactly those answers and can never lie outside them (a majority rule that drops splits could: it keeps only the
answers the judges agree on). An answer some judge has no verdict on is counted apart (`panel_incomplete`).

Panel verdicts are rows like any judge's (judge `panel`), so every table and interval treats them the same way.
"""

from __future__ import annotations

from collections import defaultdict
from statistics import mean

from pydantic import BaseModel, Field

from speceval.analysis.load import ComplianceRow

PANEL = "panel"
PANEL_INCOMPLETE = "panel_incomplete"
TIES_RULE = ("a panel's verdict on an answer is the share of its judges that found it compliant: with two judges "
             "a split counts 1/2, never dropped; only answers every judge gave a verdict on are in the panel")


class PanelCounts(BaseModel):
    """How the panel's verdicts came about, per spec, candidate and variation, with its judges' rates on the same
    answers (the panel's rate lies between them)."""

    spec: str
    candidate: str
    variation: str
    answers: int = Field(description="answers in the panel: every judge gave a verdict")
    unanimous: int
    split: int = Field(description="answers the judges disagreed on (each counts as its share of compliant)")
    incomplete: int = Field(description="answers at least one judge gave no verdict on (failed or unparsed)")
    panel_rate: float | None = None
    judge_rates: dict[str, float] = Field(default_factory=dict, description="each judge's rate on the same answers")


AnswerKey = tuple[str, str, str, int, str, str, str]


def _answer(row: ComplianceRow) -> AnswerKey:
    return row.spec, row.model, row.variation, row.run, row.statement_id, row.input, row.output


def panel_rows(rows: list[ComplianceRow]) -> tuple[list[ComplianceRow], list[PanelCounts]]:
    """One `panel` row per answer judged by more than one judge (empty with a single judge)."""
    judges = sorted({r.judge for r in rows if r.judge != PANEL})
    if len(judges) < 2:
        return [], []
    answers: dict[AnswerKey, list[ComplianceRow]] = defaultdict(list)
    for row in rows:
        if row.judge != PANEL:
            answers[_answer(row)].append(row)
    panel: list[ComplianceRow] = []
    counts: dict[tuple[str, str, str], PanelCounts] = {}
    sums: dict[tuple[str, str, str], dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for key, verdicts in sorted(answers.items()):
        judged = {r.judge: r for r in verdicts if r.outcome == "judged" and (r.compliant is not None
                                                                              or r.rating is not None)}
        complete = len(judged) == len(judges)
        ratings = [r.rating for r in judged.values() if r.rating is not None]
        binary = [bool(r.compliant) for r in judged.values() if r.compliant is not None]
        score = sum(binary) / len(binary) if complete and binary and not ratings else None
        first = verdicts[0]
        panel.append(first.model_copy(update={
            "judge": PANEL, "outcome": "judged" if complete else PANEL_INCOMPLETE,
            "compliant": (score == 1.0) if score in (0.0, 1.0) else None, "score": score, "confidence": None,
            "rating": mean(ratings) if complete and ratings else None,
            "prompt_version": "+".join(sorted({r.prompt_version for r in verdicts})),
            "explanation": "; ".join(f"{r.judge}: {_verdict(r)}" for r in sorted(verdicts, key=lambda r: r.judge)),
            "source": ", ".join(sorted({r.source for r in verdicts})),
        }))
        group = key[:3]
        tally = counts.setdefault(group, PanelCounts(spec=key[0], candidate=key[1], variation=key[2], answers=0,
                                                     unanimous=0, split=0, incomplete=0))
        if not complete:
            tally.incomplete += 1
            continue
        tally.answers += 1
        if score is not None:
            tally.unanimous += score in (0.0, 1.0)
            tally.split += score not in (0.0, 1.0)
            sums[group][PANEL] += score
            for judge, row in judged.items():
                sums[group][judge] += float(bool(row.compliant))
    for group, tally in counts.items():
        binary_answers = tally.unanimous + tally.split
        if binary_answers:
            tally.panel_rate = sums[group][PANEL] / binary_answers
            tally.judge_rates = {j: sums[group][j] / binary_answers for j in judges}
    return panel, list(counts.values())


def _verdict(row: ComplianceRow) -> str:
    if row.outcome != "judged":
        return row.outcome
    if row.rating is not None:
        return f"rating {row.rating:g}"
    return "compliant" if row.compliant else "not compliant"
