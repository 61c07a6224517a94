"""The coverage matrix's scenarios for the judge card (issue 44) whose composition is the card's own: the wording flip
excess (a paired difference of a per-answer flip share and a 0/1 retest flip on the same answers, Tango's score
interval at the answers' effective size) and
self-preference (the MOVER difference of two means of leniency intervals). Each draws verdicts at planted flip and
leniency probabilities and runs the card's own code on them (`speceval.analysis.tables.judge_card`)."""

from __future__ import annotations

import math
from collections.abc import Callable
from statistics import NormalDist

import numpy as np

from speceval.analysis.reading.card_verdicts import CardItem, CardVerdicts
from speceval.analysis.reading.rows import ComplianceRow
from speceval.analysis.statistics.clustered import t975
from speceval.analysis.statistics.columns import Estimate
from speceval.analysis.statistics.paired import tango_interval
from speceval.analysis.statistics.stats import Z95
from speceval.analysis.tables.judge_card import judge_card, self_preference
from speceval.analysis.tables.judge_quality import leniency

Bounds = tuple[float, float] | None
Drawn = tuple[Bounds, Bounds | dict[str, Bounds]]


def wording_excess_scenario(
    inputs: int, per_input: int, wordings: int, retest_flip: float, wording_flip: float
) -> tuple[float, Callable[[np.random.Generator], Drawn]]:
    """`inputs` inputs of two statements, `per_input` answers each (candidates: correlated within an input through a
    shared shift), each re-sent once (flipping at `retest_flip`) and judged under `wordings` wordings (each flipping
    at `wording_flip`). Truth: wording_flip − retest_flip."""
    truth = wording_flip - retest_flip

    def draw(rng: np.random.Generator) -> Drawn:
        shift = rng.uniform(-0.5, 0.5, inputs)[:, None]  # an input's answers are harder or easier to judge alike
        retest = rng.random((inputs, per_input)) < np.clip(retest_flip * (1 + shift), 0.0, 1.0)
        worded = rng.random((inputs, per_input, wordings)) < np.clip(wording_flip * (1 + shift), 0.0, 1.0)[:, :, None]
        return _card_excess(retest, worded, rng)

    return truth, draw


def flips_by_input_scenario(
    inputs: int,
    per_input: int,
    wordings: int,
    retest_flip: float,
    wording_flip: float,
    icc: float = 0.0,
    difficulty: tuple[float, float] | None = None,
    together: bool = False,
) -> tuple[float, Callable[[np.random.Generator], Drawn]]:
    """The designs the issue 47 audit flagged and those where the excess is carried by few inputs: each input's flip
    chances are its own, either `retest_flip` u and `wording_flip` u with a difficulty u ~ Beta(`difficulty`) shared
    by its answers, or (no difficulty) drawn around their means at intra-input correlation `icc` (1: an input's
    answers all flip or none; 0: every answer at the mean); `together`: an answer's wordings flip all at once (a
    judge that reads every rewording alike). Flips are counted against the first verdict. Truth: the mean wording
    flip chance minus the retest's (each times E[u])."""
    scale = 1.0 if difficulty is None else difficulty[0] / (difficulty[0] + difficulty[1])
    truth = (wording_flip - retest_flip) * scale

    def chances(rng: np.random.Generator, mean: float, u: np.ndarray | None) -> np.ndarray:
        if u is not None:
            return mean * u
        if mean <= 0.0 or icc <= 0.0:
            return np.full((inputs, 1), mean)
        if icc >= 1.0:
            return (rng.random((inputs, 1)) < mean).astype(float)
        spread = 1 / icc - 1
        return rng.beta(mean * spread, (1 - mean) * spread, (inputs, 1))

    def draw(rng: np.random.Generator) -> Drawn:
        u = None if difficulty is None else rng.beta(*difficulty, (inputs, 1))
        retest = rng.random((inputs, per_input)) < chances(rng, retest_flip, u)
        wording = chances(rng, wording_flip, u)[:, :, None]
        shape = (inputs, per_input, 1 if together else wordings)
        worded = np.broadcast_to(rng.random(shape) < wording, (inputs, per_input, wordings))
        return _card_excess(retest, worded, rng)

    return truth, draw


