"""The coverage matrix's scenarios for the judge card (issue 44) whose composition is the card's own: the wording flip
excess (a paired MOVER difference of a per-answer flip share and a 0/1 retest flip on the same answers) and
self-preference (the MOVER difference of two means of leniency intervals). Each draws verdicts at planted flip and
leniency probabilities and runs the card's own code on them (`speceval.analysis.tables.judge_card`)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from speceval.analysis.reading.card_verdicts import CardItem, CardVerdicts
from speceval.analysis.reading.rows import ComplianceRow
from speceval.analysis.statistics.columns import Estimate
from speceval.analysis.tables.judge_card import judge_card, self_preference
from speceval.analysis.tables.judge_quality import leniency

Drawn = tuple[tuple[float, float] | None, tuple[float, float] | None]


def wording_excess_scenario(
    inputs: int, per_input: int, wordings: int, retest_flip: float, wording_flip: float
) -> tuple[float, Callable[[np.random.Generator], Drawn]]:
    """`inputs` inputs of two statements, `per_input` answers each (candidates: correlated within an input through a
    shared shift), each re-sent once (flipping at `retest_flip`) and judged under `wordings` wordings (each flipping
    at `wording_flip`). Truth: wording_flip − retest_flip."""
    truth = wording_flip - retest_flip

    def draw(rng: np.random.Generator) -> Drawn:
        card = CardVerdicts("s", "j", wordings=wordings)
        for i in range(inputs):
            shift = rng.uniform(-0.5, 0.5)  # an input's answers are harder or easier to judge alike
            for _ in range(per_input):
                retest_p = min(max(retest_flip * (1 + shift), 0.0), 1.0)
                wording_p = min(max(wording_flip * (1 + shift), 0.0), 1.0)
                flipped = rng.random(wordings) < wording_p
                card.items.append(
                    CardItem(
                        statement_id=f"st{i % 2}",
                        input=f"q{i}",
                        first=True,
                        retest=not bool(rng.random() < retest_p),
                        wordings=[not bool(f) for f in flipped],
                    )
                )
        [row] = judge_card([], [], [], None, [], [], {("s", "j"): card}, {})
        low, high = row.wording_excess.ci_low, row.wording_excess.ci_high
        if low is None or high is None:
            return None, None
        return (low, high), None

    return truth, draw


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


def _row(judge: str, candidate: str, index: int, compliant: bool) -> ComplianceRow:
    statement = f"st{index % 2}"
    return ComplianceRow(
        spec="s",
        judge=judge,
        model=candidate,
        statement_id=statement,
        mode="binary",
        prompt_version="p",
        input=f"{statement} q{index}",
        output=f"{candidate} a{index}",
        outcome="judged",
        compliant=compliant,
        confidence=None,
        rating=None,
        source="sim",
    )
