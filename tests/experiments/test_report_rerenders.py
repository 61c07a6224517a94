"""`speceval report` on an experiment folder builds the report the experiment built: the same CSVs, summary.md and
variation_statistics.json byte for byte. It read only a `judge_card:` block from experiment.json, so a judge kept
out of the headline by the study's `min_canary_accuracy` came back into it, the spec-health flags were drawn at the
default lines (0 of 8 statements flagged where the study's report flagged 8), the metrics table was gone and the
human labels were not read."""

from __future__ import annotations

import json

import pytest

import speceval
from speceval.cli.main import main as speceval_main
from tests.conftest import REPO
from tests.study_matrix.checks_flow import fill_labels, same_tables

STUDY = f"""experiment_name: rerender
output_dir: out
specs:
  - name: openai
    spec_path: {REPO}/data/specs/openai/jsonl/openai.jsonl
    inputs_dir: {REPO}/batched_examples/inputs/sycobench
candidates:
  - model: gpt-4.1-mini-2025-04-14
  - model: claude-haiku-4-5-20251001
judges:
  - model: gpt-4.1-2025-04-14
min_canary_accuracy: 0.99
health:
  disagreement: 0.1
  fail_below: 0.9
  pass_above: 0.5
metrics:
  digits:
    source: answer
    regex: '(\\d+)'
    type: int
    range: [0, 99999999]
engine:
  poll_interval: 0.05
stages: [generation, compliance, report]
"""


@pytest.mark.slow  # a whole experiment, run twice
def test_report_on_an_experiment_folder_builds_the_experiments_own_report(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "exp.yaml").write_text(STUDY, encoding="utf-8")
    # `--no-figures` reaches the study's report (a study at scale need not wait for its figures).
    assert speceval_main(["run", "exp.yaml", "--offline", "--no-figures"]) == 0, capsys.readouterr().err
    assert 'id="no-figures"' in (tmp_path / "out" / "report" / "report.html").read_text(encoding="utf-8")
    summary = (tmp_path / "out" / "report" / "summary.md").read_text(encoding="utf-8")
    assert "Kept out of the headline" in summary and "minimum canary accuracy 0.99" in summary
    assert (tmp_path / "out" / "report" / "metrics.csv").is_file()

    # Labels: a sheet filled and named in the file (relative to it), the study run again (a report-only change).
    assert speceval_main(["label-sheet", "out", "--n", "12", "--out", "sheets/labels.csv"]) == 0
    assert fill_labels(tmp_path / "sheets" / "labels.csv") > 0
    (tmp_path / "exp.yaml").write_text(STUDY + "labels: sheets/labels.csv\n", encoding="utf-8")
    assert speceval_main(["run", "exp.yaml", "--offline"]) == 0, capsys.readouterr().err
    assert (tmp_path / "out" / "report" / "ppi.csv").is_file()
    page = (tmp_path / "out" / "report" / "report.html").read_text(encoding="utf-8")
    assert 'id="no-figures"' not in page
    # Human accuracy of a stratified sheet is weighed by its design, and the card says so.
    summary = (tmp_path / "out" / "report" / "summary.md").read_text(encoding="utf-8")
    assert "weighs each statement's share of agreement" in summary and "design-weighted; sample " in summary
    assert "design-weighted; sample " in page and "weighs each statement&#x27;s share of agreement" in page
    # No judge passes: the page says so where its summary table would be (a header alone read as a blank table),
    # and the figure of the judge's rates under the headline names it as failed.
    assert "No judge entry passed its judge card: no rate heads this report." in page
    assert 'alt="compliance by variation, judge gpt-4.1-2025-04-14 (failed its card)"' in page

    # From another folder (the labels path is relative to the experiment file, not to where the report runs).
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    capsys.readouterr()
    assert speceval_main(["report", "../out", "--out", "again", "--no-figures"]) == 0
    assert same_tables(tmp_path / "out" / "report", elsewhere / "again") == []
    assert "kept out of the headline" in capsys.readouterr().out

    # The library's tables of the study are its CSVs' (the card's gate included).
    tables = speceval.report_tables(tmp_path / "out")
    assert tables["judge_card"]["passes"].tolist() == [False]
    assert set(tables["compliance"]["judge_passes"].tolist()) == {False}
    assert sorted(tables["metrics"]["metric"].unique()) == ["digits"]

    # A folder inside the study is reported with the study's settings too (its card still gates the headline).
    assert speceval_main(["report", "../out/compliance", "--out", "inside", "--no-figures"]) == 0
    assert "Kept out of the headline" in (elsewhere / "inside" / "summary.md").read_text(encoding="utf-8")

    # A flag takes the place of the experiment's value: the judge passes a line of 0.4 and heads the report.
    assert speceval_main(["report", "../out", "--out", "lower", "--no-figures", "--min-canary-accuracy", "0.4"]) == 0
    lowered = (elsewhere / "lower" / "summary.md").read_text(encoding="utf-8")
    assert "Kept out of the headline" not in lowered and "minimum canary accuracy 0.4" in lowered


