"""The report's numbers, computed from verdict rows. Only `judged` verdicts enter rates, wins and ties; every other
outcome is counted in its own column, so a failed or unparsed judgement can never look like non-compliance."""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Callable, Iterator
from statistics import mean
from typing import Any

import numpy as np
from pydantic import BaseModel, Field

from speceval.analysis.clustered import (
    BOOTSTRAP_DRAWS,
    BOOTSTRAP_SEED,
    bootstrap_cluster_counts,
    rate_interval_codes,
)
from speceval.analysis.columns import (
    NO_VERDICT,
    VerdictColumns,
    as_columns,
    dense,
    first_seen,
    first_seen_bounded,
    grouped,
    groups,
)
from speceval.analysis.load import DEFAULT_VARIATION, ComplianceRow, RankingRow
from speceval.analysis.ranking_columns import RankingColumns, as_ranking_columns
from speceval.analysis.stats import (
    bradley_terry,
    cohen_kappa,
    fleiss_kappa,
    krippendorff_alpha_ordinal,
)
from speceval.analysis.variations import summarize

JUDGED = "judged"


class ComplianceRate(BaseModel):
    """Compliance of one candidate and variation under one judge (optionally for one statement)."""

    spec: str
    judge: str
    model: str
    variation: str = DEFAULT_VARIATION
    statement_id: str | None = None
    judged: int
    compliant: float
    rate: float | None
    ci_low: float | None
    ci_high: float | None
    ci_method: str | None = None
    not_judged: dict[str, int]
    mean_output_chars: float | None = None


class WinRate(BaseModel):
    """How often `model` beat `opponent` under `judge` in one variation (ties count half), both orders and all
    runs pooled; the interval is clustered by input (both orders and every run of an input are one cluster).
    Never pooled across specs: the same judges under two specs are two tables."""

    spec: str
    judge: str
    variation: str = DEFAULT_VARIATION
    model: str
    opponent: str
    games: int
    wins: int
    ties: int
    losses: int
    rate: float | None
    ci_low: float | None
    ci_high: float | None


class Agreement(BaseModel):
    """Agreement between judges on the same answers (of one spec)."""

    spec: str
    judges: str
    items: int
    kappa: float | None
    kind: str
    ci_low: float | None = None
    ci_high: float | None = None
    ci_method: str | None = Field(default=None, description="cluster bootstrap over inputs (Cohen, Fleiss); none for "
                                                            "Krippendorff's alpha")


def compliance_rates(rows: list[ComplianceRow] | VerdictColumns, *, per_statement: bool = False
                     ) -> list[ComplianceRate]:
    """Rates per (spec, judge, model, variation[, statement]) with 95% intervals clustered by input."""
    c = as_columns(rows)
    fields = ("spec", "judge", "model", "variation") + (("statement_id",) if per_statement else ())
    rates = []
    for key, indices in grouped(c, None, *fields):
        summary = summarize(c, indices)
        rates.append(
            ComplianceRate(
                spec=key[0], judge=key[1], model=key[2], variation=key[3],
                statement_id=key[4] if per_statement else None, judged=summary.judged, compliant=summary.compliant,
                rate=summary.rate, ci_low=summary.ci_low, ci_high=summary.ci_high, ci_method=summary.ci_method,
                not_judged=summary.not_judged, mean_output_chars=float(c.output_chars[indices].mean()),
            )
        )
    return rates


def judge_bias(rates: list[ComplianceRate]) -> dict[tuple[str, str, str, str], float]:
    """(spec, judge, model, variation) → the judge's rate minus the mean over judges of that model's rate there.

    The panel is not a judge of its own here: it is made of the judges' verdicts."""
    by_cell: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    judged = [r for r in rates if r.rate is not None and r.judge != "panel"]
    for r in judged:
        by_cell[(r.spec, r.model, r.variation)].append(r.rate)  # type: ignore[arg-type]
    return {
        (r.spec, r.judge, r.model, r.variation): r.rate - mean(by_cell[(r.spec, r.model, r.variation)])  # type: ignore[operator]
        for r in judged
        if len(by_cell[(r.spec, r.model, r.variation)]) > 1
    }


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
    if len(by_judge) < 2 and not rated.any():
        return []  # one judge and no ratings: nothing to agree on (and no answer numbering to pay for)
    answer = dense(c.fact("model", members), c.fact("variation", members), c.runs(members),
                   c.fact("statement_id", members), c.first_seen("input")[members], c.first_seen("output")[members])
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
        interval = _kappa_interval(first_seen(c.cluster()[verdicts[a][1][in_a]]), cells.astype(float),
                                   _cohen_from_counts)
        results.append(Agreement(spec=spec, judges=f"{a} vs {b}", items=len(common), kappa=kappa, kind="Cohen",
                                 **interval))
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
        interval = _kappa_interval(first_seen(c.cluster()[rows[np.isin(of, shared)]]), features,
                                   lambda t: _fleiss_from_sums(t, raters))
        results.append(Agreement(spec=spec, judges="all", items=len(shared), kappa=fleiss_kappa(counts),
                                 kind="Fleiss", **interval))
    if rated.any():
        units = [c.rating[members[rated][g]].astype(int).tolist() for g in groups(answer[rated])]
        results.append(Agreement(spec=spec, judges="all (Likert ratings)", items=sum(len(u) >= 2 for u in units),
                                 kappa=krippendorff_alpha_ordinal(units), kind="Krippendorff alpha (ordinal)"))
    return results


