"""How many labels each statement gets (`speceval label-sheet --allocation`), issue 44.

* `equal` (the default, as sheets were always drawn): statements take turns, so each gets about n / H.
* `proportional`: n_h ∝ N_h, the statement's answers.
* `neyman`: n_h ∝ N_h · S_h (Neyman), where S_h is the spread of the judge's errors there (the PPI rectifier's SD),
  allocated greedily against the report's PPI variance, floor included (`_neyman`); S_h is estimated
  from a pilot of labels (the share the judge got wrong among a filled sheet's labels of that statement) or, without
  one, from the panel's disagreement (the share of answers on which the judges differ). Either share e is shrunk,
  (k + ½)/(m + 1), so a statement that showed no error still gets some labels, and S_h = √(e(1 − e)). Neyman's
  allocation minimises the stratified estimator's variance for a given n (W. G. Cochran, Sampling Techniques, 1977,
  §5.5); PPI weighs each statement's labels by N_h/n_h whatever the allocation, so its estimate stays unbiased.

Every statement with answers gets at least one label (two when n allows), none more than its answers; the rest is
given by largest remainders. Within a statement the answers drawn are a seeded uniform sample.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

ALLOCATIONS = ("equal", "proportional", "neyman")

Key = tuple[str, str]


def shrunk_spread(wrong: int, seen: int) -> float:
    """√(e(1 − e)) at e = (wrong + ½)/(seen + 1): never 0, so no statement is left without labels."""
    e = (wrong + 0.5) / (seen + 1)
    return math.sqrt(e * (1 - e))


def allocate(population: Mapping[Key, int], n: int, spreads: Mapping[Key, float] | None = None) -> dict[Key, int]:
    """n_h per statement, summing to min(n, Σ N_h), at least min(2, N_h) each while n allows, at most N_h: ∝ N_h
    without `spreads`; with them, Neyman's allocation for the report's stratified PPI (`_neyman`)."""
    keys = sorted(k for k, count in population.items() if count > 0)
    total = min(n, sum(population[k] for k in keys))
    floor = 2 if total >= 2 * len(keys) else 1 if total >= len(keys) else 0
    taken = {k: min(floor, population[k]) for k in keys}
    if spreads is not None:
        return _neyman(population, keys, total, taken, spreads)
    size = sum(population[k] for k in keys)
    exact = {k: total * population[k] / size for k in keys} if size else {}
    taken = {k: min(population[k], max(taken[k], int(exact[k]))) for k in keys}
    while sum(taken.values()) != total:  # largest remainders up, or (floors taken) largest excesses down
        up = sum(taken.values()) < total
        movable = [k for k in keys if (taken[k] < population[k] if up else taken[k] > min(floor, population[k]))]
        key = max(movable, key=lambda k: (exact[k] - taken[k]) * (1 if up else -1))
        taken[key] += 1 if up else -1
    return taken


def _neyman(
    population: Mapping[Key, int], keys: list[Key], total: int, taken: dict[Key, int], spreads: Mapping[Key, float]
) -> dict[Key, int]:
    """Each next label where it lowers the expected variance of the stratified PPI rectifier most (greedy, which is
    optimal for a sum of convex terms): W_h² · (S_h²/n_h + (1 − e_h)^n_h / (n_h(n_h + 1))), the second term the
    report's floor for a statement whose labels show no error (`speceval.analysis.statistics.ppi`), at e_h, the
    error share of spread S_h. Without that term this is Neyman's n_h ∝ N_h · S_h; with it, a statement where the
    judge seldom errs still gets the labels that keep the floor from dominating."""
    size = sum(population[k] for k in keys)

    def variance(key: Key, n: int) -> float:
        s = min(spreads.get(key, 0.5), 0.5)
        e = (1 - math.sqrt(max(0.0, 1 - 4 * s * s))) / 2
        return float((population[key] / size) ** 2 * (s * s / n + (1 - e) ** n / (n * (n + 1))))

    heap = [(variance(k, taken[k] + 1) - variance(k, taken[k]), k) for k in keys if 0 < taken[k] < population[k]]
    heap += [(-math.inf, k) for k in keys if taken[k] == 0 < population[k]]
    heapq.heapify(heap)
    left = total - sum(taken.values())
    while left > 0 and heap:
        _, key = heapq.heappop(heap)
        taken[key] += 1
        left -= 1
        if taken[key] < population[key]:
            heapq.heappush(heap, (variance(key, taken[key] + 1) - variance(key, taken[key]), key))
    return taken


def pick_allocated(
    by_statement: Mapping[Key, Sequence[Any] | np.ndarray], counts: Mapping[Key, int], seed: int
) -> list[Any]:
    """`counts[h]` items of each statement, a seeded uniform sample within it (statements in sorted order)."""
    rng = np.random.default_rng(seed)
    picked: list[Any] = []
    for key in sorted(by_statement):
        items = by_statement[key]
        order = rng.permutation(len(items))[: counts.get(key, 0)]
        picked += [items[i] for i in sorted(order)]
    return picked
