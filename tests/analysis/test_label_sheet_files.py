"""Label sheets as people save them: a UTF-8 BOM and CRLF are read; Latin-1 is refused naming the line (exit 2, not
a crash); `label-sheet --out` never overwrites a sheet (`--force` replaces it); an item labelled twice is refused
naming both lines; a sheet with no label is said; `--seed -1` exits 2; nothing to label names the folders."""

from __future__ import annotations

import csv
import io
import logging
from pathlib import Path

import pytest

from speceval.analysis.reading.load import load_verdicts
from speceval.analysis.tables.human_labels import item_id, read_labels
from speceval.cli.main import main as speceval_main
from speceval.errors import InputError
from tests.analysis.test_labelled import write_run
from tests.conftest import SAMPLE_INPUTS, SAMPLE_SPEC


def _folder(tmp_path: Path) -> tuple[Path, list[str]]:
    root = tmp_path / "runs"
    write_run(root, "c1", "m1", 0.0, [True, False, True])
    rows = load_verdicts([root]).compliance
    return root, sorted({item_id(r) for r in rows})


def _sheet(rows: list[tuple[str, str, str]], newline: str = "\n") -> str:
    buffer = io.StringIO(newline="")
    writer = csv.writer(buffer, lineterminator=newline)
    writer.writerow(["item", "human_compliant", "notes"])
    writer.writerows(rows)
    return buffer.getvalue()


def test_bom_and_crlf_are_read(tmp_path: Path) -> None:
    root, items = _folder(tmp_path)
    sheet = tmp_path / "labels.csv"
    sheet.write_bytes(b"\xef\xbb\xbf" + _sheet([(items[0], "yes", "é ok"), (items[1], "no", "")], "\r\n").encode())
    labels = read_labels(sheet, load_verdicts([root]).compliance)
    assert labels == {items[0]: True, items[1]: False}


def test_latin1_is_refused_naming_its_line(tmp_path: Path) -> None:
    root, items = _folder(tmp_path)
    sheet = tmp_path / "labels.csv"
    sheet.write_bytes(_sheet([(items[0], "yes", ""), (items[1], "no", "caf\xe9")]).encode("latin-1"))
    with pytest.raises(InputError, match="line 3.*not UTF-8"):
        read_labels(sheet, load_verdicts([root]).compliance)
    assert speceval_main(["report", str(root), "--out", str(tmp_path / "report"), "--labels", str(sheet)]) == 2


@pytest.mark.parametrize("second", ["no", "yes"])
def test_an_item_labelled_twice_is_refused_naming_both_lines(tmp_path: Path, second: str) -> None:
    root, items = _folder(tmp_path)
    sheet = tmp_path / "labels.csv"
    sheet.write_text(_sheet([(items[0], "yes", ""), (items[1], "", ""), (items[0], second, "")]))
    with pytest.raises(InputError, match=r"line 4.*labelled on line 2 too"):
        read_labels(sheet, load_verdicts([root]).compliance)


