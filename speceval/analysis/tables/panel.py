"""A panel verdict per answer when several judges judged it: the share of its judges that found it compliant (so
a split of two judges counts 1/2), the mean of Likert ratings.

Only answers every judge gave a verdict on enter the panel, so the panel's rate is the mean of its judges' rates on
exactly those answers and can never lie outside them (a majority rule that drops splits could: it keeps only the
answers the judges agree on). An answer some judge has no verdict on is counted apart (`panel_incomplete`).

Panel verdicts are rows like any judge's (judge `panel`), so every table and interval treats them the same way.

What a panel may combine: judges of one scale (all binary, or all Likert) judging at one scope. A binary verdict
and a Likert rating are no common quantity (averaging them read as the Likert judge alone), so judges of mixed
scales form no panel and a warning says why; per-turn verdicts never reach this module (they are folded apart).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
from pydantic import BaseModel, Field

from speceval.analysis.reading.column_codes import FileFacts
from speceval.analysis.reading.column_rows import as_columns
from speceval.analysis.reading.columns import NO_VERDICT, VerdictColumns
from speceval.analysis.reading.rows import ComplianceRow
from speceval.analysis.statistics.codes import dense, groups
from speceval.analysis.tables.variations import summarize

logger = logging.getLogger(__name__)

PANEL = "panel"
PANEL_INCOMPLETE = "panel_incomplete"
TIES_RULE = (
    "a panel's verdict on an answer is the share of its judges that found it compliant: with two judges "
    "a split counts 1/2, never dropped; only answers every judge gave a verdict on are in the panel"
)


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
    panel_ci_low: float | None = Field(default=None, description="the panel rate's 95% interval (ci_method)")
    panel_ci_high: float | None = None
    judge_rates: dict[str, float] = Field(default_factory=dict, description="each judge's rate on the same answers")
    judge_intervals: dict[str, tuple[float, float]] = Field(
        default_factory=dict, description="each judge's rate's 95% interval on the same answers (ci_method)"
    )
    ci_method: str | None = None


@dataclass(eq=False)
class Panel:
    """The panel's verdicts (one per answer some judge judged, as columns sharing the judges' facts), how they came
    about, and which judges' verdicts each one is made of (for the explanation the sample view shows)."""

    verdicts: VerdictColumns
    counts: list[PanelCounts]
    _base: VerdictColumns
    _answer: np.ndarray
    _panel_answer: np.ndarray

    def __post_init__(self) -> None:
        self._order = np.argsort(self._answer, kind="stable")
        self._sorted = self._answer[self._order]

    def members(self, panel_row: int) -> np.ndarray:
        """The judges' verdicts (rows of the base columns, in file order) behind one panel verdict."""
        wanted = self._panel_answer[panel_row]
        found = self._order[np.searchsorted(self._sorted, wanted) : np.searchsorted(self._sorted, wanted, "right")]
        return np.sort(found)

    def explanation(self, panel_row: int) -> str:
        """Each judge's verdict on the answer, by judge: `j1: compliant; j2: unparsed`."""
        base = self._base
        rows = sorted(self.members(panel_row), key=lambda r: base.facts[base.file[r]].judge)
        return "; ".join(f"{base.facts[base.file[r]].judge}: {_verdict(base, int(r))}" for r in rows)


