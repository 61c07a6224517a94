"""The report's numbers, computed from verdict rows. Only `judged` verdicts enter rates, wins and ties; every other
outcome is counted in its own column, so a failed or unparsed judgement can never look like non-compliance."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import numpy as np
from pydantic import BaseModel, Field

from speceval.analysis.reading.column_rows import as_columns
from speceval.analysis.reading.columns import JUDGED, NO_VERDICT, VerdictColumns, grouped
from speceval.analysis.reading.rows import DEFAULT_VARIATION, ComplianceRow
from speceval.analysis.statistics.clustered import BOOTSTRAP_DRAWS, BOOTSTRAP_SEED, rate_interval_codes
from speceval.analysis.statistics.codes import dense, first_seen, groups
from speceval.analysis.statistics.registry import method
from speceval.analysis.statistics.resample import DRAW_BLOCK_CELLS, count_blocks
from speceval.analysis.statistics.stats import (
    cohen_kappa,
    fleiss_kappa,
    krippendorff_alpha_ordinal,
)
from speceval.analysis.tables.variations import COMPLIANT_COUNT, summarize


class ComplianceRate(BaseModel):
    """Compliance of one candidate and variation under one judge (optionally for one statement)."""

    spec: str
    judge: str
    candidate: str
    variation: str = DEFAULT_VARIATION
    statement_id: str | None = None
    judged: int
    compliant: int | float = Field(description=COMPLIANT_COUNT)
    rate: float | None
    ci_low: float | None
    ci_high: float | None
    ci_method: str | None = None
    not_judged: dict[str, int]
    mean_output_chars: float | None = None

    @classmethod
    def of_no_verdicts(cls, key: tuple[str, ...]) -> ComplianceRate:
        """The row of a (spec, judge, candidate, variation, statement) with no verdict (its answers all failed)."""
        spec, judge, candidate, variation, statement_id = key
        return cls(
            spec=spec,
            judge=judge,
            candidate=candidate,
            variation=variation,
            statement_id=statement_id,
            judged=0,
            compliant=0,
            rate=None,
            ci_low=None,
            ci_high=None,
            not_judged={},
        )


class Agreement(BaseModel):
    """Agreement between judges on the same answers (of one spec)."""

    spec: str
    judges: str
    items: int
    kappa: float | None
    kind: str
    ci_low: float | None = None
    ci_high: float | None = None
    ci_method: str | None = Field(
        default=None, description="cluster bootstrap over inputs (Cohen, Fleiss); none for Krippendorff's alpha"
    )
    agreement: float | None = Field(
        default=None, description="raw agreement: the share of agreeing (pairs of) verdicts (Cohen, Fleiss)"
    )
    agreement_low: float | None = Field(default=None, description="its 95% interval, clustered by input")
    agreement_high: float | None = None
    prevalence: float | None = Field(default=None, description="share of compliant verdicts among the compared ones")
    note: str | None = Field(default=None, description="why the kappa is to be read with care, when it is")
    kappa_informative: bool | None = Field(
        default=None,
        description="False where the rarer verdict is under 10% of the compared ones: kappa's interval then spans "
        "most of [-1, 1] and raw agreement (agreement, agreement_low, agreement_high) is the number to read",
    )


def compliance_rates(
    rows: list[ComplianceRow] | VerdictColumns, *, per_statement: bool = False
) -> list[ComplianceRate]:
    """Rates per (spec, judge, model, variation[, statement]) with 95% intervals clustered by input."""
    c = as_columns(rows)
    fields = ("spec", "judge", "model", "variation") + (("statement_id",) if per_statement else ())
    rates = []
    for key, indices in grouped(c, None, *fields):
        summary = summarize(c, indices)
        rates.append(
            ComplianceRate(
                spec=key[0],
                judge=key[1],
                candidate=key[2],
                variation=key[3],
                statement_id=key[4] if per_statement else None,
                judged=summary.judged,
                compliant=summary.compliant,
                rate=summary.rate,
                ci_low=summary.ci_low,
                ci_high=summary.ci_high,
                ci_method=summary.ci_method,
                not_judged=summary.not_judged,
                mean_output_chars=float(c.output_chars[indices].mean()),
            )
        )
    return rates


def judge_agreement(rows: list[ComplianceRow] | VerdictColumns) -> list[Agreement]:
    """Per spec: Cohen's kappa per pair of judges and Fleiss' kappa over all, on answers every compared judge
    judged; Krippendorff's alpha over Likert ratings."""
    c = as_columns(rows)
    results = []
    for (spec,), members in grouped(c, None, "spec"):
        results += _agreement(spec, c, members)
    return results