def _card_excess(retest: np.ndarray, worded: np.ndarray, rng: np.random.Generator) -> Drawn:
    """The card's wording excess of these flips (inputs x answers; inputs x answers x wordings: True where the verdict
    differs from the first), and the references on the same flips."""
    inputs, per_input, wordings = worded.shape
    card = CardVerdicts("s", "j", wordings=wordings)
    card.items = [
        CardItem(
            statement_id=f"st{i % 2}",
            input=f"q{i}",
            first=True,
            retest=not bool(retest[i, k]),
            wordings=[not bool(f) for f in worded[i, k]],
        )
        for i in range(inputs)
        for k in range(per_input)
    ]
    [row] = judge_card([], [], [], None, [], [], {("s", "j"): card}, {})
    low, high = row.wording_excess.ci_low, row.wording_excess.ci_high
    ours = None if low is None or high is None else (low, high)
    return ours, excess_references(worded.mean(axis=2), retest.astype(float), rng)


def excess_references(share: np.ndarray, flip: np.ndarray, rng: np.random.Generator) -> dict[str, Bounds]:
    """Paired references for mean(share) - mean(flip) (inputs x answers each, the same answers): t(G-1) on the
    inputs' mean differences, their cluster bootstrap (percentile, 500 resamples), Agresti and Caffo's add-one
    interval on the inputs' means (one success and one failure a side, the SE of the differences' mean plus the
    added ones' binomial term: the issue 47 audit's reference), and Tango's score interval over every answer as if
    independent (naive)."""
    a, b = share.mean(axis=1), flip.mean(axis=1)
    diffs, g = a - b, len(a)
    centre = float(diffs.mean())
    half = t975(g - 1) * float(diffs.std(ddof=1)) / math.sqrt(g)
    sums = diffs[rng.integers(0, g, (500, g))].mean(axis=1)
    a_adj, b_adj = (a.sum() + 1) / (g + 2), (b.sum() + 1) / (g + 2)
    se = math.sqrt(
        max(float(diffs.var(ddof=1)), 1e-12) / g + (a_adj * (1 - a_adj) + b_adj * (1 - b_adj)) / (g + 2) ** 2
    )
    d = (share - flip).reshape(-1)
    return {
        "t(G-1) on the inputs' differences": (max(-1.0, centre - half), min(1.0, centre + half)),
        "cluster bootstrap of the inputs' differences": (
            float(np.percentile(sums, 2.5)),
            float(np.percentile(sums, 97.5)),
        ),
        "Agresti-Caffo on the inputs' means": (max(-1.0, a_adj - b_adj - Z95 * se), min(1.0, a_adj - b_adj + Z95 * se)),
        "Tango over every answer (naive)": tango_interval(
            float(len(d)), float(np.clip(d, 0, None).sum()), float(np.clip(-d, 0, None).sum())
        ),
    }


OWN, OTHER_1, OTHER_2 = "gpt-4o-mini-2024-07-18", "claude-haiku-4-5-20251001", "gemini-2.5-flash"
JUDGE, PEER = "gpt-4.1-2025-04-14", "claude-sonnet-4-5-20250929"


def self_preference_scenario(
    inputs: int, own: float, others: float, peer: float
) -> tuple[float, Callable[[np.random.Generator], Drawn]]:
    """Two judges on the answers of one own-provider candidate and two others: the judge finds its own provider's
    answers compliant at `own`, the others' at `others`; the peer judge all at `peer`. Leniency per candidate is
    half the judge's rate minus the peer's, so the truth is (own − peer)/2 − (others − peer)/2."""
    truth = (own - others) / 2

    def draw(rng: np.random.Generator) -> Drawn:
        rows = []
        for candidate, rate in ((OWN, own), (OTHER_1, others), (OTHER_2, others)):
            for judge, p in ((JUDGE, rate), (PEER, peer)):
                verdicts = rng.random(inputs) < p
                rows += [_row(judge, candidate, i, bool(v)) for i, v in enumerate(verdicts)]
        found = self_preference([r for r in leniency(rows) if r.judge == JUDGE])
        estimate = found.get("self_preference")
        low, high = (estimate.ci_low, estimate.ci_high) if isinstance(estimate, Estimate) else (None, None)
        if low is None or high is None:
            return None, None
        return (low, high), None

    return truth, draw


