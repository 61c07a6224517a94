"""`speceval label-sheet` over a million verdicts: the same sample as `human_labels.label_sheet`, drawn without
holding the verdicts. The verdicts stream by twice (`speceval.analysis.reading.streamed`): first each distinct
answer's item (8 bytes of it) is noted per statement, then, once the sample is drawn, the texts of the answers
drawn are kept as they pass.

How many labels each statement gets (`--allocation`, issue 44):
* `equal` (the default, as sheets were always drawn): statements take turns, so each gets about n / H.
* `proportional`: n_h ∝ N_h, the statement's answers.
* `neyman`: n_h ∝ N_h · S_h (Neyman), where S_h is the spread of the judge's errors there (the PPI rectifier's SD),
  allocated greedily against the stratified PPI rectifier's variance (`_neyman`); S_h is estimated
  from a pilot of labels (the share the judge got wrong among a filled sheet's labels of that statement) or, without
  one, from the panel's disagreement (the share of answers on which the judges differ, d; a judge's own error share
  is then taken as e = (1 − √(1 − 2d))/2, two judges independently wrong at e disagreeing at 2e(1 − e)). Either
  share is shrunk, (k + ½)/(m + 1), so a statement that showed no error still gets some labels, and
  S_h = √(e(1 − e)). Neyman's
  allocation minimises the stratified estimator's variance for a given n (W. G. Cochran, Sampling Techniques, 1977,
  §5.5); PPI weighs each statement's labels by N_h/n_h whatever the allocation, so its estimate stays unbiased.

Every statement with answers gets at least one label (two when n allows), none more than its answers; the rest is
given by largest remainders. Within a statement the answers drawn are a seeded uniform sample.
"""

from __future__ import annotations

import heapq
import math
from array import array
from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from speceval.analysis.reading.rows import ComplianceRow
from speceval.analysis.reading.streamed import Survey, streamed_verdicts, survey
from speceval.analysis.tables.human_labels import item_id, labellable, pick_items, sheet_row
from speceval.analysis.tables.label_design import SheetFilter
from speceval.defaults import Mode
from speceval.errors import ConfigError


def streamed_label_sheet(
    paths: Sequence[Path],
    n: int,
    seed: int,
    statement_texts: dict[tuple[str, str], str] | None = None,
    aim: SheetFilter | None = None,
    allocation: str = "equal",
    spreads: dict[tuple[str, str], float] | None = None,
) -> tuple[list[dict[str, str]], dict[tuple[str, str], int]]:
    """`n` distinct answers under `paths`, drawn as `label_sheet` draws them from the same verdicts (of the verdicts
    `aim` selects: a judge entry, scope, candidate, variation), and the distinct answers per (spec, statement) they
    were drawn from (the sheet's design)."""
    aim = aim or SheetFilter()
    if n < 1:
        raise ConfigError("--n must be at least 1")
    plan = survey(paths)
    if not plan.compliance_files:
        folders = ", ".join(str(path) for path in paths)
        raise ConfigError(
            f"no compliance results found under {folders}: nothing to label (give the folders a "
            "compliance judge wrote, e.g. an experiment's output_dir)"
        )
    items: dict[tuple[str, str], array[int]] = defaultdict(lambda: array("Q"))
    seen: dict[str, set[str]] = defaultdict(set)
    for row in _answers(paths, plan):
        for name, value in (("judge", row.judge), ("candidate", row.model), ("variation", row.variation)):
            seen[name].add(value)
        if aim.matches(row):
            items[(row.spec, row.statement_id)].append(int(item_id(row), 16))
    if not items and aim.given():
        asked = ", ".join(f"--{name} {value}" for name, value in aim.given().items())
        known = "; ".join(f"{name}s: {', '.join(sorted(values))}" for name, values in sorted(seen.items()))
        raise ConfigError(
            f"no answer to label matches {asked} (under these folders: {known}; scopes: turn, conversation; "
            "only a binary judge's answers are offered: a label is yes or no, which a Likert rating or a "
            "category is not checked against)"
        )
    # An item is 16 hex digits: as numbers they sort as the strings do, and hold 8 bytes each instead of ~70.
    by_statement = {key: np.unique(np.frombuffer(found, dtype=np.uint64)) for key, found in items.items()}
    del items
    population = {key: len(found) for key, found in by_statement.items()}
    if allocation == "equal":
        chosen = pick_items(by_statement, n, seed)
    else:  # proportional, or neyman with the error spreads given (`statement_spreads`)
        counts = allocate(population, n, spreads if allocation == "neyman" else None)
        chosen = pick_allocated(by_statement, counts, seed)
    picked = [f"{int(item):016x}" for item in chosen]
    wanted = set(picked)
    kept: dict[str, ComplianceRow] = {}
    for row in _answers(paths, plan):
        item = item_id(row)
        if item in wanted and item not in kept and aim.matches(row):
            kept[item] = row
            if len(kept) == len(wanted):
                break
    texts = statement_texts or {}
    return [sheet_row(item, kept[item], texts) for item in picked], population


