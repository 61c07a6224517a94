"""Kaplan–Meier for the turn of a conversation's first flip, with a pointwise band clustered by input.

Each conversation compliant at turn 1 is at risk from turn 2 on: its *time* is the first later judged turn at which
it is not compliant (an event, a flip) or, if it never flips, its last judged turn (censored: a conversation that
ends early, e.g. a simulated user that stopped, says nothing about later turns). Kaplan–Meier estimates
S(t) = P(no flip through turn t) as the product over turns j ≤ t of (1 - d_j / n_j), n_j the conversations still at
risk at turn j and d_j those that flip there; the table prints F(t) = 1 - S(t), the share flipped by turn t.

A conversation's repeated runs, and the other scripts that start from the same input, are not independent, so the
band is not Greenwood's: the variance of L(t) = -log S(t) is the cluster-robust sum of squared per-input influence
totals, Σ_c (Σ_{i in c} IF_i(t))² · G/(G-1), with IF_i(t) = Σ_{j ≤ t} (1{i flips at j} - 1{i at risk at j} · d_j /
n_j) / (n_j - d_j), whose sum of squares over independent conversations is Greenwood's Σ d_j / (n_j (n_j - d_j))
(the robust variance of Lin & Wei 1989, by input). The interval is the log-log one, S^exp(±t·se/L) (always inside
[0, 1]), with t(G-1) quantiles; where nothing has flipped yet
(Λ = 0) or everything has, the exact binomial bound at G clusters (the rule of three's exact form) stands in; between
them at one input, [0, 1]. While fewer than `RARE_COUNT` conversations have flipped, the band is widened to hold
the continuity-corrected Wilson interval at the curve's effective size (`_few_flips`): the log-log band's lower limit
stood above a small truth with two or three flips.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence

from pydantic import BaseModel

from speceval.analysis.statistics.clustered import RARE_COUNT, t975
from speceval.analysis.statistics.stats import wilson_interval


class SurvivalPoint(BaseModel):
    """The curve at one turn: conversations at risk, flips and censored there, and the share flipped by then (the
    columns of a `flip_survival.csv` row after its cell's keys)."""

    turn: int
    at_risk: int
    flips: int
    censored: int
    flipped: float
    """F(t) = 1 - S(t): the estimated share of conversations (compliant at turn 1) flipped by this turn."""
    ci_low: float | None
    ci_high: float | None


def kaplan_meier(times: Sequence[int], events: Sequence[bool], clusters: Sequence[Hashable]) -> list[SurvivalPoint]:
    """The curve at every turn from the first at which a conversation flips or ends to the last (`times`: the turn of
    its first flip, or its last judged turn when `events` is False; `clusters`: its input)."""
    if not times:
        return []
    # Every turn from the first to the last, those where nothing happened included (the curve unchanged there):
    # a turn without a row left F(2) unread on 9-10% of draws at 10 inputs x 2 runs (session 19's audit).
    turns = range(min(times), max(times) + 1)
    groups = sorted(set(clusters), key=repr)
    index = {c: k for k, c in enumerate(groups)}
    g = len(groups)
    quantile = t975(max(g - 1, 1))
    influence = [0.0] * g  # per cluster: Σ IF_i(t) so far
    survival, hazard, flipped_so_far = 1.0, 0.0, 0
    found = []
    for turn in turns:
        at_risk = [i for i, time in enumerate(times) if time >= turn]
        flips = sum(1 for i in at_risk if times[i] == turn and events[i])
        censored = sum(1 for i in at_risk if times[i] == turn and not events[i])
        n = len(at_risk)
        flipped_so_far += flips
        if flips:
            share = flips / n
            survival *= 1 - share
            if flips < n:  # (all at risk flipping ends the curve at S = 0: the exact bound below takes over)
                hazard = -math.log(survival)
                for i in at_risk:
                    flipped = 1.0 if times[i] == turn and events[i] else 0.0
                    influence[index[clusters[i]]] += (flipped - share) / (n - flips)
        low, high = _band(survival, hazard, influence, g, quantile)
        if 0 < flipped_so_far < RARE_COUNT and g > 1 and low is not None and high is not None and low < high:
            low, high = _few_flips(survival, low, high, influence, g, len(times))
        found.append(
            SurvivalPoint(
                turn=turn, at_risk=n, flips=flips, censored=censored, flipped=1 - survival, ci_low=low, ci_high=high
            )
        )
    return found


def _few_flips(
    survival: float, low: float, high: float, influence: list[float], groups: int, conversations: int
) -> tuple[float, float]:
    """The band with few flips so far, widened to hold Wilson's continuity-corrected interval (Newcombe's method 4,
    close to the exact binomial one) at the curve's effective size F(1 - F)/Var F, Var F = S² Var L, at most the
    conversations: the log-log band's lower limit is F e^(-t se/L) and with two or three flips it stood above a
    small truth (200 inputs, F(2) = 0.0025: 0.913-0.916 in session 19's audit), where the binomial limit of 2 of
    194 is 0.0012."""
    flipped = 1 - survival
    variance = survival**2 * groups / (groups - 1) * sum(u * u for u in influence)
    effective = min(flipped * survival / variance, float(conversations)) if variance > 0 else float(conversations)
    binomial = wilson_interval(flipped * effective, effective)
    if binomial is None:
        return low, high
    return min(low, binomial[0]), max(high, binomial[1])


def _band(
    survival: float, hazard: float, influence: list[float], groups: int, quantile: float
) -> tuple[float | None, float | None]:
    """The 95% interval of F = 1 - S (see the module docstring)."""
    edge = 0.025
    exact = 1 - edge ** (1 / max(groups, 1))  # the exact binomial bound when every cluster is on one side
    if survival == 0:  # first: when all at risk flip at the first turn with flips, the hazard is never set
        return 1 - exact, 1.0
    if hazard == 0:
        return 0.0, exact
    if groups < 2:
        # One input: its conversations may be alike, so nothing measures the spread; every share is possible (the
        # curve's point had no interval at all, against "every number carries one").
        return 0.0, 1.0
    variance = groups / (groups - 1) * sum(u * u for u in influence)
    if variance <= 0:
        return 1 - survival, 1 - survival
    spread = quantile * math.sqrt(variance) / hazard  # on log(-log S)
    return 1 - survival ** math.exp(-spread), 1 - survival ** math.exp(spread)