def test_two_experiments_with_different_report_settings_are_not_reported_as_one(tmp_path, capsys):
    for name, line in (("a", 0.9), ("b", 0.5)):
        folder = tmp_path / name
        folder.mkdir()
        settings = {"min_canary_accuracy": line, "health": {}, "metrics": None, "judge_card": None, "labels": None}
        (folder / "experiment.json").write_text(json.dumps({"settings": settings}), encoding="utf-8")
    out = tmp_path / "report"
    assert speceval_main(["report", str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(out)]) == 2
    said = " ".join(capsys.readouterr().err.split())
    assert "different report settings (min_canary_accuracy: 0.9 against 0.5)" in said
    assert str(tmp_path / "a") in said and str(tmp_path / "b") in said and not out.exists()


def test_a_recorded_labels_file_that_is_gone_is_said_not_skipped(tmp_path, capsys):
    folder = tmp_path / "study"
    folder.mkdir()
    settings = {"labels": "sheets/labels.csv", "health": {}}
    state = {"settings": settings, "labels_path": str(tmp_path / "moved" / "labels.csv")}
    (folder / "experiment.json").write_text(json.dumps(state), encoding="utf-8")
    speceval_main(["report", str(folder), "--out", str(tmp_path / "report"), "--no-figures"])
    said = " ".join(capsys.readouterr().err.split())
    assert "read human labels" in said and "moved/labels.csv" in said and "pass --labels" in said


def test_two_experiments_metrics_are_joined_and_one_name_defined_twice_is_refused(tmp_path):
    from speceval.analysis.rendering.experiment_options import report_settings
    from speceval.errors import ConfigError

    words = {"source": "answer", "regex": "(\\w+)", "type": "category"}
    digits = {"source": "answer", "regex": "(\\d+)", "type": "int"}
    for name, metrics in (("a", {"words": words}), ("b", {"digits": digits}), ("c", {"words": digits})):
        (tmp_path / name).mkdir()
        settings = {"health": {}, "metrics": metrics}
        (tmp_path / name / "experiment.json").write_text(json.dumps({"settings": settings}), encoding="utf-8")
    joined, _ = report_settings([tmp_path / "a", tmp_path / "b"], {})
    assert joined is not None and sorted(joined.metrics or {}) == ["digits", "words"]
    with pytest.raises(ConfigError, match="define the metric 'words' differently"):
        report_settings([tmp_path / "a", tmp_path / "c"], {})


def test_an_unreadable_experiment_state_is_an_error_not_a_report_without_its_card(tmp_path, capsys):
    folder = tmp_path / "study"
    folder.mkdir()
    (folder / "experiment.json").write_text("{not json", encoding="utf-8")
    assert speceval_main(["report", str(folder), "--out", str(tmp_path / "report"), "--no-figures"]) == 2
    said = " ".join(capsys.readouterr().err.split())
    assert "experiment.json: cannot be read as the experiment's state" in said and not (tmp_path / "report").exists()
