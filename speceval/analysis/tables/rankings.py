"""Pairwise rankings: win rates with ties as half a win, Bradley–Terry strengths with a bootstrap over inputs, and
how often a judge's verdict survives swapping the two answers (position consistency). Only `judged` comparisons
enter wins and ties; every other outcome is counted in its own column."""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable, Iterator

import numpy as np
from pydantic import BaseModel, Field

from speceval.analysis.reading.ranking_columns import RankingColumns, as_ranking_columns
from speceval.analysis.reading.rows import DEFAULT_VARIATION, RankingRow
from speceval.analysis.statistics.clustered import (
    BOOTSTRAP_DRAWS,
    BOOTSTRAP_SEED,
    rate_interval_codes,
    t975,
)
from speceval.analysis.statistics.codes import first_seen_bounded
from speceval.analysis.statistics.columns import interval_columns
from speceval.analysis.statistics.registry import method
from speceval.analysis.statistics.resample import count_blocks
from speceval.analysis.statistics.stats import bradley_terry, bradley_terry_of_draws

logger = logging.getLogger(__name__)


class WinRate(BaseModel):
    """How often `candidate` beat `opponent` under `judge` in one variation (ties count half), both orders and all
    runs pooled; the interval is clustered by input (both orders and every run of an input are one cluster).
    Never pooled across specs: the same judges under two specs are two tables."""

    spec: str
    judge: str
    variation: str = DEFAULT_VARIATION
    candidate: str
    opponent: str
    games: int
    wins: int
    ties: int
    losses: int
    rate: float | None
    ci_low: float | None
    ci_high: float | None
    ci_method: str | None = None


def _scores(c: RankingColumns, winner: np.ndarray, model: np.ndarray | int) -> np.ndarray:
    """Per comparison: 1 when `model` (a name code, or one per comparison) won it, 1/2 for a tie, 0 when it lost."""
    if isinstance(model, int):  # one model: a table of the scores of every name, looked up (no temporaries)
        table = np.zeros(len(c.names.names))
        table[model] = 1.0
        table[c.tie] = 0.5  # after the model's: a model named "tie" ties, as it did when names were compared
        found: np.ndarray = table[winner]
        return found
    found = np.where(winner == c.tie, 0.5, np.where(winner == model, 1.0, 0.0))
    return found


