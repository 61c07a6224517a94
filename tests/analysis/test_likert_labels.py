"""A Likert judge checked against human yes/no labels by its canaries' rule (4-5 agrees with yes, 1-2 with no, 3 with
neither): a folder judged only by a Likert judge offers its answers on a label sheet, and the filled sheet gives its
accuracy (Wilson, as a yes/no judge's) in `human_agreement.csv` and the judge card, with no kappa (a note says why)
and no PPI row; its labels never change a yes/no judge's PPI."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from speceval.analysis.reading.load import load_verdicts
from speceval.analysis.tables.human_labels import LABEL_COLUMNS, item_id, labellable, read_labels
from speceval.analysis.tables.judge_quality import LIKERT_KAPPA_NOTE, LabelTally, human_agreement
from speceval.analysis.tables.ppi_table import ppi_rates
from speceval.cli.main import main as speceval_main
from speceval.judging.canaries import LIKERT_RULE, likert_agrees, likert_correct

RATINGS = [5, 4, 3, 2, 1, 3, 4, 5, 1, 2, 3, 4]
"""A Likert judge's ratings of answers 0-11 (two statements, so 24 verdicts)."""


def write_judge(root: Path, judge: str, mode: str, verdicts: list[int | bool], model: str = "m1") -> None:
    """A judge folder over one candidate: `verdicts` are ratings (mode likert) or yes/no (binary), answer i's."""
    key = "rating" if mode == "likert" else "compliant"
    results = [
        {
            "input": f"q{i}",
            "output": f"{model} {i}",
            "compliant": None,
            "rating": None,
            key: v,
            "confidence": None,
            "explanation": "x",
            "outcome": "judged",
            "original_index": i,
        }
        for i, v in enumerate(verdicts)
    ]
    for statement in ("st0", "st1"):
        path = root / f"judge_{judge}/{model}/results/{statement}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        metadata = {"model": model, "judge": judge, "spec": "s", "statement_id": statement, "prompt_version": "p"}
        metadata |= {"mode": mode, "batch_ids": ["b"], "candidate_dir": "x"}
        path.write_text(json.dumps({"metadata": metadata, "results": results}))


