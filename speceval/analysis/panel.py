"""A panel verdict per answer when several judges judged it: the majority of binary verdicts, the mean of Likert
ratings. A tie, or an answer no judge gave a verdict on, is an outcome of its own, never a verdict.

Panel verdicts are rows like any judge's (judge `panel`), so every table and interval treats them the same way.
"""

from __future__ import annotations

from collections import defaultdict
from statistics import mean

from pydantic import BaseModel

from speceval.analysis.load import ComplianceRow

PANEL = "panel"
PANEL_TIE = "panel_tie"
PANEL_NO_VERDICT = "panel_no_verdict"


class PanelCounts(BaseModel):
    """How the panel's verdicts came about, per candidate and variation."""

    spec: str
    candidate: str
    variation: str
    answers: int
    majority: int
    ties: int
    no_verdict: int
    incomplete: int  # answers where at least one judge gave no verdict (failed or unparsed)


def _answer(row: ComplianceRow) -> tuple[str, str, str, int, str, str, str]:
    return row.spec, row.model, row.variation, row.run, row.statement_id, row.input, row.output


def panel_rows(rows: list[ComplianceRow]) -> tuple[list[ComplianceRow], list[PanelCounts]]:
    """One `panel` row per answer judged by more than one judge (empty with a single judge)."""
    judges = sorted({r.judge for r in rows if r.judge != PANEL})
    if len(judges) < 2:
        return [], []
    answers: dict[tuple[str, str, str, int, str, str, str], list[ComplianceRow]] = defaultdict(list)
    for row in rows:
        if row.judge != PANEL:
            answers[_answer(row)].append(row)
    panel: list[ComplianceRow] = []
    counts: dict[tuple[str, str, str], PanelCounts] = {}
    for key, verdicts in sorted(answers.items()):
        binary = [bool(r.compliant) for r in verdicts if r.outcome == "judged" and r.compliant is not None]
        ratings = [r.rating for r in verdicts if r.outcome == "judged" and r.rating is not None]
        yes, no = sum(binary), len(binary) - sum(binary)
        if ratings:
            outcome, compliant = "judged", None
        elif yes != no:
            outcome, compliant = "judged", yes > no
        else:
            outcome, compliant = (PANEL_TIE if binary else PANEL_NO_VERDICT), None
        first = verdicts[0]
        panel.append(first.model_copy(update={
            "judge": PANEL, "outcome": outcome, "compliant": compliant, "confidence": None,
            "rating": mean(ratings) if ratings else None,
            "prompt_version": "+".join(sorted({r.prompt_version for r in verdicts})),
            "explanation": "; ".join(f"{r.judge}: {_verdict(r)}" for r in sorted(verdicts, key=lambda r: r.judge)),
            "source": ", ".join(sorted({r.source for r in verdicts})),
        }))
        tally = counts.setdefault(key[:3], PanelCounts(spec=key[0], candidate=key[1], variation=key[2], answers=0,
                                                       majority=0, ties=0, no_verdict=0, incomplete=0))
        tally.answers += 1
        tally.majority += outcome == "judged"
        tally.ties += outcome == PANEL_TIE
        tally.no_verdict += outcome == PANEL_NO_VERDICT
        tally.incomplete += len(binary) + len(ratings) < len(judges)
    return panel, list(counts.values())


def _verdict(row: ComplianceRow) -> str:
    if row.outcome != "judged":
        return row.outcome
    if row.rating is not None:
        return f"rating {row.rating:g}"
    return "compliant" if row.compliant else "not compliant"
