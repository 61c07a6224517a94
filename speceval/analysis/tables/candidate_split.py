"""Cross-candidate disagreement as a signal about the spec ("Stress-testing model specs", Anthropic and Thinking
Machines, arXiv 2510.07686: where frontier models disagree most, all of them violate the spec more often).

Per statement, over the inputs answered by three or more candidates: each candidate's compliance on the input (the
mean of its judges' verdicts and runs), their population SD, and the shares of inputs that split the candidates
(SD at least a line) and that every candidate fails (each mean below 1/2), with Wilson intervals over inputs. Per
spec, the association of the two shares across statements (Spearman's rho, a Fisher-z interval from 8 statements).

Limits: here compliance and disagreement come from the same verdicts, so on one input "split" and "all fail"
exclude each other; the paper's association is therefore measured between statements, and means something only
with many of them.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from pydantic import BaseModel

from speceval.analysis.statistics.clustered import (
    dense_codes,
)
from speceval.analysis.statistics.codes import dense
from speceval.analysis.statistics.registry import SPEARMAN, WILSON
from speceval.analysis.statistics.stats import SPEARMAN_MIN, spearman, spearman_interval, wilson_interval

SPLIT_METHOD = WILSON  # the registry's `split_share`: a share of independent inputs
ASSOCIATION_METHOD = SPEARMAN


class HealthAssociation(BaseModel):
    """Per spec: do statements whose inputs split the candidates also have more inputs every candidate fails?"""

    spec: str
    statements: int
    spearman: float | None
    ci_low: float | None
    ci_high: float | None
    ci_method: str


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
    }


def associations(statements: list[tuple[str, float | None, float | None]]) -> list[HealthAssociation]:
    """Per spec with `SPEARMAN_MIN` or more statements measured ((spec, split share, all-fail share) each):
    Spearman's rho between the two shares across statements, with its Fisher-z interval (fewer statements: no row,
    since no interval covers there)."""
    found = []
    for spec in sorted({s[0] for s in statements}):
        pairs = np.array(
            [
                (split, fail)
                for name, split, fail in statements
                if name == spec and split is not None and fail is not None
            ]
        )
        if len(pairs) < SPEARMAN_MIN:
            continue
        rho = spearman(pairs[:, 0], pairs[:, 1])
        interval = None if rho is None else spearman_interval(rho, len(pairs))
        found.append(
            HealthAssociation(
                spec=spec,
                statements=len(pairs),
                spearman=rho,
                ci_low=interval[0] if interval else None,
                ci_high=interval[1] if interval else None,
                ci_method=ASSOCIATION_METHOD,
            )
        )
    return found