def _row(judge: str, candidate: str, index: int, compliant: bool, run: int = 1) -> ComplianceRow:
    statement = f"st{index % 2}"
    return ComplianceRow(
        spec="s",
        judge=judge,
        model=candidate,
        statement_id=statement,
        mode="binary",
        prompt_version="p",
        input=f"{statement} q{index}",
        output=f"{candidate} a{index} r{run}",
        run=run,
        outcome="judged",
        compliant=compliant,
        confidence=None,
        rating=None,
        source="sim",
    )


OWN_2 = "gpt-4.1-mini-2025-04-14"


def self_preference_by_input_scenario(
    inputs: int,
    runs: int,
    rates: tuple[float, float, float, float],
    own: float,
    others: float,
    miss: float,
    varying: bool,
) -> tuple[float, Callable[[np.random.Generator], Drawn]]:
    """The issue 47 audit's self-preference designs: the judge and a peer judge on two own-provider candidates and two
    others, on shared inputs; an answer is compliant by a probit with an input effect shared by every candidate and
    run (an input hard for one is hard for all), at marginal `rates`; both judges miss a compliant answer at `miss`
    and call a non-compliant one compliant at their leniency: the peer at 0.05, the judge at `own` on its provider's
    candidates and `others` on the rest (`varying`: times 2u, u ~ Beta(2, 2) by input). Truth: the mean over own
    candidates of the judge's expected rate minus the two judges' mean, minus the same over the others. References:
    t(G-1) on the inputs' own-minus-others contributions and their cluster bootstrap (percentile)."""
    lenient = {JUDGE: (own, others), PEER: (0.05, 0.05)}
    candidates = (OWN, OWN_2, OTHER_1, OTHER_2)
    expected = {
        (j, c): p * (1 - miss) + (1 - p) * lenient[j][0 if c < 2 else 1] for j in lenient for c, p in enumerate(rates)
    }
    deltas = [(expected[(JUDGE, c)] - expected[(PEER, c)]) / 2 for c in range(4)]
    truth = (deltas[0] + deltas[1]) / 2 - (deltas[2] + deltas[3]) / 2
    cuts = [NormalDist().inv_cdf(p) * math.sqrt(2.0) for p in rates]

    def draw(rng: np.random.Generator) -> Drawn:
        shared = rng.normal(size=(inputs, 1))
        scale = rng.beta(2, 2, (inputs, 1)) * 2 if varying else np.ones((inputs, 1))
        says = np.zeros((2, 4, inputs, runs), dtype=bool)
        for c, cut in enumerate(cuts):
            compliant = cut + shared + rng.normal(size=(inputs, runs)) > 0
            for j, judge in enumerate((JUDGE, PEER)):
                lenience = lenient[judge][0 if c < 2 else 1] * (scale if judge == JUDGE else 1.0)
                says[j, c] = np.where(
                    compliant, rng.random((inputs, runs)) >= miss, rng.random((inputs, runs)) < lenience
                )
        rows = [
            _row(judge, candidate, i, bool(says[j, c, i, r]), r + 1)
            for j, judge in enumerate((JUDGE, PEER))
            for c, candidate in enumerate(candidates)
            for i in range(inputs)
            for r in range(runs)
        ]
        found = self_preference([r for r in leniency(rows) if r.judge == JUDGE]).get("self_preference")
        ours = (
            None
            if not isinstance(found, Estimate) or found.ci_low is None or found.ci_high is None
            else (
                found.ci_low,
                found.ci_high,
            )
        )
        lean = (says[0].astype(float) - says[1]).mean(axis=2) / 2  # candidates x inputs
        contributions = lean[:2].mean(axis=0) - lean[2:].mean(axis=0)
        centre, half = (
            float(contributions.mean()),
            t975(inputs - 1) * float(contributions.std(ddof=1)) / math.sqrt(inputs),
        )
        resampled = contributions[rng.integers(0, inputs, (500, inputs))].mean(axis=1)
        return ours, {
            "t(G-1) on the inputs' contributions": (centre - half, centre + half),
            "cluster bootstrap of the inputs' contributions": (
                float(np.percentile(resampled, 2.5)),
                float(np.percentile(resampled, 97.5)),
            ),
        }

    return truth, draw
