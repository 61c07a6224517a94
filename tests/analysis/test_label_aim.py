"""Labels that can be aimed, and a design that is read (issue 42): `speceval label-sheet --judge/--scope/--candidate/
--variation` draws only the answers asked for and records the aim in `labels.design.json`; the report reads that
design and refuses a malformed, edited or another sheet's design, and a label on an answer it did not draw, naming
the file and the field (or the sheet's line)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from speceval.cli.main import main as speceval_main
from tests.analysis.test_judge_quality import write_compliance


def _runs(tmp_path: Path) -> Path:
    root = tmp_path / "runs"
    write_compliance(root, "j1", "m1", [True, False, True] * 8)
    write_compliance(root, "j2", "m2", [False, True] * 12)
    return root


def _sheet(root: Path, out: Path, *extra: str, seed: str = "3") -> list[dict[str, str]]:
    assert speceval_main(["label-sheet", str(root), "--n", "10", "--seed", seed, "--out", str(out), *extra]) == 0
    with out.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def _fill(sheet: Path, rows: list[dict[str, str]]) -> None:
    for row in rows:
        row["human_compliant"] = "yes"
    with sheet.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def _report(root: Path, sheet: Path, out: Path) -> int:
    return speceval_main(["report", str(root), "--out", str(out), "--labels", str(sheet)])


def test_a_sheet_aimed_at_one_judge_draws_only_its_answers_and_says_so(tmp_path: Path) -> None:
    root = _runs(tmp_path)
    rows = _sheet(root, tmp_path / "labels.csv", "--judge", "j2", "--scope", "conversation")
    assert len(rows) == 10 and {row["candidate"] for row in rows} == {"m2"}
    design = json.loads((tmp_path / "labels.design.json").read_text(encoding="utf-8"))
    assert design["filters"] == {"judge": "j2", "scope": "conversation"}
    assert sum(s["answers"] for s in design["strata"]) == 2 * 24  # j2's answers to 2 statements, not j1's
    assert sorted(design["items"]) == sorted(row["item"] for row in rows)
    rows = _sheet(root, tmp_path / "m1.csv", "--candidate", "m1", "--variation", "default")
    assert {row["candidate"] for row in rows} == {"m1"}


def test_an_aim_that_matches_nothing_is_refused_naming_what_there_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _runs(tmp_path)
    code = speceval_main(["label-sheet", str(root), "--n", "5", "--out", str(tmp_path / "x.csv"), "--judge", "j3"])
    assert code == 2
    said = " ".join(capsys.readouterr().err.split())
    assert "--judge j3" in said and "judges: j1, j2" in said
    assert "only a binary judge's answers are offered" in said  # a Likert entry's name is not listed: say why
    assert not (tmp_path / "x.csv").exists()


def test_the_report_reads_the_design_and_refuses_what_it_did_not_draw(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _runs(tmp_path)
    sheet, design = tmp_path / "labels.csv", tmp_path / "labels.design.json"
    rows = _sheet(root, sheet)
    _fill(sheet, rows)
    assert _report(root, sheet, tmp_path / "ok") == 0
    good = design.read_text(encoding="utf-8")

    # Malformed: refused naming the file.
    design.write_text("{", encoding="utf-8")
    assert _report(root, sheet, tmp_path / "bad") == 2
    assert "labels.design.json" in " ".join(capsys.readouterr().err.split())

    # Edited: a stratum's draws changed.
    edited = json.loads(good)
    edited["strata"][0]["drawn"] += 1
    design.write_text(json.dumps(edited), encoding="utf-8")
    assert _report(root, sheet, tmp_path / "edited") == 2
    said = " ".join(capsys.readouterr().err.split())
    assert "labels.design.json" in said and "field 'strata" in said

    # Another sheet's design (another seed drew other answers): its labels were not drawn by it.
    _sheet(root, tmp_path / "other.csv", seed="9")
    design.write_text((tmp_path / "other.design.json").read_text(encoding="utf-8"), encoding="utf-8")
    assert _report(root, sheet, tmp_path / "other") == 2
    said = " ".join(capsys.readouterr().err.split())
    assert "did not draw it" in said and "field 'item'" in said

    # A label on an answer the design did not draw: a row copied in from another sheet.
    design.write_text(good, encoding="utf-8")
    drawn = {row["item"] for row in rows}
    with (tmp_path / "other.csv").open(newline="", encoding="utf-8") as handle:
        foreign = next(row for row in csv.DictReader(handle) if row["item"] not in drawn)
    _fill(sheet, [*rows, foreign])
    assert _report(root, sheet, tmp_path / "foreign") == 2
    said = " ".join(capsys.readouterr().err.split())
    assert f"line {len(rows) + 2}" in said and "did not draw it" in said
