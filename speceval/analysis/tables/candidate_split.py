"""Cross-candidate disagreement as a signal about the spec ("Stress-testing model specs", Anthropic and Thinking
Machines, arXiv 2510.07686: where frontier models disagree most, all of them violate the spec more often).

Per statement, over the inputs answered by three or more candidates: each candidate's compliance on the input (the
mean of its judges' verdicts and runs), their population SD, and the shares of inputs that split the candidates
(SD at least a line) and that every candidate fails (each mean below 1/2), with Wilson intervals over inputs. Per
spec, the association of the two shares across statements: Spearman's rho of the statements' true shares (as with
unlimited inputs), corrected for the noise of each share's own few inputs (`spearman_disattenuated`), from 8
statements.

Limits: here compliance and disagreement come from the same verdicts, so on one input "split" and "all fail"
exclude each other; the paper's association is therefore measured between statements, and means something only
with many of them.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
from pydantic import BaseModel

from speceval.analysis.statistics.clustered import (
    dense_codes,
)
from speceval.analysis.statistics.codes import dense
from speceval.analysis.statistics.registry import SPEARMAN, WILSON
from speceval.analysis.statistics.stats import SPEARMAN_MIN, spearman_disattenuated, wilson_interval

SPLIT_METHOD = WILSON  # the registry's `split_share`: a share of independent inputs
ASSOCIATION_METHOD = SPEARMAN


class HealthAssociation(BaseModel):
    """Per spec: do statements whose inputs split the candidates also have more inputs every candidate fails?"""

    spec: str
    statements: int
    spearman: float | None
    """Of the statements' true shares: the observed rho corrected for the shares' sampling noise."""
    ci_low: float | None
    ci_high: float | None
    ci_method: str
    observed: float | None = None
    """Spearman's rho of the observed shares (pulled toward 0 by their noise)."""


class StatementShares(NamedTuple):
    """One statement's two shares, over `inputs` inputs (None: taken as exact), `joint` the share of them counted
    in both (a split input is never an all-fail one at the default split line; None: the shares measured apart,
    their noises independent)."""

    spec: str
    split: float | None
    fail: float | None
    inputs: int | None = None
    joint: float | None = None


def split_shares(cell: np.ndarray, compliant: np.ndarray, clusters: np.ndarray, split: float) -> dict[str, Any] | None:
    """Cross-candidate disagreement: per input answered by three or more candidates, each candidate's compliance
    on it (the mean over its judges' verdicts and runs) and their SD; the share of inputs that split the candidates
    (SD ≥ `split`) and of inputs every candidate fails (each mean < 1/2)."""
    inputs = dense_codes(clusters)
    pair = dense(inputs, cell)
    totals = np.bincount(pair, weights=compliant.astype(float))
    counts = np.bincount(pair)
    means = totals / counts
    pair_input = np.zeros(len(means), dtype=np.int64)
    pair_input[pair] = inputs
    candidates = np.bincount(pair_input)
    enough = candidates >= 3
    if not enough.any():
        return None
    mean_of_input = np.bincount(pair_input, weights=means) / np.maximum(candidates, 1)
    variance = np.bincount(pair_input, weights=(means - mean_of_input[pair_input]) ** 2) / np.maximum(candidates, 1)
    splits = (np.sqrt(variance) >= split)[enough]
    failing = (np.bincount(pair_input, weights=(means >= 0.5).astype(float)) == 0)[enough]
    n = int(enough.sum())
    split_interval = wilson_interval(float(splits.sum()), n)
    fail_interval = wilson_interval(float(failing.sum()), n)
    return {
        "split_inputs": n,
        "split_share": float(splits.mean()),
        "split_ci_low": split_interval[0] if split_interval else None,
        "split_ci_high": split_interval[1] if split_interval else None,
        "all_fail_share": float(failing.mean()),
        "all_fail_ci_low": fail_interval[0] if fail_interval else None,
        "all_fail_ci_high": fail_interval[1] if fail_interval else None,
        "split_ci_method": SPLIT_METHOD,
        "split_and_fail_share": float((splits & failing).mean()),
    }


def associations(
    statements: list[StatementShares] | list[tuple[str, float | None, float | None]],
) -> list[HealthAssociation]:
    """Per spec with `SPEARMAN_MIN` or more statements measured: Spearman's rho between the two shares across
    statements, corrected for each share's sampling noise over its inputs, with the corrected Bonett–Wright
    interval (`spearman_disattenuated`; a statement without its count of inputs is taken as exact). Fewer
    statements: no row, since no interval covers there."""
    found = []
    rows = [StatementShares(*s) for s in statements]
    for spec in sorted({s.spec for s in rows}):
        measured = [s for s in rows if s.spec == spec and s.split is not None and s.fail is not None]
        if len(measured) < SPEARMAN_MIN:
            continue
        x = np.array([s.split for s in measured], dtype=float)
        y = np.array([s.fail for s in measured], dtype=float)
        # A share without its count of inputs is taken as exact (a huge count: no sampling noise).
        inputs = np.array([s.inputs if s.inputs else 1e12 for s in measured], dtype=float)
        joint = np.array([x[i] * y[i] if s.joint is None else s.joint for i, s in enumerate(measured)])
        result = spearman_disattenuated(x, y, inputs, joint)
        found.append(
            HealthAssociation(
                spec=spec,
                statements=len(measured),
                spearman=result[0] if result else None,
                ci_low=result[1] if result else None,
                ci_high=result[2] if result else None,
                ci_method=ASSOCIATION_METHOD,
                observed=result[3] if result else None,
            )
        )
    return found