def _agreement(spec: str, c: VerdictColumns, members: np.ndarray) -> list[Agreement]:
    # Answers are numbered in sorted order of (candidate, variation, run, statement, input, answer), texts by
    # their first appearance in the files: the order the bootstrap numbers its clusters in.
    judged = c.is_outcome(JUDGED)[members]
    binary = judged & (c.compliant[members] != NO_VERDICT)
    rated = judged & ~np.isnan(c.rating[members])
    by_judge = grouped(c, members[binary], "judge")
    # Ratings of one Likert judge have nothing to agree with: no alpha row (it read "0 items, no interval").
    rated &= len(grouped(c, members[rated], "judge")) >= 2
    if len(by_judge) < 2 and not rated.any():
        return []  # fewer than two judges of either kind: nothing to agree on (and no answer numbering to pay for)
    answer = dense(
        c.fact("model", members),
        c.fact("variation", members),
        c.runs(members),
        c.fact("statement_id", members),
        c.first_seen("input")[members],
        c.first_seen("output")[members],
    )
    verdicts: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for (judge,), rows in by_judge:
        of = answer[np.searchsorted(members, rows)]
        # One verdict per answer (the last in file order, as a mapping answer → verdict would keep).
        _, last_reversed = np.unique(of[::-1], return_index=True)
        last = len(of) - 1 - last_reversed
        verdicts[judge] = of[last], rows[last]
    judges = sorted(verdicts)
    results: list[Agreement] = []
    for a, b in itertools.combinations(judges, 2):
        common, in_a, in_b = np.intersect1d(verdicts[a][0], verdicts[b][0], return_indices=True)
        first = c.compliant[verdicts[a][1][in_a]] == 1
        second = c.compliant[verdicts[b][1][in_b]] == 1
        kappa = cohen_kappa(list(first), list(second))
        cells = np.stack([first & second, first & ~second, ~first & second, ~first & ~second], axis=1)
        ids = first_seen(c.cluster()[verdicts[a][1][in_a]])
        interval = kappa_interval(ids, cells.astype(float), cohen_of_draws)
        prevalence = float(first.mean() + second.mean()) / 2 if len(common) else None
        results.append(
            Agreement(
                spec=spec,
                judges=f"{a} vs {b}",
                items=len(common),
                kappa=kappa,
                kind="Cohen",
                **with_agreement(
                    interval, kappa, (first == second).astype(float), ids, cohen_expected(cells.sum(axis=0)), prevalence
                ),
            )
        )
    if len(judges) > 2:
        shared = verdicts[judges[0]][0]
        for judge in judges[1:]:
            shared = np.intersect1d(shared, verdicts[judge][0])
        compliant = np.zeros(len(shared))
        for judge in judges:
            of, rows = verdicts[judge]
            compliant += c.compliant[rows[np.isin(of, shared)]] == 1
        raters = len(judges)
        counts = np.stack([compliant, raters - compliant], axis=1).astype(np.int64)
        agreeing = (counts[:, 0] * (counts[:, 0] - 1) + counts[:, 1] * (counts[:, 1] - 1)) / (raters * (raters - 1))
        features = np.stack([np.ones(len(shared)), agreeing, counts[:, 0]], axis=1)
        of, rows = verdicts[judges[0]]
        ids = first_seen(c.cluster()[rows[np.isin(of, shared)]])
        interval = kappa_interval(ids, features, lambda t: fleiss_of_draws(t, raters))
        kappa_all = fleiss_kappa(counts)
        prevalence = float(compliant.sum() / (len(shared) * raters)) if len(shared) else None
        expected = None if prevalence is None else prevalence**2 + (1 - prevalence) ** 2
        results.append(
            Agreement(
                spec=spec,
                judges="all",
                items=len(shared),
                kappa=kappa_all,
                kind="Fleiss",
                **with_agreement(interval, kappa_all, agreeing.astype(float), ids, expected, prevalence),
            )
        )
    if rated.any():
        units = [c.rating[members[rated][g]].astype(int).tolist() for g in groups(answer[rated])]
        results.append(
            Agreement(
                spec=spec,
                judges="all (Likert ratings)",
                items=sum(len(u) >= 2 for u in units),
                kappa=krippendorff_alpha_ordinal(units),
                kind="Krippendorff alpha (ordinal)",
            )
        )
    return results


