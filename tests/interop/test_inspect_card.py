"""Each judge's card beside its verdicts in the Inspect export (`inspect_card`): every log of a judge carries the
numbers `speceval report`'s judge card shows for that entry (canary accuracy k of n with its interval and method,
human accuracy and kappa with labels, pass or fail against the same lines), as metadata and as metrics beside the
judge's score; a judge that fails its card is marked (a tag, a note, `card_passes` 0), never silently."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from speceval.analysis.rendering.data import compute
from speceval.analysis.rendering.experiment_options import report_settings
from speceval.analysis.tables.card_records import JudgeCardRow
from speceval.batch.costs import PriceTable
from speceval.cli.main import main as speceval_main
from speceval.interop.inspect_card import CARD_TAG
from speceval.interop.inspect_log import export_inspect
from tests.interop import view_browser
from tests.interop.inspect_reader import read_eval_log
from tests.study_matrix.checks_flow import fill_labels

ESTIMATES = ("canary", "human_accuracy", "human_kappa", "retest", "wording_excess")
COUNTS = (
    "canary_judged",
    "canary_shared_from",
    "human_labelled",
    "human_agree",  # the sample's own k of n (the accuracy may be weighed by the sheet's design)
    "human_accuracy_weighted",
    "human_accuracy_note",
    "retest_items",
    "passes",
    "failed_checks",
)


def report_card(paths: list[Path], flags: dict[str, Any]) -> dict[tuple[str, str], JudgeCardRow]:
    """The report's judge card of `paths` as `speceval report` with `flags` computes it (the study's settings)."""
    settings, _ = report_settings(paths, flags)
    assert settings is not None  # the fixture is a study: its experiment.json is read
    data = compute(paths, PriceTable.load(), **settings.options())
    return {(row.spec, row.judge): row for row in data.judge_card}


@pytest.fixture(scope="module")
def carded(experiment: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """(the export, the flags it was given): labels filled on a sheet, and a canary line between the judges'
    accuracies (so one judge passes and one fails) or, if they tie, above both."""
    root = tmp_path_factory.mktemp("card")
    sheet = root / "labels.csv"
    assert speceval_main(["label-sheet", str(experiment), "--n", "12", "--out", str(sheet)]) == 0
    assert fill_labels(sheet) > 0
    unlined = report_card([experiment], {"labels": sheet})
    accuracies = sorted({row.canary.value for row in unlined.values() if row.canary.value is not None})
    assert accuracies, "the fixture's judges judged the spec's examples"
    line = (accuracies[0] + accuracies[-1]) / 2 if len(accuracies) > 1 else accuracies[0] + 0.01
    flags = {"labels": sheet, "min_canary_accuracy": line}
    export_inspect([experiment], root / "logs", labels=sheet, min_canary_accuracy=line)
    return root / "logs", flags


def test_each_logs_judge_card_is_the_reports(experiment: Path, carded: tuple[Path, dict[str, Any]]) -> None:
    logs, flags = carded
    expected = report_card([experiment], flags)
    seen = 0
    for path in sorted(logs.glob("*.eval")):
        log = read_eval_log(str(path))
        meta = log.eval.metadata["speceval"]
        scores = {score.name: score for score in log.results.scores}
        for judge in meta["judges"].values():
            card, row = meta["judge_card"][judge], expected[(meta["spec"], judge)]
            for name in ESTIMATES:
                assert card[name] == getattr(row, name).model_dump(mode="json"), (judge, name)
            for name in COUNTS:
                assert card[name] == getattr(row, name), (judge, name)
            assert card["canary_correct"] == round(row.canary.value * row.canary_judged)
            assert card["human_labelled"] > 0 or row.human_labelled == 0
            metrics = scores[judge].metrics
            assert metrics["canary_accuracy"].value == row.canary.value
            assert (metrics["canary_ci_low"].value, metrics["canary_ci_high"].value) == (
                row.canary.ci_low,
                row.canary.ci_high,
            )
            assert metrics["canary_accuracy"].metadata["ci_method"] == row.canary.ci_method
            if row.human_accuracy.value is not None:
                assert metrics["human_accuracy"].value == row.human_accuracy.value
                assert metrics["human_accuracy_ci_high"].value == row.human_accuracy.ci_high
            assert "accuracy" in metrics  # Inspect's own metric is still there
            seen += 1
    assert seen and any(row.human_labelled for row in expected.values())  # labels reached some judge's card


def test_a_judge_that_fails_its_card_is_marked_in_its_logs(carded: tuple[Path, dict[str, Any]]) -> None:
    logs, flags = carded
    outcomes = set()
    for path in sorted(logs.glob("*.eval")):
        log = read_eval_log(str(path), header_only=True)
        meta = log.eval.metadata["speceval"]
        for judge in meta["judges"].values():
            card = meta["judge_card"][judge]
            outcomes.add(card["passes"])
            failing = card["passes"] is False
            assert (CARD_TAG + judge in log.eval.tags) == failing
            assert ("FAILS its judge card" in card["note"]) == failing
            assert (judge in (meta["judge_card_note"] or "")) == failing
            assert card["lines"] == {"min_canary_accuracy": flags["min_canary_accuracy"]}
            scores = {score.name: score for score in log.results.scores}
            assert scores[judge].metrics["card_passes"].value == int(not failing)
        others = [score for name, score in scores.items() if name not in meta["judge_card"]]
        assert all("card_passes" not in score.metrics for score in others)  # a panel is no judge entry
    assert False in outcomes  # the line is above at least one judge's accuracy


def test_without_lines_nothing_is_checked_and_said_so(experiment: Path, tmp_path: Path) -> None:
    # a .json log (written by inspect_ai itself) carries the card as a .eval one does
    export_inspect([experiment], tmp_path / "logs", log_format="json")
    path = next((tmp_path / "logs").glob("*.json"))
    log = read_eval_log(str(path), header_only=True)
    meta = log.eval.metadata["speceval"]
    for card in meta["judge_card"].values():
        assert card["passes"] is None and "nothing checked" in card["note"] and card["lines"] == {}
        assert card["human_labelled"] == 0 and card["human_accuracy"]["value"] is None
    assert not any(tag.startswith(CARD_TAG) for tag in log.eval.tags)
    assert all("card_passes" not in score.metrics for score in log.results.scores)
    by_name = {score.name: score for score in log.results.scores}
    for judge, card in meta["judge_card"].items():
        assert by_name[judge].metrics["canary_accuracy"].value == card["canary"]["value"] is not None
        assert by_name[judge].metrics["canary_accuracy"].metadata["judged"] == card["canary_judged"] > 0


def test_labels_with_a_flat_export_are_refused(experiment: Path, tmp_path: Path, capsys) -> None:
    code = speceval_main(["export", str(experiment), "--out", str(tmp_path / "v.jsonl"), "--labels", "x.csv"])
    assert code == 2 and "go with --format inspect" in capsys.readouterr().err


@pytest.mark.slow
def test_inspect_view_shows_the_card_metrics_and_the_failing_tag(carded: tuple[Path, dict[str, Any]], tmp_path) -> None:
    """In View's static bundle (headless Chromium): a log's page shows the judge's canary accuracy beside its score
    and the tag of the judge that fails its card."""
    reason = view_browser.missing()
    if reason is not None:
        pytest.skip(reason)
    from inspect_ai.log._bundle import bundle_log_dir

    logs, _ = carded
    bundle = tmp_path / "bundle"
    bundle_log_dir(log_dir=str(logs), output_dir=str(bundle), overwrite=True)
    path = sorted(logs.glob("*.eval"))[0]
    log = read_eval_log(str(path), header_only=True)
    failing = [tag for tag in log.eval.tags if tag.startswith(CARD_TAG)]
    assert failing  # the line is between the judges: one fails in every log
    accuracy = log.eval.metadata["speceval"]["judge_card"][log.results.scores[0].name]["canary"]["value"]
    wanted = ["canary_accuracy", f"{accuracy:.3f}"[:4], *failing]
    with view_browser.served(bundle) as base, view_browser.chromium() as socket:
        text = asyncio.run(
            view_browser.look(socket, f"{base}/index.html#/logs/{path.name}", wanted, tmp_path / "l.png")
        )
    (tmp_path / "l.txt").write_text(text)
    for piece in wanted:
        assert piece in text, (piece, text[:3000])


def test_the_command_names_each_judge_that_fails_its_card(experiment: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "logs"
    args = ["export", str(experiment), "--format", "inspect", "--out", str(out), "--min-canary-accuracy", "1"]
    assert speceval_main(args) == 0
    said = " ".join(capsys.readouterr().out.split())
    log = read_eval_log(str(next(out.glob("*.eval"))), header_only=True)
    for judge in log.eval.metadata["speceval"]["judges"].values():  # the emulator's judges miss some examples
        assert f"judge {judge} on openai fails its judge card" in said
        assert CARD_TAG + judge in log.eval.tags


def test_a_studys_own_card_lines_and_labels_are_read_as_its_report_reads_them(experiment: Path, tmp_path) -> None:
    """No flag: the study's experiment.json names a `judge_card:` block (all four lines) and a labels file; the export
    holds each judge to those lines with those labels, as `speceval report` on the folder does."""
    study = tmp_path / "out"
    shutil.copytree(experiment, study, ignore=shutil.ignore_patterns("*.lock", "report"))
    sheet = tmp_path / "labels.csv"
    assert speceval_main(["label-sheet", str(study), "--n", "12", "--out", str(sheet)]) == 0
    assert fill_labels(sheet) > 0
    state = json.loads((study / "experiment.json").read_text(encoding="utf-8"))
    state["settings"].update(judge_card={"min_canary_accuracy": 0.47, "min_human_kappa": 0.0}, labels=sheet.name)
    state["labels_path"] = str(sheet)
    (study / "experiment.json").write_text(json.dumps(state), encoding="utf-8")
    export_inspect([study], tmp_path / "logs")
    expected = report_card([study], {})
    assert any(row.passes is False for row in expected.values()) and any(
        row.human_labelled for row in expected.values()
    )
    for path in sorted((tmp_path / "logs").glob("*.eval")):
        meta = read_eval_log(str(path), header_only=True).eval.metadata["speceval"]
        for judge, card in meta["judge_card"].items():
            row = expected[(meta["spec"], judge)]
            assert set(card["lines"]) == {
                "min_canary_accuracy",
                "min_retest_agreement",
                "max_wording_excess",
                "min_human_kappa",
            }
            for name in ESTIMATES:
                assert card[name] == getattr(row, name).model_dump(mode="json"), (judge, name)
            for name in (*COUNTS, "unmeasured"):
                assert card[name] == getattr(row, name), (judge, name)
