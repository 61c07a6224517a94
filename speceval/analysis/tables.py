"""The report's numbers, computed from verdict rows. Only `judged` verdicts enter rates, wins and ties; every other
outcome is counted in its own column, so a failed or unparsed judgement can never look like non-compliance."""

from __future__ import annotations

import itertools
from collections import Counter, defaultdict
from statistics import mean

import numpy as np
from pydantic import BaseModel

from speceval.analysis.load import ComplianceRow, RankingRow
from speceval.analysis.stats import (
    bradley_terry,
    cohen_kappa,
    fleiss_kappa,
    krippendorff_alpha_ordinal,
    wilson_interval,
)

JUDGED = "judged"


class ComplianceRate(BaseModel):
    """Compliance of one candidate under one judge (optionally for one statement)."""

    spec: str
    judge: str
    model: str
    statement_id: str | None = None
    judged: int
    compliant: int
    rate: float | None
    ci_low: float | None
    ci_high: float | None
    not_judged: dict[str, int]
    mean_output_chars: float | None = None


class WinRate(BaseModel):
    """How often `model` beat `opponent` under `judge` (ties count half), over both presentation orders."""

    judge: str
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
    """Agreement between judges on the same answers."""

    judges: str
    items: int
    kappa: float | None
    kind: str


def compliance_rates(rows: list[ComplianceRow], *, per_statement: bool = False) -> list[ComplianceRate]:
    """Rates per (spec, judge, model[, statement]) with 95% Wilson intervals."""
    groups: dict[tuple[str, ...], list[ComplianceRow]] = defaultdict(list)
    for row in rows:
        key = (row.spec, row.judge, row.model) + ((row.statement_id,) if per_statement else ())
        groups[key].append(row)
    rates = []
    for key, group in sorted(groups.items()):
        judged = [r for r in group if r.outcome == JUDGED and r.compliant is not None]
        compliant = sum(1 for r in judged if r.compliant)
        interval = wilson_interval(compliant, len(judged))
        rates.append(
            ComplianceRate(
                spec=key[0], judge=key[1], model=key[2], statement_id=key[3] if per_statement else None,
                judged=len(judged), compliant=compliant,
                rate=compliant / len(judged) if judged else None,
                ci_low=interval[0] if interval else None, ci_high=interval[1] if interval else None,
                not_judged=dict(Counter(r.outcome for r in group if r.outcome != JUDGED or r.compliant is None)),
                mean_output_chars=mean(len(r.output) for r in group) if group else None,
            )
        )
    return rates


def judge_bias(rates: list[ComplianceRate]) -> dict[tuple[str, str], float]:
    """(judge, model) → the judge's rate minus the mean over judges of that model's rate."""
    by_model: dict[str, list[float]] = defaultdict(list)
    for r in rates:
        if r.rate is not None:
            by_model[r.model].append(r.rate)
    return {
        (r.judge, r.model): r.rate - mean(by_model[r.model])
        for r in rates
        if r.rate is not None and len(by_model[r.model]) > 1
    }


def judge_agreement(rows: list[ComplianceRow]) -> list[Agreement]:
    """Cohen's kappa per pair of judges and Fleiss' kappa over all, on answers every compared judge judged."""
    verdicts: dict[str, dict[tuple[str, str, str, str, str], bool]] = defaultdict(dict)
    for row in rows:
        if row.outcome == JUDGED and row.compliant is not None:
            verdicts[row.judge][(row.spec, row.model, row.statement_id, row.input, row.output)] = row.compliant
    judges = sorted(verdicts)
    results = []
    for a, b in itertools.combinations(judges, 2):
        common = sorted(set(verdicts[a]) & set(verdicts[b]))
        kappa = cohen_kappa([verdicts[a][k] for k in common], [verdicts[b][k] for k in common])
        results.append(Agreement(judges=f"{a} vs {b}", items=len(common), kappa=kappa, kind="Cohen"))
    if len(judges) > 2:
        shared = sorted(set.intersection(*(set(verdicts[j]) for j in judges)))
        counts = np.array([[sum(verdicts[j][k] for j in judges), sum(not verdicts[j][k] for j in judges)]
                           for k in shared])
        results.append(Agreement(judges="all", items=len(shared), kappa=fleiss_kappa(counts), kind="Fleiss"))
    ratings: dict[tuple[str, str, str, str, str], list[int]] = defaultdict(list)
    for row in rows:
        if row.outcome == JUDGED and row.rating is not None:
            ratings[(row.spec, row.model, row.statement_id, row.input, row.output)].append(row.rating)
    if ratings:
        units = list(ratings.values())
        results.append(Agreement(judges="all (Likert ratings)", items=sum(len(u) >= 2 for u in units),
                                 kappa=krippendorff_alpha_ordinal(units), kind="Krippendorff alpha (ordinal)"))
    return results