def panel_verdicts(rows: list[ComplianceRow] | VerdictColumns) -> Panel | None:
    """One `panel` verdict per answer judged by more than one judge (None with a single judge)."""
    c = as_columns(rows)
    judge_codes = c.fact("judge")
    judges = [str(j) for j in c.names("judge")[np.unique(judge_codes)] if j != PANEL]  # judges with verdicts here
    if len(judges) < 2:
        return None
    modes = {c.facts[f].mode for f in np.unique(c.file) if c.facts[f].judge != PANEL}
    if len(modes) > 1:
        logger.warning(
            "no panel: the judges (%s) judge on different scales (%s); a panel combines judges of one scale only",
            ", ".join(judges),
            ", ".join(sorted(modes)),
        )
        return None
    base = np.flatnonzero(judge_codes != c.code_of("judge", PANEL)) if PANEL in c.names("judge") else np.arange(len(c))
    answer_of = dense(
        c.fact("spec")[base],
        c.fact("model")[base],
        c.fact("variation")[base],
        c.runs()[base],
        c.fact("statement_id")[base],
        c.input[base],
        c.output[base],
    )
    answer = np.full(len(c), -1, dtype=np.int64)
    answer[base] = answer_of
    answers = int(answer_of.max()) + 1 if len(answer_of) else 0
    first = np.full(answers, len(c), dtype=np.int64)
    np.minimum.at(first, answer_of, base)
    has_verdict = base[c.is_outcome("judged")[base] & ((c.compliant[base] != NO_VERDICT) | ~np.isnan(c.rating[base]))]
    # One verdict per judge and answer (the last in file order, as a mapping judge → verdict would keep).
    pair = answer[has_verdict] * len(c.names("judge")) + judge_codes[has_verdict]
    _, last_reversed = np.unique(pair[::-1], return_index=True)
    kept = has_verdict[len(has_verdict) - 1 - last_reversed]
    of = answer[kept]
    rated = ~np.isnan(c.rating[kept])
    binary = c.compliant[kept] != NO_VERDICT
    n_judged = np.bincount(of, minlength=answers)
    n_rated = np.bincount(of, weights=rated, minlength=answers)
    n_binary = np.bincount(of, weights=binary, minlength=answers)
    n_compliant = np.bincount(of, weights=c.compliant[kept] == 1, minlength=answers)
    rating_sum = np.bincount(of, weights=np.where(rated, c.rating[kept], 0.0), minlength=answers)
    complete = n_judged == len(judges)
    score = np.where(
        complete & (n_binary > 0) & (n_rated == 0), n_compliant / np.where(n_binary > 0, n_binary, 1), np.nan
    )
    rating = np.where(complete & (n_rated > 0), rating_sum / np.where(n_rated > 0, n_rated, 1), np.nan)
    facts, files = _panel_facts(c, answer_of, base, first)
    outcomes = list(c.outcomes) + [o for o in ("judged", PANEL_INCOMPLETE) if o not in c.outcomes]
    panel = VerdictColumns(
        facts=facts,
        paths=c.paths + [None] * (len(facts) - len(c.facts)),
        outcomes=outcomes,
        categories=c.categories,
        file=files,
        position=c.position[first],
        input=c.input[first],
        output=c.output[first],
        output_chars=c.output_chars[first],
        outcome=np.where(complete, outcomes.index("judged"), outcomes.index(PANEL_INCOMPLETE)).astype(np.int16),
        compliant=np.where(score == 1.0, 1, np.where(score == 0.0, 0, NO_VERDICT)).astype(np.int8),
        rating=rating,
        category=np.full(answers, NO_VERDICT, dtype=np.int16),
        offset=c.offset[first],
        score=score,
        source_row=first,
    )
    counts = _counts(c, panel, judges, kept, of, complete, score, first)
    return Panel(panel, counts, c, answer, np.arange(answers))


def _panel_facts(
    c: VerdictColumns, answer_of: np.ndarray, base: np.ndarray, first: np.ndarray
) -> tuple[list[FileFacts], np.ndarray]:
    """Facts of every panel verdict: its first judge's file with judge `panel`, and the prompt versions and
    sources of all its judges' files (interned: answers of one statement share them)."""
    pairs = np.unique(np.stack([answer_of, c.file[base]], axis=1), axis=0)
    bounds = np.flatnonzero(np.diff(pairs[:, 0])) + 1
    facts = list(c.facts)
    index: dict[tuple[int, ...], int] = {}
    files = np.zeros(len(first), dtype=np.int64)
    for answer, group in zip(pairs[np.r_[0, bounds], 0], np.split(pairs[:, 1], bounds), strict=True):
        key = (int(c.file[first[answer]]), *group.tolist())
        code = index.get(key)
        if code is None:
            members = [c.facts[f] for f in group]
            code = index[key] = len(facts)
            facts.append(
                c.facts[key[0]].model_copy(
                    update={
                        "judge": PANEL,
                        "prompt_version": "+".join(sorted({f.prompt_version for f in members})),
                        "source": ", ".join(sorted({f.source for f in members})),
                    }
                )
            )
        files[answer] = code
    return facts, files