def _answers(paths: Sequence[Path], plan: Survey) -> Iterator[ComplianceRow]:
    return (
        row
        for row in streamed_verdicts(paths, plan, rankings=False)
        if isinstance(row, ComplianceRow) and labellable(row)
    )


def statement_spreads(
    paths: Sequence[Path], aim: SheetFilter | None = None, pilot: dict[str, bool] | None = None
) -> dict[tuple[str, str], float]:
    """Per (spec, statement): the spread of the judge's errors there, for Neyman's allocation
    (`allocate`): from the `pilot` labels (item → human verdict) where given, the
    share of the aimed verdicts that disagree with them; else the share of answers the judges disagree on."""
    aim = aim or SheetFilter()
    plan = survey(paths)
    wrong: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    panel: dict[tuple[str, str], dict[str, set[bool]]] = defaultdict(lambda: defaultdict(set))
    judges: set[str] = set()
    aimed_modes: set[str] = set()
    for row in _answers(paths, plan):
        if aim.matches(row):
            aimed_modes.add(row.mode)
        if row.outcome != "judged" or row.compliant is None:
            continue
        key, item = (row.spec, row.statement_id), item_id(row)
        judges.add(row.judge)
        if pilot is not None:
            if item in pilot and aim.matches(row):
                wrong[key][0] += row.compliant != pilot[item]
                wrong[key][1] += 1
        else:
            panel[key][item].add(bool(row.compliant))
    if aimed_modes == {Mode.LIKERT}:
        raise ConfigError(
            "--allocation neyman spreads labels by a yes/no judge's errors, for its prediction-powered rate; the "
            "verdicts aimed at are a Likert judge's, which has none: use --allocation equal or proportional"
        )
    if pilot is None:
        if len(judges) < 2:
            raise ConfigError("--allocation neyman needs a pilot of labels (--pilot SHEET) or two or more judges")
        for key, verdicts in panel.items():
            wrong[key] = [sum(len(v) > 1 for v in verdicts.values()), len(verdicts)]
    elif not wrong:
        raise ConfigError("--pilot: none of its labels names an answer of the verdicts aimed at here")
    return {key: shrunk_spread(k, m, panel=pilot is None) for key, (k, m) in wrong.items()}


# -- allocation ------------------------------------------------------------------------------------------

ALLOCATIONS = ("equal", "proportional", "neyman")

Key = tuple[str, str]


def shrunk_spread(wrong: int, seen: int, panel: bool = False) -> float:
    """√(e(1 − e)) at e = (wrong + ½)/(seen + 1): never 0, so no statement is left without labels. `panel`: the
    count is of answers two judges disagree on, which two judges each wrong at rate e independently do at
    d = 2e(1 − e); the judge's own e = (1 − √(1 − 2d))/2 (d at ½ or more: e = ½). Taking d for e would put √2 times
    the spread on statements where the judges seldom err, and too many labels there."""
    e = (wrong + 0.5) / (seen + 1)
    if panel:
        e = (1 - math.sqrt(max(0.0, 1 - 2 * e))) / 2
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
    """Each next label where it lowers W_h² S_h²/n_h most (greedy, optimal in integers for a sum of convex terms):
    Neyman's n_h ∝ N_h · S_h, rounded, with the floor `allocate` gave and at most N_h each. The report's stratified
    PPI reads the spreads back from the design as its empirical-Bayes prior's covariate
    (`speceval.analysis.statistics.ppi._guided_rates`), so a statement where the judge seldom errs is taken at
    about its own small rate with its 3-5 labels. (Issue 47's allocation added what the report then took for such a
    statement, nearly an average statement's variance, and gave them more labels: 0.70x proportional's labels
    against 0.50-0.55x now; benchmarks/label_allocation.py.)"""
    size = sum(population[k] for k in keys)

    def variance(key: Key, n: int) -> float:
        return float((population[key] / size * min(spreads.get(key, 0.5), 0.5)) ** 2 / n)

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