UNSTABLE = (
    "kappa is uninformative at prevalence {prevalence:.2f} (Feinstein & Cicchetti 1990: high agreement can give "
    "almost any kappa; its interval here is as wide as the scale allows): read raw agreement instead, "
    "{agreement:.3f} [{low:.3f}, {high:.3f}]"
)
UNSTABLE_PREVALENCE = 0.1
"""Below this share of the rarer verdict a kappa is flagged: at prevalence 0.95 and 30 answers its bootstrap interval
covered 0.72 (issue 34)."""


def kappa_informative(prevalence: float) -> bool:
    """Whether a kappa at this share of compliant verdicts says more than raw agreement: not when the rarer verdict
    is under `UNSTABLE_PREVALENCE` (prevalence 0.9-0.99: the covering interval is up to 1.8 of [-1, 1] wide)."""
    return min(prevalence, 1 - prevalence) >= UNSTABLE_PREVALENCE


def with_agreement(
    interval: dict[str, Any],
    kappa: float | None,
    agreeing: np.ndarray,
    ids: np.ndarray,
    expected: float | None,
    prevalence: float | None,
) -> dict[str, Any]:
    """The kappa's interval widened to hold the kappa at both ends of raw agreement's own clustered interval (at the
    observed chance agreement), so perfect agreement on few answers is not [1, 1]; the raw agreement, prevalence
    and a note beside it."""
    found = dict(interval)
    if not len(agreeing):
        return found
    bounds = rate_interval_codes(agreeing, ids)
    if bounds is None:
        return found
    found.update(
        agreement=float(agreeing.mean()), agreement_low=bounds[0], agreement_high=bounds[1], prevalence=prevalence
    )
    if prevalence is not None:
        found["kappa_informative"] = kappa_informative(prevalence)
    if prevalence is not None and not found["kappa_informative"]:
        # Issue 47: at prevalence 0.9-0.99 kappa's covering interval spans up to 1.8 of [-1, 1]; no narrower valid
        # one was found, so the note says it plainly and gives the number to read, with its own interval.
        found["note"] = UNSTABLE.format(
            prevalence=prevalence, agreement=float(agreeing.mean()), low=bounds[0], high=bounds[1]
        )
    if kappa is not None and expected is not None and expected < 1.0 and "ci_low" in found:
        low, high = ((bound - expected) / (1 - expected) for bound in bounds[:2])
        # A kappa of two judges is never below -1 (agreement 0 at chance agreement 1/2 at most).
        found["ci_low"] = max(-1.0, min(found["ci_low"], low, kappa))
        found["ci_high"] = max(found["ci_high"], high, kappa)
        found["ci_method"] = method("kappa", draws=BOOTSTRAP_DRAWS, seed=BOOTSTRAP_SEED)
    return found


