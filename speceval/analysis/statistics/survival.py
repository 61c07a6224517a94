"""Kaplan–Meier survival of "not yet flipped" over the turns of a conversation, with a pointwise 95% interval that
treats the input, not the conversation, as the unit (a conversation's repeated runs, and other scripts from the same
input, are not independent).

The interval is the hull of a percentile bootstrap over whole inputs and a Wilson interval at the number of inputs
at risk: the bootstrap alone collapses to a point where no resample shows a flip (S = 1 at small n, the common case),
and the Wilson floor keeps the interval honest there; `benchmarks/coverage_matrix.py` ("flip-survival") measures it.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np

from speceval.analysis.statistics.clustered import BOOTSTRAP_DRAWS, BOOTSTRAP_SEED, bootstrap_weighted, codes_of
from speceval.analysis.statistics.stats import wilson_interval


def kaplan_meier(
    times: np.ndarray, events: np.ndarray, turns: Sequence[int], weights: np.ndarray | None = None
) -> np.ndarray:
    """S(t) at each of `turns`: the product over event turns u <= t of (1 - d_u / n_u), with n_u the (weighted)
    conversations whose time is >= u and d_u those flipping at u. `times` is the flip turn for an event, the last
    judged turn for a censored conversation (censored at t: still at risk at t, as in the usual convention)."""
    w = np.ones(len(times)) if weights is None else weights
    survival, result = 1.0, []
    order = sorted(set(int(t) for t in times[events.astype(bool)]))
    events_at = {u: float(w[(times == u) & events.astype(bool)].sum()) for u in order}
    at_risk = {u: float(w[times >= u].sum()) for u in order}
    for turn in turns:
        survival = 1.0
        for u in order:
            if u > turn:
                break
            if at_risk[u] > 0:
                survival *= 1.0 - events_at[u] / at_risk[u]
        result.append(survival)
    return np.asarray(result)


def survival_intervals(
    times: Sequence[int],
    events: Sequence[bool],
    clusters: Sequence[Hashable],
    turns: Sequence[int],
    draws: int = BOOTSTRAP_DRAWS,
    seed: int = BOOTSTRAP_SEED,
) -> tuple[np.ndarray, list[tuple[float, float] | None]]:
    """The Kaplan–Meier estimate at `turns` and its 95% interval per turn (None where no input is at risk)."""
    t = np.asarray(times, dtype=int)
    e = np.asarray(events, dtype=bool)
    estimate = kaplan_meier(t, e, turns)
    codes, distinct = codes_of(clusters)
    band = bootstrap_weighted(clusters, lambda w: kaplan_meier(t, e, turns, w), draws, seed)
    intervals: list[tuple[float, float] | None] = []
    for i, turn in enumerate(turns):
        inputs_at_risk = len(set(codes[t >= turn].tolist()))
        if inputs_at_risk == 0:  # nobody left: the curve and its interval stay where the last turn left them
            intervals.append(intervals[-1] if intervals else None)
            continue
        wilson = wilson_interval(float(estimate[i]) * inputs_at_risk, inputs_at_risk) or (0.0, 1.0)
        low, high = wilson
        if band is not None:
            low, high = min(low, float(band[0][i])), max(high, float(band[1][i]))
        intervals.append((max(0.0, low), min(1.0, high)))
    return estimate, intervals