def _counts(
    c: VerdictColumns,
    panel: VerdictColumns,
    judges: list[str],
    kept: np.ndarray,
    of: np.ndarray,
    complete: np.ndarray,
    score: np.ndarray,
    first: np.ndarray,
) -> list[PanelCounts]:
    binary = complete & ~np.isnan(score)
    judge_names = c.names("judge")
    found = []
    for members in groups(panel.fact("spec"), panel.fact("model"), panel.fact("variation")):
        head = c.facts[c.file[first[members[0]]]]
        tally = PanelCounts(
            spec=head.spec,
            candidate=head.model,
            variation=head.variation,
            answers=int(complete[members].sum()),
            unanimous=int((binary[members] & np.isin(score[members], (0.0, 1.0))).sum()),
            split=int((binary[members] & ~np.isin(score[members], (0.0, 1.0))).sum()),
            incomplete=int((~complete[members]).sum()),
        )
        binary_answers = tally.unanimous + tally.split
        if binary_answers:
            chosen = np.zeros(len(complete), dtype=bool)
            chosen[members[binary[members]]] = True
            tally.panel_rate = float(score[chosen].sum() / binary_answers)
            # Every rate here with the interval compliance.csv gives it (clustered by input, as every rate).
            whole = summarize(panel, members[binary[members]])
            tally.panel_ci_low, tally.panel_ci_high, tally.ci_method = whole.ci_low, whole.ci_high, whole.ci_method
            in_panel = kept[chosen[of]]
            judge_of = judge_names[c.fact("judge")[in_panel]]
            yes = c.compliant[in_panel] == 1
            tally.judge_rates = {j: float(yes[judge_of == j].sum() / binary_answers) for j in judges}
            for j in judges:
                own = summarize(c, in_panel[judge_of == j])
                if own.ci_low is not None and own.ci_high is not None:
                    tally.judge_intervals[j] = (own.ci_low, own.ci_high)
        found.append(tally)
    return found


def panel_rows(rows: list[ComplianceRow]) -> tuple[list[ComplianceRow], list[PanelCounts]]:
    """One `panel` row per answer judged by more than one judge (empty with a single judge)."""
    panel = panel_verdicts(rows)
    if panel is None:
        return [], []
    v = panel.verdicts
    found = []
    for p in range(len(v)):
        facts = v.facts[v.file[p]]
        found.append(
            rows[int(v.source_row[p])].model_copy(
                update={
                    "judge": PANEL,
                    "outcome": v.outcomes[v.outcome[p]],
                    "compliant": None if v.compliant[p] == NO_VERDICT else bool(v.compliant[p]),
                    "score": None if np.isnan(v.score[p]) else float(v.score[p]),
                    "confidence": None,
                    "rating": None if np.isnan(v.rating[p]) else float(v.rating[p]),
                    "prompt_version": facts.prompt_version,
                    "explanation": panel.explanation(p),
                    "source": facts.source,
                }
            )
        )
    return found, panel.counts


def _verdict(c: VerdictColumns, row: int) -> str:
    outcome = str(c.outcomes[c.outcome[row]])
    if outcome != "judged":
        return outcome
    if not np.isnan(c.rating[row]):
        return f"rating {c.rating[row]:g}"
    return "compliant" if c.compliant[row] == 1 else "not compliant"