def cohen_expected(totals: np.ndarray) -> float | None:
    """Chance agreement of two judges from their (both, only a, only b, neither) counts."""
    both, only_a, only_b, neither = totals
    n = totals.sum()
    if n == 0:
        return None
    return float(((both + only_a) * (both + only_b) + (neither + only_b) * (neither + only_a)) / n**2)


def cohen_from_counts(totals: np.ndarray) -> float | None:
    """Cohen's kappa from one (both, only a, only b, neither) count; None where undefined."""
    return _defined(cohen_of_draws(totals[None, :])[0])


def cohen_of_draws(totals: np.ndarray) -> np.ndarray:
    """Cohen's kappa of each row of (both, only a, only b, neither) counts; NaN where undefined (no items, or chance
    agreement 1)."""
    both, only_a, only_b, neither = totals.T
    n = totals.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        expected = ((both + only_a) * (both + only_b) + (neither + only_b) * (neither + only_a)) / n**2
        value = ((both + neither) / n - expected) / (1 - expected)
    return np.where((n == 0) | (expected >= 1.0), np.nan, value)


def fleiss_of_draws(totals: np.ndarray, raters: int) -> np.ndarray:
    """Fleiss' kappa of each row of (items, agreeing share sum, compliant verdicts) sums of `raters` judges; NaN
    where undefined (no items, or chance agreement 1)."""
    items, agreeing, compliant = totals.T
    with np.errstate(divide="ignore", invalid="ignore"):
        p = compliant / (items * raters)
        expected = p**2 + (1 - p) ** 2
        value = (agreeing / items - expected) / (1 - expected)
    return np.where((items == 0) | (expected >= 1.0), np.nan, value)


def _defined(value: float) -> float | None:
    return None if np.isnan(value) else float(value)


def kappa_interval(
    ids: np.ndarray, features: np.ndarray, statistic: Callable[[np.ndarray], np.ndarray]
) -> dict[str, Any]:
    """95% percentile interval of a kappa over resamples of whole inputs (`BOOTSTRAP_DRAWS`, seeded); `ids` are
    the items' input clusters, numbered 0..G-1 in order of first appearance; `statistic` gives each row of summed
    features its kappa (NaN where undefined: `cohen_of_draws`, `fleiss_of_draws`).

    A kappa is a function of a few sums over items, so each resample only reweights the per-input sums: fast at
    any number of answers. The draws are made a block at a time (`DRAW_BLOCK_CELLS`), not one by one: a block of
    `rng.integers(0, G, (rows, G))` is the same numbers, in the same order, as `rows` calls of
    `rng.integers(0, G, G)`, so the interval is the one the draw-by-draw loop gave (that loop was 7.2 of the 9.4 s of
    CPU the coverage matrix's kappa scenarios took under cProfile; 300 random Cohen and Fleiss cases gave the same
    floats both ways)."""
    if len(features) == 0:
        return {}
    clusters = int(ids.max()) + 1
    if clusters < 2:
        return {}
    per_cluster = np.zeros((clusters, features.shape[1]))
    np.add.at(per_cluster, ids, features)
    totals = np.empty((BOOTSTRAP_DRAWS, features.shape[1]))
    row = 0
    for weights in count_blocks(clusters, BOOTSTRAP_DRAWS, BOOTSTRAP_SEED, DRAW_BLOCK_CELLS):
        for drawn in weights:
            # One vector-matrix product a draw, as before the blocks: a block's single matrix product sums a
            # Fleiss kappa's fractional features in another order, a last digit off (the interval must not move).
            totals[row] = drawn @ per_cluster
            row += 1
    values = statistic(totals)
    values = values[~np.isnan(values)]
    if len(values) < BOOTSTRAP_DRAWS // 2:
        return {}
    low, high = np.percentile(values, [2.5, 97.5])
    return {
        "ci_low": float(low),
        "ci_high": float(high),
        "ci_method": f"cluster bootstrap over inputs ({BOOTSTRAP_DRAWS} draws, seed {BOOTSTRAP_SEED}, percentile)",
    }