def _local_clusters(c: RankingColumns, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The clusters (spec, statement, input) of the comparisons at `rows` numbered 0..G-1 in order of first
    appearance, and each one's stratum (spec, statement) numbered likewise: what `rate_interval` numbered from
    rows (a stratum first appears with a cluster that is new, so its order among clusters is its order here)."""
    cluster = c.cluster(rows)
    clusters = first_seen_bounded(cluster, int(cluster.max()) + 1 if len(cluster) else 0)
    del cluster
    stratum = c.stratum(rows)
    strata = np.zeros(int(clusters.max()) + 1 if len(clusters) else 0, dtype=np.int32)
    strata[clusters] = first_seen_bounded(stratum, int(stratum.max()) + 1 if len(stratum) else 0)
    return clusters, strata


def _games(c: RankingColumns, judged: np.ndarray) -> Iterator[tuple[tuple[str, ...], np.ndarray]]:
    """Per (spec, judge, variation, model, opponent), sorted: the comparisons that are games of its model, in
    order (a comparison is a game of each of its models; a model against itself plays it twice). One table's at a
    time: a million comparisons' games are 4 MB a table."""
    place, places = c.file_keys(("spec", "judge", "variation"))
    files: dict[tuple[str, ...], list[int]] = defaultdict(list)
    for f, facts in enumerate(c.facts):
        where = tuple(str(v) for v in places[place[f]])
        files[(*where, facts.model_a, facts.model_b)].append(f)
        files[(*where, facts.model_b, facts.model_a)].append(f)
    by_file = c.by_file(judged)
    for key in sorted(files):
        parts = [by_file[f] for f in files[key] if f in by_file]
        if parts:
            yield key, judged[np.sort(np.concatenate(parts), kind="stable")]


def _game_scores(c: RankingColumns, rows: np.ndarray, model: int) -> np.ndarray:
    """Per comparison at `rows`: 1 when `model` (a name code) won it, 1/2 for a tie, 0 when it lost; from a
    table of each file's three ranks (B won, tie, A won), without a winner per comparison."""
    winners = np.column_stack([c.model_b, np.full(len(c.model_a), c.tie, dtype=np.int32), c.model_a])
    table = _scores(c, winners, model).reshape(-1)
    found: np.ndarray = table[c.file[rows].astype(np.int64) * 3 + (c.rank[rows] + 1)]
    return found


def win_rates(rows: list[RankingRow] | RankingColumns) -> list[WinRate]:
    """Pairwise win rates per judge and variation, both orders and all runs pooled, clustered by input."""
    c = as_ranking_columns(rows)
    judged = c.judged()
    rates = []
    for (spec, judge, variation, name, rival), games in _games(c, judged):
        y = _game_scores(c, games, c.names.code(name))
        clusters, strata = _local_clusters(c, games)
        del games
        interval = rate_interval_codes(y, clusters, strata, stratified=True)
        rates.append(
            WinRate(
                spec=spec,
                judge=judge,
                variation=variation,
                candidate=name,
                opponent=rival,
                games=len(y),
                wins=int((y == 1.0).sum()),
                ties=int((y == 0.5).sum()),
                losses=int((y == 0.0).sum()),
                rate=float(y.sum()) / len(y),
                **interval_columns(interval),
            )
        )
    return rates


_SCORE = {"win": 1.0, "tie": 0.5, "loss": 0.0}


class Strength(BaseModel):
    """A Bradley–Terry strength (strengths of one spec, judge and variation sum to 1) with a bootstrap interval."""

    spec: str
    judge: str
    variation: str
    candidate: str
    strength: float
    ci_low: float | None
    ci_high: float | None
    note: str | None = Field(default=None, description="why there is no interval, when there is none")
    ci_method: str | None = None


SEPARATED = (
    "no finite estimate: some models won every comparison against the others (Ford's condition fails), "
    "so the strengths sit at 0 or 1 and a bootstrap would only repeat them; intervals omitted"
)


def beats_graph_connected(wins: np.ndarray) -> bool:
    """Ford's condition for a finite Bradley–Terry fit: in the graph with an edge i → j whenever i took some
    score from j (a tie gives both directions), every model reaches every other."""
    size = wins.shape[0]
    for start in range(size):
        reached, frontier = {start}, [start]
        while frontier:
            i = frontier.pop()
            for j in range(size):
                if j not in reached and wins[i, j] > 0:
                    reached.add(j)
                    frontier.append(j)
        if len(reached) < size:
            return False
    return True


def strength_bounds(point: np.ndarray, resampled: np.ndarray, inputs: int) -> tuple[np.ndarray, np.ndarray]:
    """95% bounds of Bradley–Terry strengths from their bootstrap over `inputs` inputs: the percentile interval's
    hull with point ± t(G-1) · the bootstrap SD of the log-strength, mapped back (a ratio scale: multiplicative
    error). With 15-30 inputs the percentile interval alone covered 0.91-0.93: the resampled strengths of few
    inputs are too narrow by about the factor the t quantile restores."""
    low, high = np.percentile(resampled, 2.5, axis=0), np.percentile(resampled, 97.5, axis=0)
    if len(resampled) < 2:
        return np.minimum(low, point), np.maximum(high, point)
    logs = np.log(np.maximum(resampled, _FLOOR))
    spread = t975(inputs - 1) * logs.std(axis=0, ddof=1)
    centre = np.log(np.maximum(point, _FLOOR))
    low = np.minimum(low, np.exp(centre - spread))
    high = np.maximum(high, np.minimum(1.0, np.exp(centre + spread)))
    return np.minimum(low, point), np.maximum(high, point)


def resampled_strengths(
    clusters: int, tally: Callable[[np.ndarray], np.ndarray], draws: int = BOOTSTRAP_DRAWS
) -> np.ndarray | None:
    """Bradley–Terry strengths of `draws` resamples of the clusters (draws x models): what
    `bootstrap_cluster_values(clusters, lambda counts: bradley_terry(tally(counts)), draws)` gives (the same seeded
    draws, the same floats), each block of draws iterated at once (`bradley_terry_of_draws`) rather than a Python
    iteration a draw. `tally` makes a resample's wins matrix from its per-cluster counts. None under two clusters."""
    if clusters < 2:
        return None
    found: list[np.ndarray] = []
    pending: list[np.ndarray] = []
    for block in count_blocks(clusters, draws, BOOTSTRAP_SEED):
        for counts in block:
            pending.append(tally(counts))
            if len(pending) * pending[0].size >= _ITERATED_CELLS:
                found.append(bradley_terry_of_draws(np.stack(pending)))
                pending = []
    if pending:
        found.append(bradley_terry_of_draws(np.stack(pending)))
    return np.concatenate(found)


_ITERATED_CELLS = 1 << 17
"""Wins-matrix cells iterated at once (1 MB an array): all 1,000 draws of up to 11 models, fewer of more."""

_FLOOR = 1e-6
"""Strengths below this are taken as it on the log scale (a resample where a model never won has strength 0)."""

_SLICE = 1 << 17
"""Comparisons weighed at a time in a Bradley–Terry bootstrap draw."""


def strengths(rows: list[RankingRow] | RankingColumns, draws: int = BOOTSTRAP_DRAWS) -> list[Strength]:
    """Bradley–Terry strength per judge, variation and model (ties as half a win each); the intervals resample
    inputs (with every run and order of a drawn input), so repeated runs do not narrow them."""
    c = as_ranking_columns(rows)
    result: list[Strength] = []
    judged = c.judged()
    place, places = c.file_keys(("spec", "judge", "variation"))
    files: dict[tuple[str, ...], list[int]] = defaultdict(list)
    for f in range(len(c.facts)):
        files[tuple(str(v) for v in places[place[f]])].append(f)
    by_file = c.by_file(judged)
    for (spec, judge, variation), group_files in sorted(files.items()):
        with_judged = [f for f in group_files if f in by_file]
        models = sorted({c.facts[f].model_a for f in with_judged} | {c.facts[f].model_b for f in with_judged})
        if len(models) < 2:
            continue
        chosen = judged[np.sort(np.concatenate([by_file[f] for f in with_judged]), kind="stable")]
        files_here = c.file[chosen]
        index = np.zeros(len(c.names.names), dtype=np.int32)
        index[[c.names.code(m) for m in models]] = np.arange(len(models))
        size = len(models)
        # The cells of the wins matrix each comparison adds to, its score doubled (0, 1 or 2: a byte) and its
        # cluster, once; each bootstrap draw weighs them a slice at a time (a million comparisons: a few MB a
        # draw, not 24). Sums of halves times whole weights are exact: the matrix is the same in any order.
        forward = index[c.model_a[files_here]] * size + index[c.model_b[files_here]]
        backward = index[c.model_b[files_here]] * size + index[c.model_a[files_here]]
        doubled = (_scores(c, c.winner(chosen), c.model_a[files_here]) * 2).astype(np.int8)
        cluster = c.cluster(chosen)
        clusters = first_seen_bounded(cluster, int(cluster.max()) + 1)
        del files_here, cluster, chosen

        def tally(
            counts: np.ndarray,
            size: int = size,
            forward: np.ndarray = forward,
            backward: np.ndarray = backward,
            doubled: np.ndarray = doubled,
            clusters: np.ndarray = clusters,
        ) -> np.ndarray:
            # Each comparison counted as often as its input was drawn; ties: half a win each way.
            wins = np.zeros(size * size)
            for start in range(0, len(clusters), _SLICE):
                part = slice(start, start + _SLICE)
                weight = counts[clusters[part]]
                score = doubled[part] * 0.5
                wins += np.bincount(forward[part], weights=score * weight, minlength=size * size)
                wins += np.bincount(backward[part], weights=(1.0 - score) * weight, minlength=size * size)
            return wins.reshape(size, size)

        everything = tally(np.ones(int(clusters.max()) + 1, dtype=np.int64))
        point = bradley_terry(everything)
        separated = not beats_graph_connected(everything)
        resampled = None if separated else resampled_strengths(int(clusters.max()) + 1, tally, draws)
        bounds = None if resampled is None else strength_bounds(point, resampled, int(clusters.max()) + 1)
        for i, model in enumerate(models):
            result.append(
                Strength(
                    spec=spec,
                    judge=judge,
                    variation=variation,
                    candidate=model,
                    strength=float(point[i]),
                    ci_low=float(bounds[0][i]) if bounds else None,
                    ci_high=float(bounds[1][i]) if bounds else None,
                    note=SEPARATED if separated else None,
                    ci_method=method("bradley_terry", draws=draws, seed=BOOTSTRAP_SEED) if bounds else None,
                )
            )
    return result


class Consistency(BaseModel):
    """Position consistency of one judge in one variation: both orders of an input gave the same winner (or both a
    tie). One row per run, and one pooled row (`run` empty) over every run of the variation whose interval is
    clustered by input: the runs of one input are not independent draws. `compared` counts comparisons judged in
    both orders (an input of a run, per pair of candidates)."""

    spec: str
    judge: str
    variation: str
    run: int | None = Field(description="the run (an experiment's run<k>, an Inspect log's epoch); empty: pooled")
    runs: int = Field(default=1, description="the runs the row counts (1 for a run's row)")
    inputs: int = Field(default=0, description="distinct inputs compared: the clusters of the interval")
    consistent: int
    compared: int
    rate: float | None
    ci_low: float | None = None
    ci_high: float | None = None
    ci_method: str | None = None


def position_consistency(rows: list[RankingRow] | RankingColumns) -> list[Consistency]:
    """Per (spec, judge, variation): a row per run, then the pooled row of its runs (the two orders of one
    comparison are matched within their own run). The pooled rate is consistent / compared over the runs, a
    weighted mean of the runs' rates, so it never lies outside them; its interval is clustered by input and
    stratified by statement (Wilson when every input is compared once: one run of one pair)."""
    c = as_ranking_columns(rows)
    cells: dict[tuple[str, str, str], dict[int, tuple[np.ndarray, np.ndarray]]] = defaultdict(dict)
    for (spec, judge, variation, run), compared in _compared(c).items():
        cells[(spec, judge, variation)][run] = compared
    found = []
    for (spec, judge, variation), runs in sorted(cells.items()):
        for run, (at, y) in sorted(runs.items()):
            found.append(_consistency(c, spec, judge, variation, run, 1, at, y))
        if len(runs) > 1:
            at, y = (np.concatenate(parts) for parts in zip(*runs.values(), strict=True))
            found.append(_consistency(c, spec, judge, variation, None, len(runs), at, y))
    return found


def judge_position_consistency(rows: list[RankingRow] | RankingColumns) -> list[Consistency]:
    """Per (spec, judge): every variation and run of the judge pooled (the judge card's row, `variation` "all"),
    clustered by input as the pooled rows are (Wilson when every input is compared once)."""
    c = as_ranking_columns(rows)
    judges: dict[tuple[str, str], list[tuple[np.ndarray, np.ndarray]]] = defaultdict(list)
    runs: dict[tuple[str, str], set[tuple[str, int]]] = defaultdict(set)
    for (spec, judge, variation, run), compared in sorted(_compared(c, warn=False).items()):
        judges[(spec, judge)].append(compared)
        runs[(spec, judge)].add((variation, run))
    found = []
    for (spec, judge), parts in sorted(judges.items()):
        at, y = (np.concatenate(part) for part in zip(*parts, strict=True))
        only = next(iter(runs[(spec, judge)]))[1] if len(runs[(spec, judge)]) == 1 else None
        found.append(_consistency(c, spec, judge, "all", only, len(runs[(spec, judge)]), at, y))
    return found


def _compared(c: RankingColumns, warn: bool = True) -> dict[tuple[str, str, str, int], tuple[np.ndarray, np.ndarray]]:
    """Per (spec, judge, variation, run) with a comparison judged in both orders: a row of each such comparison
    (its cluster is its input) and whether both orders gave the same winner (or both a tie); `warn`: say what is
    left out (once per report: the judge card's pass over the same comparisons does not)."""
    judged = c.judged()
    winner = c.winner(judged)
    # One comparison: its statement, run and task index, and its pair of models in either order; compared when it
    # was judged exactly twice (the two orders), consistent when both gave the same winner (or both a tie). Its
    # judgements are among the files of the same statement, run and pair: matched there, a few files at a time.
    comparison, _ = c.file_keys(("spec", "judge", "variation", "run", "statement_id"), unordered_pair=True)
    place, places = c.file_keys(("spec", "judge", "variation", "run"))
    by_file = c.by_file(judged)
    together: dict[int, list[int]] = defaultdict(list)
    for f in by_file:
        together[int(comparison[f])].append(f)
    seen: dict[int, list[tuple[np.ndarray, np.ndarray]]] = defaultdict(list)
    crowded: dict[int, int] = defaultdict(int)
    for files in together.values():
        at = np.sort(np.concatenate([by_file[f] for f in files]), kind="stable")
        index = c.index[judged[at]]
        order = np.argsort(index, kind="stable")
        index = index[order]
        starts = np.flatnonzero(np.r_[True, index[1:] != index[:-1]])
        counts = np.diff(np.r_[starts, len(index)])
        twice = starts[counts == 2]
        crowded[int(place[files[0]])] += int((counts > 2).sum())
        ordered = winner[at][order]
        seen[int(place[files[0]])].append((judged[at][order][twice], ordered[twice] == ordered[twice + 1]))
    for k, n in crowded.items():
        if n and warn:  # never silently: say what is left out, and why it happens
            logger.warning(
                "position consistency of %s: %d comparison(s) judged more than twice in one run (results files of "
                "several runs with no run recorded, e.g. Inspect epochs ranked before `metadata.run` was written: "
                "run the ranking command again to rewrite them); not counted",
                ", ".join(str(v) for v in places[k]),
                n,
            )
    found = {}
    for k, parts in seen.items():
        s, j, v, r = places[k]
        at = np.concatenate([p[0] for p in parts])
        if len(at):
            found[(str(s), str(j), str(v), int(str(r)))] = (at, np.concatenate([p[1] for p in parts]))
    return found


def _consistency(
    c: RankingColumns, spec: str, judge: str, variation: str, run: int | None, runs: int, at: np.ndarray, y: np.ndarray
) -> Consistency:
    """One row: the comparisons at `at` (a row of each) and whether each was consistent."""
    clusters, strata = _local_clusters(c, at)
    interval = rate_interval_codes(y.astype(float), clusters, strata, stratified=True)
    consistent, compared = int(y.sum()), len(y)
    return Consistency(
        spec=spec,
        judge=judge,
        variation=variation,
        run=run,
        runs=runs,
        inputs=int(clusters.max()) + 1,
        consistent=consistent,
        compared=compared,
        rate=consistent / compared,
        **interval_columns(interval),
    )