def _csv(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


@pytest.mark.parametrize("rating", [1, 2, 3, 4, 5])
def test_the_rule_is_the_canaries_rule(rating: int) -> None:
    assert likert_agrees(rating, True) == (rating >= 4)
    assert likert_agrees(rating, False) == (rating <= 2)
    assert not (rating == 3 and (likert_agrees(3, True) or likert_agrees(3, False)))  # a 3 agrees with neither
    assert likert_correct("good", rating) == likert_agrees(rating, True)
    assert likert_correct("bad", rating) == likert_agrees(rating, False)


def test_a_likert_only_folder_offers_its_answers_and_its_filled_sheet_is_used(tmp_path: Path, capsys) -> None:
    root = tmp_path / "runs"
    write_judge(root, "gpt-4.1-2025-04-14-likert", "likert", RATINGS)
    rows = load_verdicts([root]).compliance
    assert rows and all(labellable(r) for r in rows)
    sheet = tmp_path / "labels.csv"
    assert speceval_main(["label-sheet", str(root), "--n", "16", "--seed", "3", "--out", str(sheet)]) == 0
    records = _csv(sheet)
    assert len(records) == 16 and {r["item"] for r in records} <= {item_id(r) for r in rows}
    rating_of = {item_id(r): int(r.rating or 0) for r in rows}
    # Fill it: yes on even answers, no on odd ones, and leave the last two blank (unlabelled).
    for number, record in enumerate(records[:-2]):
        record["human_compliant"] = "yes" if number % 2 == 0 else "no"
    with sheet.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=LABEL_COLUMNS)
        writer.writeheader()
        writer.writerows(records)
    labels = read_labels(sheet, rows)
    assert len(labels) == 14
    # The hand count: 4-5 on a yes, 1-2 on a no; a 3 is a miss either way.
    agree = sum((rating_of[item] >= 4) if label else (rating_of[item] <= 2) for item, label in labels.items())
    assert 0 < agree < 14
    report = tmp_path / "report"
    assert speceval_main(["report", str(root), "--out", str(report), "--labels", str(sheet), "--no-figures"]) == 0
    capsys.readouterr()
    [pooled] = [r for r in _csv(report / "human_agreement.csv") if r["candidate"] == "all"]
    assert (int(pooled["labelled"]), int(pooled["agree"])) == (14, agree)
    assert float(pooled["accuracy"]) == pytest.approx(agree / 14)
    assert float(pooled["accuracy_ci_low"]) < agree / 14 < float(pooled["accuracy_ci_high"])
    assert "Wilson" in pooled["accuracy_ci_method"] and pooled["rule"] == LIKERT_RULE
    assert pooled["kappa"] == "" and pooled["kappa_note"] == LIKERT_KAPPA_NOTE
    [card] = _csv(report / "judge_card.csv")
    assert (int(card["human_labelled"]), float(card["human_accuracy"])) == (14, pytest.approx(agree / 14))
    # The sheet's design is beside it: the card's accuracy is the design-weighted one (one statement here: the same
    # share), human_agreement.csv's weighted columns, with the sample's k of n beside it.
    assert card["human_accuracy_ci_low"] == pooled["weighted_ci_low"] and card["human_accuracy_weighted"] == "True"
    assert float(pooled["weighted_accuracy"]) == pytest.approx(agree / 14) and int(card["human_agree"]) == agree
    assert card["human_kappa"] == "" and card["human_kappa_note"] == LIKERT_KAPPA_NOTE
    assert not (report / "ppi.csv").exists() or not _csv(report / "ppi.csv")  # a rating has no rate to correct
    page = (report / "report.html").read_text(encoding="utf-8")
    assert "Judges against human labels" in page and "3 with neither" in page
    assert "A Likert judge has no prediction-powered rate" in page and "Prediction-powered rates" not in page
    assert "none for a Likert judge" in page  # the card's kappa cell says why it is empty
    summary = (report / "summary.md").read_text(encoding="utf-8")
    assert "Likert: 4-5 agrees with yes, 1-2 with no, 3 with neither" in summary


def test_a_likert_judges_labels_do_not_change_a_binary_judges_ppi(tmp_path: Path) -> None:
    binary = [i % 3 != 0 for i in range(12)]
    alone, both = tmp_path / "alone", tmp_path / "both"
    write_judge(alone, "j", "binary", binary)
    write_judge(both, "j", "binary", binary)
    write_judge(both, "k", "likert", RATINGS)
    write_judge(both, "k", "likert", RATINGS, model="m2")  # answers only the Likert judge judged, labelled too
    rows_alone, rows_both = load_verdicts([alone]).compliance, load_verdicts([both]).compliance
    labels = {item_id(r): r.statement_id == "st0" or int(r.output.split()[1]) % 2 == 0 for r in rows_both}
    with_likert = LabelTally.of_rows(rows_both, labels)
    expected = ppi_rates(rows_alone, labels)
    assert [r.judge for r in expected] == ["j"] and expected[0].labelled == 24
    assert ppi_rates(with_likert) == expected
    agreement = [a for a in human_agreement(with_likert) if a.judge == "j"]
    assert agreement == human_agreement(rows_alone, labels)
    # The Likert judge's verdicts are in the tally as ratings (its agreement is counted) but never as a yes/no.
    assert {a.judge for a in human_agreement(with_likert)} == {"j", "k"}
    assert with_likert.labelled_on("s", "k", "st0")[0].size == 0
    assert with_likert.labelled_on("s", "j", "st0")[0].size == 12


def test_neyman_allocation_aimed_at_a_likert_judge_says_why_it_does_not_apply(tmp_path: Path, capsys) -> None:
    root = tmp_path / "runs"
    write_judge(root, "k", "likert", RATINGS)
    write_judge(root, "j", "binary", [i % 3 != 0 for i in range(12)])
    write_judge(root, "j2", "binary", [i % 4 != 0 for i in range(12)])
    args = ["label-sheet", str(root), "--n", "6", "--allocation", "neyman", "--judge", "k"]
    assert speceval_main([*args, "--out", str(tmp_path / "k.csv")]) == 2 and not (tmp_path / "k.csv").exists()
    assert "a Likert judge's, which has none" in " ".join(capsys.readouterr().err.split())
    assert speceval_main([*args[:-1], "j", "--out", str(tmp_path / "j.csv")]) == 0  # a yes/no aim is allocated


