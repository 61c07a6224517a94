"""Statements in tension (issue 38): for each pair of statements whose inputs were written so that following one
pulls against the other, how often the candidates' answers to those inputs comply with both, with one, with neither.

A unit is one judge's verdicts on one candidate's answers to one pair input under each statement (its file for A
and its file for B hold the same input; the answer to each is generated and judged under that statement). Only
units with a verdict under both statements count; judges and candidates are pooled; intervals are clustered by
input. The two verdicts of a unit judge two answers to the same input (one generated per statement file), not one
answer twice: with a deterministic candidate they are the same text, with sampling they may differ.
"""

from __future__ import annotations

from typing import Annotated, Any

import numpy as np
from pydantic import Field

from speceval.analysis.reading.columns import NO_VERDICT, VerdictColumns, grouped
from speceval.analysis.reading.pairs import PairInputs
from speceval.analysis.statistics.clustered import dense_codes, rate_interval_codes
from speceval.analysis.statistics.codes import dense
from speceval.analysis.statistics.columns import Bounds, Columns, FlatRecord
from speceval.analysis.tables.panel import PANEL


class PairCompliance(FlatRecord):
    """One pair of statements in tension: shares of units compliant with both, one, neither (95% intervals)."""

    spec: str
    a: str
    b: str
    pair_inputs: int = Field(description="inputs written for the pair")
    units: int = Field(description="(judge, candidate, variation, run, input) with a verdict under both statements")
    inputs: int = Field(description="distinct inputs among the units (the clusters)")
    rate_a: Annotated[Bounds, Columns("rate_a")]
    rate_b: Annotated[Bounds, Columns("rate_b")]
    both: Annotated[Bounds, Columns("both")]
    one: Annotated[Bounds, Columns("one")]
    neither: Annotated[Bounds, Columns("neither")]
    ci_method: str | None = None


SHARES = ("rate_a", "rate_b", "both", "one", "neither")
"""A pair's five shares (A's, B's, both, one, neither), in their columns' order."""


def pair_compliance(c: VerdictColumns, pairs: list[PairInputs]) -> list[PairCompliance]:
    """Per recorded pair with verdicts under both of its statements (see the module docstring)."""
    if not pairs:
        return []
    judged = c.is_outcome("judged") & (c.compliant != NO_VERDICT)
    if PANEL in c.names("judge"):
        judged &= c.fact("judge") != c.code_of("judge", PANEL)
    by_statement = dict(grouped(c, np.flatnonzero(judged), "spec", "statement_id"))
    return [
        _one_pair(c, pair, by_statement.get((pair.spec, pair.a)), by_statement.get((pair.spec, pair.b)))
        for pair in pairs
    ]


def _one_pair(
    c: VerdictColumns, pair: PairInputs, rows_a: np.ndarray | None, rows_b: np.ndarray | None
) -> PairCompliance:
    digests = np.array(pair.inputs, dtype=np.int64)
    sides = [
        np.zeros(0, dtype=np.int64) if rows is None else rows[np.isin(c.input[rows], digests)]
        for rows in (rows_a, rows_b)
    ]
    rows = np.concatenate(sides)
    empty = PairCompliance(
        spec=pair.spec,
        a=pair.a,
        b=pair.b,
        pair_inputs=len(digests),
        units=0,
        inputs=0,
        rate_a=Bounds(),
        rate_b=Bounds(),
        both=Bounds(),
        one=Bounds(),
        neither=Bounds(),
    )
    if not len(sides[0]) or not len(sides[1]):
        return empty
    unit = dense(c.fact("judge", rows), c.fact("model", rows), c.fact("variation", rows), c.runs(rows), c.input[rows])
    verdicts = np.full((int(unit.max()) + 1, 2), -1, dtype=np.int8)
    side = np.repeat([0, 1], [len(sides[0]), len(sides[1])])
    verdicts[unit, side] = c.compliant[rows]  # a unit's last verdict on each side, as elsewhere
    inputs = np.zeros(len(verdicts), dtype=np.int64)
    inputs[unit] = c.input[rows]
    complete = (verdicts >= 0).all(axis=1)
    if not complete.any():
        return empty
    a, b = verdicts[complete, 0] == 1, verdicts[complete, 1] == 1
    clusters = dense_codes(inputs[complete])
    found: dict[str, Any] = {}
    for name, values in zip(SHARES, (a, b, a & b, a ^ b, ~a & ~b), strict=True):
        interval = rate_interval_codes(values.astype(float), clusters)
        low, high, found["ci_method"] = interval if interval else (None, None, None)
        found[name] = Bounds(value=float(values.mean()), ci_low=low, ci_high=high)
    return PairCompliance(
        spec=pair.spec,
        a=pair.a,
        b=pair.b,
        pair_inputs=len(digests),
        units=int(complete.sum()),
        inputs=int(clusters.max()) + 1,
        **found,
    )
