"""Categorical judges: the distribution of categories per judge, candidate and variation, the difference between
variations per category, and nominal agreement between categorical judges.

A category's rate is its share among the judged verdicts of the cell (unparsed and failed verdicts are counted
apart, never as a category), so the rates of a cell sum to 1. Intervals are clustered by input and stratified by
statement, like every other rate (`speceval.analysis.statistics.clustered`); a difference between two variations is
paired on the inputs both saw (the MOVER interval of `speceval.analysis.statistics.paired`).
"""

from __future__ import annotations

import itertools
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence

from pydantic import BaseModel

from speceval.analysis.reading.rows import ComplianceRow
from speceval.analysis.statistics.clustered import rate_interval
from speceval.analysis.statistics.columns import interval_columns
from speceval.analysis.statistics.paired import paired_difference
from speceval.analysis.statistics.registry import PAIRED
from speceval.analysis.statistics.stats import cohen_kappa
from speceval.analysis.tables.variations import input_key
from speceval.defaults import Mode

MODE = Mode.CATEGORIES


def is_categorical(row: ComplianceRow) -> bool:
    return row.mode == MODE


class CategoryShare(BaseModel):
    """One category's share of one cell's judged verdicts."""

    judge: str
    candidate: str
    variation: str
    category: str
    count: int
    judged: int
    rate: float | None
    ci_low: float | None
    ci_high: float | None
    not_judged: int
    spec: str
    ci_method: str | None = None


class CategoryDifference(BaseModel):
    """A category's rate in variation `a` minus in `b`, paired on the inputs both saw."""

    spec: str
    judge: str
    candidate: str
    category: str
    a: str
    b: str
    inputs: int
    difference: float
    ci_low: float | None
    ci_high: float | None
    ci_method: str = PAIRED


class CategoryAgreement(BaseModel):
    spec: str
    judges: str
    items: int
    kappa: float | None


def _cells(rows: list[ComplianceRow]) -> dict[tuple[str, str, str, str], list[ComplianceRow]]:
    cells: dict[tuple[str, str, str, str], list[ComplianceRow]] = defaultdict(list)
    for row in rows:
        if is_categorical(row):
            cells[(row.spec, row.judge, row.model, row.variation)].append(row)
    return cells


def _categories(rows: list[ComplianceRow]) -> list[str]:
    return sorted({r.category for r in rows if r.category is not None})


Declared = Mapping[tuple[str, str], Sequence[str]]
"""(spec, judge) → the categories the judge was given (`speceval.analysis.reading.declared_categories`)."""


def category_distribution(rows: list[ComplianceRow], declared: Declared | None = None) -> list[CategoryShare]:
    """Every category's share in every (spec, judge, candidate, variation) cell, with a clustered 95% interval:
    the categories some verdict chose and those the judge was given (`declared`), a category no verdict chose at
    count 0 with its interval (left out, a rare category had no row on most draws and covered 0.87 where shown)."""
    shares = []
    cells = _cells(rows)
    of_judge: dict[tuple[str, str], list[str]] = {}
    for (spec, judge, _, _), cell in cells.items():
        given = (declared or {}).get((spec, judge), ())
        of_judge[(spec, judge)] = sorted(set(of_judge.get((spec, judge), [])) | set(_categories(cell)) | set(given))
    for (spec, judge, candidate, variation), cell in sorted(cells.items()):
        judged = [r for r in cell if r.outcome == "judged" and r.category is not None]
        clusters = [input_key(r) for r in judged]
        strata = {input_key(r): (r.spec, r.statement_id) for r in judged}
        counts = Counter(r.category for r in judged)
        for category in of_judge[(spec, judge)]:
            values = [float(r.category == category) for r in judged]
            interval = rate_interval(values, clusters, strata) if judged else None
            shares.append(
                CategoryShare(
                    spec=spec,
                    judge=judge,
                    candidate=candidate,
                    variation=variation,
                    category=category,
                    count=counts[category],
                    judged=len(judged),
                    rate=counts[category] / len(judged) if judged else None,
                    **interval_columns(interval),
                    not_judged=len(cell) - len(judged),
                )
            )
    return shares


def category_differences(rows: list[ComplianceRow], declared: Declared | None = None) -> list[CategoryDifference]:
    """Per spec, judge, candidate and category (those chosen and those `declared`): every pair of variations, paired
    on shared inputs."""
    by_candidate: dict[tuple[str, str, str], dict[str, list[ComplianceRow]]] = defaultdict(dict)
    for (spec, judge, candidate, variation), cell in _cells(rows).items():
        by_candidate[(spec, judge, candidate)][variation] = [
            r for r in cell if r.outcome == "judged" and r.category is not None
        ]
    found = []
    for (spec, judge, candidate), variations in sorted(by_candidate.items()):
        seen = _categories([r for cell in variations.values() for r in cell])
        categories = sorted(set(seen) | set((declared or {}).get((spec, judge), ())))
        for a, b in itertools.combinations(sorted(variations), 2):
            strata = {input_key(r): (r.spec, r.statement_id) for r in variations[a] + variations[b]}
            for category in categories:
                side_a = [(input_key(r), float(r.category == category)) for r in variations[a]]
                side_b = [(input_key(r), float(r.category == category)) for r in variations[b]]
                paired = paired_difference(side_a, side_b, strata)
                if paired is not None:
                    found.append(
                        CategoryDifference(
                            spec=spec,
                            judge=judge,
                            candidate=candidate,
                            category=category,
                            a=a,
                            b=b,
                            inputs=paired.clusters,
                            difference=paired.difference,
                            ci_low=paired.ci_low,
                            ci_high=paired.ci_high,
                        )
                    )
    return found


def category_agreement(rows: list[ComplianceRow]) -> list[CategoryAgreement]:
    """Cohen's kappa (nominal) between every pair of categorical judges, on the answers both judged."""
    verdicts: dict[tuple[str, str], dict[tuple[object, ...], str]] = defaultdict(dict)
    for row in rows:
        if is_categorical(row) and row.outcome == "judged" and row.category is not None:
            verdicts[(row.spec, row.judge)][
                (row.model, row.variation, row.run, row.statement_id, row.input, row.output)
            ] = row.category
    found = []
    for spec in sorted({spec for spec, _ in verdicts}):
        judges = sorted(judge for s, judge in verdicts if s == spec)
        for a, b in itertools.combinations(judges, 2):
            common = sorted(set(verdicts[(spec, a)]) & set(verdicts[(spec, b)]), key=str)
            kappa = cohen_kappa([verdicts[(spec, a)][k] for k in common], [verdicts[(spec, b)][k] for k in common])
            found.append(CategoryAgreement(spec=spec, judges=f"{a} vs {b}", items=len(common), kappa=kappa))
    return found