def test_a_sheet_without_labels_is_said(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    root, items = _folder(tmp_path)
    sheet = tmp_path / "labels.csv"
    sheet.write_text(_sheet([(items[0], "", ""), (items[1], " ", "")]))
    with caplog.at_level(logging.WARNING, logger="speceval"):
        assert read_labels(sheet, load_verdicts([root]).compliance) == {}
    assert "no filled human_compliant value" in caplog.text


def test_label_sheet_never_overwrites_a_sheet_unless_forced(tmp_path: Path, capsys) -> None:
    root, _ = _folder(tmp_path)
    sheet = tmp_path / "labels.csv"
    sheet.write_text("item,human_compliant\nabc,yes\n")
    assert speceval_main(["label-sheet", str(root), "--n", "2", "--out", str(sheet)]) == 2
    assert sheet.read_text() == "item,human_compliant\nabc,yes\n"
    assert "add --force" in capsys.readouterr().err.replace("\n", " ")
    assert speceval_main(["label-sheet", str(root), "--n", "2", "--out", str(sheet), "--force"]) == 0
    assert "human_compliant" in sheet.read_text() and "abc,yes" not in sheet.read_text()


@pytest.mark.parametrize("flags", [["--seed", "-1"], ["--n", "0"]])
def test_label_sheet_numbers_out_of_range_exit_2(tmp_path: Path, flags: list[str]) -> None:
    root, _ = _folder(tmp_path)
    with pytest.raises(SystemExit) as refused:
        speceval_main(["label-sheet", str(root), "--n", "2", *flags, "--out", str(tmp_path / "l.csv")])
    assert refused.value.code == 2 and not (tmp_path / "l.csv").exists()


def test_nothing_to_label_names_the_folder(tmp_path: Path, capsys) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    assert speceval_main(["label-sheet", str(empty), "--n", "2", "--out", str(tmp_path / "l.csv")]) == 2
    captured = capsys.readouterr()
    assert f"no compliance results found under {empty}" in "".join((captured.out + captured.err).split("\n"))


def test_a_folder_judged_only_by_categories_has_nothing_to_label(tmp_path: Path, capsys) -> None:
    from tests.interop.conftest import trimmed_spec

    # One candidate, no variation, the statements that have sample inputs: what is refused below is the judge's
    # mode, the same for every cell (test_experiments.GRID's two candidates at two temperatures drew four times the
    # report's figures for it).
    experiment = tmp_path / "exp.yaml"
    experiment.write_text(
        f"experiment_name: cats\noutput_dir: out\nspecs:\n  - name: openai\n"
        f"    spec_path: {trimmed_spec(tmp_path / 'spec' / SAMPLE_SPEC.name)}\n    inputs_dir: {SAMPLE_INPUTS}\n"
        "candidates:\n  - model: gpt-4.1-mini-2025-04-14\n"
        "judges:\n  - model: gpt-4.1-2025-04-14\n    mode: categories\n"
        "    categories: {refuses: says no, helps: answers}\nstages: [generation, compliance, report]\n"
        "min_canary_accuracy: 0.8\n"
    )
    assert speceval_main(["run", str(experiment), "--offline"]) == 0
    assert "min_canary_accuracy checked nothing" in " ".join(capsys.readouterr().err.split())
    sheet = tmp_path / "labels.csv"
    assert speceval_main(["label-sheet", str(tmp_path / "out"), "--n", "5", "--out", str(sheet)]) == 2
    assert "judges are categorical" in " ".join(capsys.readouterr().err.split()) and not sheet.exists()
    assert (
        speceval_main(
            # No figures: the experiment's own report drew them; the command's warning is what is asked here.
            ["report", str(tmp_path / "out"), "--out", str(tmp_path / "again"), "--min-canary-accuracy", "0.8"]
            + ["--no-figures"]
        )
        == 0
    )
    assert "--min-canary-accuracy checked nothing" in " ".join(capsys.readouterr().err.split())


def test_per_turn_verdicts_are_their_own_items_and_likert_verdicts_are_offered(tmp_path: Path, capsys) -> None:
    import json

    root = tmp_path / "runs"
    write_run(root, "c1", "m1", 0.0, [True, False])
    whole = {item_id(r) for r in load_verdicts([root]).compliance}
    # The same judge folder judged per turn: two turns of each answer, each with its own verdict and item.
    for path in root.glob("judge_j/c1/results/*.json"):
        data = json.loads(path.read_text())
        data["results"] = [{**entry, "turn": turn} for entry in data["results"] for turn in (1, 2)]
        path.write_text(json.dumps(data))
    turn_rows = load_verdicts([root]).compliance
    turns = {item_id(r) for r in turn_rows}
    assert len(turns) == len(turn_rows) == 2 * len(whole) and not turns & whole  # a turn is never its answer
    sheet = tmp_path / "labels.csv"
    sheet.write_text(_sheet([(item_id(turn_rows[0]), "yes", "")]))
    assert read_labels(sheet, turn_rows) == {item_id(turn_rows[0]): True}
    # A Likert judge's rating is read against a label by its canaries' rule (tests/analysis/test_likert_labels.py):
    # its turns are offered and a label of one is accepted, as the same item.
    for path in root.glob("judge_j/c1/results/*.json"):
        data = json.loads(path.read_text())
        data["metadata"]["mode"] = "likert"
        data["results"] = [{**entry, "compliant": None, "rating": 4} for entry in data["results"]]
        path.write_text(json.dumps(data))
    assert speceval_main(["label-sheet", str(root), "--n", "3", "--out", str(tmp_path / "l.csv")]) == 0
    capsys.readouterr()
    likert_rows = load_verdicts([root]).compliance
    assert {item_id(r) for r in likert_rows} == turns
    assert read_labels(sheet, likert_rows) == {item_id(turn_rows[0]): True}


def test_a_cell_longer_than_the_csv_modules_default_limit_is_read(tmp_path: Path) -> None:
    """Issue 42: `report --labels` crashed ("field larger than field limit") on a sheet speceval wrote whose
    transcript cell held 425 KB."""
    csv.field_size_limit(131_072)  # the module's default, whatever an earlier test in this process set
    root, items = _folder(tmp_path)
    sheet = tmp_path / "labels.csv"
    long_transcript = "user: " + "tell me more " * 35_000  # 425 KB
    sheet.write_text(_sheet([(items[0], "yes", long_transcript), (items[1], "no", "")]), encoding="utf-8")
    labels = read_labels(sheet, load_verdicts([root]).compliance)
    assert len(labels) == 2
