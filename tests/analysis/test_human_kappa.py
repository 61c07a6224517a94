"""Cohen's kappa of a judge against people, in the judge card and human_agreement.csv: one mechanism
(`judge_quality.kappa_with_people`), with the agreement table's cluster bootstrap, an input one cluster across the
candidates that answered it (their answers to one input are not independent)."""

from __future__ import annotations

import random

from speceval.analysis.tables.judge_quality import LabelTally, human_agreement, input_digest, kappa_with_people


def _tally(candidates: list[str], inputs: int = 40, seed: int = 3) -> LabelTally:
    """Every candidate's answer to input i judged and labelled alike (the same verdict, the same label)."""
    rng = random.Random(seed)
    drawn = [(rng.random() < 0.7, rng.random() < 0.8) for _ in range(inputs)]
    tally = LabelTally()
    for candidate in candidates:
        for i, (label, right) in enumerate(drawn):
            statement = f"s{i % 4}"
            verdict = int(label) if right else int(not label)
            tally.add(
                ("spec", "judge", candidate, "default"),
                verdict,
                label,
                statement,
                input_digest("spec", statement, f"q{i}"),
            )
    return tally


def _kappa(tally: LabelTally):
    return kappa_with_people(
        (key[2], key[3], group, (group.labels >= 0).nonzero()[0]) for key, group in tally.group_arrays()
    )


def test_a_second_candidate_answering_the_same_inputs_alike_adds_no_precision() -> None:
    one, two = _kappa(_tally(["a"])), _kappa(_tally(["a", "b"]))
    assert one is not None and two is not None and one.ci_low is not None
    assert two.kappa == one.kappa and two.items == 2 * one.items
    # An input is one cluster: the copy's answers move with the original's in every draw (each candidate's its own
    # cluster made the interval narrower, as if 80 independent inputs had been labelled)
    assert (two.ci_low, two.ci_high) == (one.ci_low, one.ci_high)


def test_human_agreement_csv_gives_kappa_its_interval_and_method() -> None:
    [pooled] = [row for row in human_agreement(_tally(["a", "b"])) if row.candidate == "all"]
    card = _kappa(_tally(["a", "b"]))
    assert card is not None
    assert (pooled.kappa, pooled.kappa_ci_low, pooled.kappa_ci_high) == (card.kappa, card.ci_low, card.ci_high)
    assert pooled.kappa_ci_low is not None and pooled.kappa_ci_low < pooled.kappa < pooled.kappa_ci_high
    assert pooled.kappa_ci_method and "bootstrap" in pooled.kappa_ci_method