@pytest.mark.parametrize("mode", ["binary", "likert"])
def test_an_inputs_several_labelled_answers_are_one_cluster_of_the_accuracys_interval(
    tmp_path: Path, mode: str
) -> None:
    from speceval.analysis.statistics.registry import CLUSTERED, WILSON
    from speceval.analysis.tables.judge_card import judge_card

    clustered = CLUSTERED.format(unit="input")

    verdicts: list[int | bool] = RATINGS if mode == "likert" else [i % 3 != 0 for i in range(12)]
    rows = []
    for model in ("m1", "m2", "m3"):  # three candidates' answers to the same 12 inputs of each statement
        root = tmp_path / model
        write_judge(root, "k", mode, verdicts, model=model)
        rows += load_verdicts([root]).compliance
    labels = {item_id(r): int(r.output.split()[1]) % 2 == 0 for r in rows}
    tally = LabelTally.of_rows(rows, labels)
    pooled, *per_candidate = human_agreement(tally)
    assert pooled.candidate == "all" and pooled.labelled == 72 and pooled.accuracy_ci_method.startswith(clustered)
    assert {a.accuracy_ci_method for a in per_candidate} == {WILSON}  # one candidate: one labelled answer an input
    [card] = judge_card([("s", "k")], [], [], tally, [], [], {}, {"min_human_kappa": 0.4})
    # A Likert entry's kappa line is unmeasured (neither passes nor fails it); a yes/no entry's is held to it.
    assert ("human_kappa" in card.unmeasured) == (mode == "likert") and (card.human_kappa.value is None) == (
        mode == "likert"
    )
    assert card.human_accuracy.ci_method == pooled.accuracy_ci_method and card.human_labelled == 72
    assert (card.human_accuracy.ci_low, card.human_accuracy.ci_high) == (
        pooled.accuracy_ci_low,
        pooled.accuracy_ci_high,
    )
    # Three copies of every answer's agreement are one input's three: no narrower than one candidate's 24 alone.
    one = per_candidate[0]
    assert pooled.accuracy == one.accuracy
    assert pooled.accuracy_ci_high - pooled.accuracy_ci_low >= 0.9 * (one.accuracy_ci_high - one.accuracy_ci_low)


def test_a_likert_judge_can_be_held_to_a_human_accuracy_line(tmp_path: Path) -> None:
    """`min_human_accuracy` (optional, off by default): the one human line a Likert judge can be held to (it has no
    kappa); a card that does not set it checks nothing about accuracy."""
    from speceval.analysis.tables.card_records import JudgeCardLines
    from speceval.analysis.tables.judge_card import card_lines, judge_card

    write_judge(tmp_path, "k", "likert", RATINGS)
    rows = load_verdicts([tmp_path]).compliance
    tally = LabelTally.of_rows(rows, {item_id(r): True for r in rows})  # every answer labelled yes
    agrees = sum(likert_agrees(r, True) for r in RATINGS) / len(RATINGS)  # the 4s and 5s: 6 of 12
    assert "min_human_accuracy" not in card_lines(JudgeCardLines(), None)  # not set: not in force
    for line, passes in ((agrees - 0.01, True), (agrees + 0.01, False)):
        lines = card_lines(JudgeCardLines(min_human_accuracy=line), None)
        [card] = judge_card([("s", "k")], [], [], tally, [], [], {}, lines)
        assert card.human_accuracy.value == pytest.approx(agrees) and card.passes is passes
        assert passes or card.failed_checks == [f"human_accuracy {agrees:.3f} < min_human_accuracy {line:g}"]
    with pytest.raises(ValueError, match="min_human_accuracy"):
        JudgeCardLines(min_human_accuracy=1.5)