def _cohen_from_counts(totals: np.ndarray) -> float | None:
    both, only_a, only_b, neither = totals
    n = totals.sum()
    if n == 0:
        return None
    expected = ((both + only_a) * (both + only_b) + (neither + only_b) * (neither + only_a)) / n ** 2
    return None if expected >= 1.0 else float(((both + neither) / n - expected) / (1 - expected))


def _fleiss_from_sums(totals: np.ndarray, raters: int) -> float | None:
    items, agreeing, compliant = totals
    if items == 0:
        return None
    p = compliant / (items * raters)
    expected = p ** 2 + (1 - p) ** 2
    return None if expected >= 1.0 else float((agreeing / items - expected) / (1 - expected))


def _kappa_interval(ids: np.ndarray, features: np.ndarray,
                    statistic: Callable[[np.ndarray], float | None]) -> dict[str, Any]:
    """95% percentile interval of a kappa over resamples of whole inputs (`BOOTSTRAP_DRAWS`, seeded); `ids` are
    the items' input clusters, numbered 0..G-1 in order of first appearance.

    A kappa is a function of a few sums over items, so each resample only reweights the per-input sums: fast at
    any number of answers."""
    if len(features) == 0:
        return {}
    clusters = int(ids.max()) + 1
    if clusters < 2:
        return {}
    per_cluster = np.zeros((clusters, features.shape[1]))
    np.add.at(per_cluster, ids, features)
    rng = np.random.default_rng(BOOTSTRAP_SEED)
    values = []
    for _ in range(BOOTSTRAP_DRAWS):
        weights = np.bincount(rng.integers(0, clusters, clusters), minlength=clusters)
        value = statistic(weights @ per_cluster)
        if value is not None:
            values.append(value)
    if len(values) < BOOTSTRAP_DRAWS // 2:
        return {}
    low, high = np.percentile(values, [2.5, 97.5])
    return {"ci_low": float(low), "ci_high": float(high), "ci_method": f"cluster bootstrap over inputs "
                                                                       f"({BOOTSTRAP_DRAWS} draws, seed "
                                                                       f"{BOOTSTRAP_SEED}, percentile)"}


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
        rates.append(WinRate(spec=spec, judge=judge, variation=variation, model=name, opponent=rival,
                             games=len(y), wins=int((y == 1.0).sum()), ties=int((y == 0.5).sum()),
                             losses=int((y == 0.0).sum()), rate=float(y.sum()) / len(y),
                             ci_low=interval[0] if interval else None, ci_high=interval[1] if interval else None))
    return rates


_SCORE = {"win": 1.0, "tie": 0.5, "loss": 0.0}


class Strength(BaseModel):
    """A Bradley–Terry strength (strengths of one spec, judge and variation sum to 1) with a bootstrap interval."""

    spec: str
    judge: str
    variation: str
    model: str
    strength: float
    ci_low: float | None
    ci_high: float | None
    note: str | None = Field(default=None, description="why there is no interval, when there is none")


SEPARATED = ("no finite estimate: some models won every comparison against the others (Ford's condition fails), "
             "so the strengths sit at 0 or 1 and a bootstrap would only repeat them; intervals omitted")


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

        def tally(counts: np.ndarray, size: int = size, forward: np.ndarray = forward, backward: np.ndarray = backward,
                  doubled: np.ndarray = doubled, clusters: np.ndarray = clusters) -> np.ndarray:
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
        bounds = None if separated else bootstrap_cluster_counts(
            int(clusters.max()) + 1, lambda counts: bradley_terry(tally(counts)), draws=draws)
        for i, model in enumerate(models):
            result.append(Strength(spec=spec, judge=judge, variation=variation, model=model, strength=float(point[i]),
                                   ci_low=float(bounds[0][i]) if bounds else None,
                                   ci_high=float(bounds[1][i]) if bounds else None,
                                   note=SEPARATED if separated else None))
    return result


class Consistency(BaseModel):
    """Position consistency of one judge in one run of one variation: both orders of an input gave the same
    winner (or both a tie). `compared` counts inputs judged in both orders."""

    spec: str
    judge: str
    variation: str
    run: int
    consistent: int
    compared: int
    rate: float | None


def position_consistency(rows: list[RankingRow] | RankingColumns) -> list[Consistency]:
    """Per (spec, judge, variation, run); the two orders of one comparison are matched within their own run."""
    c = as_ranking_columns(rows)
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
    consistent, compared = np.zeros(len(places), dtype=np.int64), np.zeros(len(places), dtype=np.int64)
    for files in together.values():
        at = np.sort(np.concatenate([by_file[f] for f in files]), kind="stable")
        index = c.index[judged[at]]
        order = np.argsort(index, kind="stable")
        index = index[order]
        starts = np.flatnonzero(np.r_[True, index[1:] != index[:-1]])
        twice = starts[np.diff(np.r_[starts, len(index)]) == 2]
        ordered = winner[at][order]
        consistent[place[files[0]]] += int((ordered[twice] == ordered[twice + 1]).sum())
        compared[place[files[0]]] += len(twice)
    found = sorted((str(s), str(j), str(v), int(str(r)), int(consistent[k]), int(compared[k]))
                   for k, (s, j, v, r) in enumerate(places) if compared[k])
    return [Consistency(spec=s, judge=j, variation=v, run=r, consistent=n, compared=m, rate=n / m)
            for s, j, v, r, n, m in found]