def _winner(row: RankingRow) -> str | None:
    """The model that won this comparison, 'tie', or None when there is no verdict."""
    if row.outcome != JUDGED or row.rank is None:
        return None
    return {1: row.model_a, -1: row.model_b, 0: "tie"}[row.rank]


def win_rates(rows: list[RankingRow]) -> list[WinRate]:
    """Pairwise win rates per judge, both orders pooled."""
    tally: dict[tuple[str, str, str], Counter[str]] = defaultdict(Counter)
    for row in rows:
        winner = _winner(row)
        if winner is None:
            continue
        for model, opponent in ((row.model_a, row.model_b), (row.model_b, row.model_a)):
            result = "tie" if winner == "tie" else "win" if winner == model else "loss"
            tally[(row.judge, model, opponent)][result] += 1
    rates = []
    for (judge, model, opponent), counts in sorted(tally.items()):
        games = sum(counts.values())
        score = counts["win"] + counts["tie"] / 2
        interval = wilson_interval(int(round(score)), games)
        rates.append(WinRate(judge=judge, model=model, opponent=opponent, games=games, wins=counts["win"],
                             ties=counts["tie"], losses=counts["loss"], rate=score / games if games else None,
                             ci_low=interval[0] if interval else None, ci_high=interval[1] if interval else None))
    return rates


def strengths(rows: list[RankingRow]) -> dict[str, dict[str, float]]:
    """Bradley–Terry strength per judge and model (ties as half a win each)."""
    result: dict[str, dict[str, float]] = {}
    for judge in sorted({r.judge for r in rows}):
        judged = [r for r in rows if r.judge == judge and _winner(r) is not None]
        models = sorted({m for r in judged for m in (r.model_a, r.model_b)})
        if len(models) < 2:
            continue
        index = {m: i for i, m in enumerate(models)}
        wins = np.zeros((len(models), len(models)))
        for row in judged:
            a, b = index[row.model_a], index[row.model_b]
            winner = _winner(row)
            if winner == "tie":
                wins[a, b] += 0.5
                wins[b, a] += 0.5
            elif winner == row.model_a:
                wins[a, b] += 1
            else:
                wins[b, a] += 1
        result[judge] = dict(zip(models, (float(x) for x in bradley_terry(wins)), strict=True))
    return result


def position_consistency(rows: list[RankingRow]) -> dict[str, tuple[int, int]]:
    """judge → (consistent, compared): both orders of the same input gave the same winner (or both a tie)."""
    seen: dict[tuple[str, str, str, int, frozenset[str]], list[str]] = defaultdict(list)
    for row in rows:
        winner = _winner(row)
        if winner is not None:
            seen[(row.judge, row.spec, row.statement_id, row.index, frozenset((row.model_a, row.model_b)))].append(
                winner
            )
    result: dict[str, tuple[int, int]] = {}
    for (judge, *_), winners in seen.items():
        if len(winners) == 2:
            consistent, compared = result.get(judge, (0, 0))
            result[judge] = (consistent + (winners[0] == winners[1]), compared + 1)
    return result
