"""Results as pandas data frames: one row per verdict, answer and comparison, typed columns, labelled with the
experiment's variation and run; the report's tables by name equal its CSVs. Counted against the files themselves
(read with `json`, not speceval's readers)."""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest

import speceval
from speceval.cli.main import main as speceval_main
from speceval.errors import ConfigError, InputError
from tests.conftest import write_inputs, write_spec
from tests.once import built_once

EXPERIMENT = """experiment_name: frames
output_dir: out
specs:
  - name: openai
    spec_path: SPEC
    inputs_dir: INPUTS
candidates:
  - model: gpt-4.1-mini-2025-04-14
  - model: claude-haiku-4-5-20251001
judges:
  - model: gpt-4.1-2025-04-14
variations:
  temperature: [0.0, 0.7]
runs_per_variation: 2
"""


@pytest.fixture(scope="session")
def experiment(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> Path:
    """A small offline experiment (two statements of two inputs): two candidates, two variations, two runs. Built
    once per session (tests/once.py): the tests read it and write only under their own `tmp_path`."""

    def build(root: Path) -> Path:
        spec = write_spec(root / "spec.jsonl", ["be_honest", "be_kind"])
        inputs = write_inputs(root / "inputs", {"be_honest": ["Is the sky green?", "2+2?"], "be_kind": ["Hi", "Help"]})
        text = EXPERIMENT.replace("output_dir: out", f"output_dir: {root / 'out'}")
        (root / "exp.yaml").write_text(text.replace("SPEC", str(spec)).replace("INPUTS", str(inputs)))
        assert speceval_main(["run", str(root / "exp.yaml"), "--offline"]) == 0
        return root / "out"

    return built_once(tmp_path_factory, worker_id, "frames-experiment", build)


def _files(root: Path, key: str) -> list[tuple[Path, dict]]:
    found = []
    for file in sorted(root.rglob("results/*.json")):
        data = json.loads(file.read_text())
        if isinstance(data, dict) and key in data and "canaries" not in data:
            found.append((file, data))
    return found


def _place(file: Path, root: Path) -> tuple[str, int]:
    """(variation, run) from the experiment's layout `<stage>/<spec>/<variation folder>/run<k>/...` and the
    folder → variation names its experiment.json records."""
    names = {folder: name for name, folder in json.loads((root / "experiment.json").read_text())["folders"].items()}
    parts = file.relative_to(root).parts
    return names[parts[2]], int(parts[3].removeprefix("run"))


@pytest.mark.slow  # one small offline experiment, about a minute on the shared machine
def test_read_verdicts_gives_one_typed_row_per_verdict(experiment: Path) -> None:
    frame = speceval.read_verdicts(experiment)
    assert isinstance(frame, pd.DataFrame)
    files = _files(experiment, "results")
    expected: Counter[tuple[str, str, str, int, str, str]] = Counter()
    for file, data in files:
        variation, run = _place(file, experiment)
        meta = data["metadata"]
        for entry in data["results"]:
            expected[(meta["judge"], meta["model"], variation, run, meta["statement_id"], entry["input"])] += 1
    assert len(frame) == sum(expected.values()) > 0
    got = Counter(
        zip(
            frame["judge"],
            frame["candidate"],
            frame["variation"],
            frame["run"],
            frame["statement_id"],
            frame["input"],
            strict=True,
        )
    )
    assert got == expected
    assert set(frame["variation"]) == {"temperature_0.0", "temperature_0.7"} and set(frame["run"]) == {1, 2}
    assert str(frame["run"].dtype) == "Int64" and str(frame["compliant"].dtype) == "boolean"
    assert frame["spec"].dtype == "category" and set(frame["data"]) == {"synthetic"}
    assert frame["turn"].isna().all()  # whole answers, not turns of a conversation
    judged = frame[frame["outcome"] == "judged"]
    assert judged["compliant"].notna().all() and len(judged) > 0


@pytest.mark.slow  # one small offline experiment, about a minute on the shared machine
def test_read_rankings_and_answers_give_one_row_per_record(experiment: Path) -> None:
    rankings = speceval.read_rankings(experiment)
    comparisons = _files(experiment, "rankings")
    assert len(rankings) == sum(len(d["rankings"]) for _, d in comparisons) > 0
    assert set(rankings["run"]) == {1, 2} and set(rankings["candidate_a"]) == {
        "gpt-4.1-mini-2025-04-14",
        "claude-haiku-4-5-20251001",
    }
    answers = speceval.read_answers(experiment)
    records = [
        (f, r)
        for f in sorted(experiment.rglob("generations/**/results/*.json"))
        for r in json.loads(f.read_text())
        if isinstance(r, dict) and "output_text" in r
    ]
    assert len(answers) == len(records) > 0
    assert Counter(zip(answers["variation"], answers["run"], strict=True)) == Counter(
        _place(f, experiment) for f, _ in records
    )
    assert list(answers["output"]) == [r["output_text"] for _, r in records]


@pytest.mark.slow  # one small offline experiment, about a minute on the shared machine
def test_report_tables_are_the_reports_csvs(experiment: Path) -> None:
    tables = speceval.report_tables(experiment)
    report = experiment / "report"
    assert {"compliance", "win_rates", "position_consistency"} <= set(tables)
    for name in ("compliance", "win_rates"):
        csv = pd.read_csv(report / f"{name}.csv")
        assert list(tables[name].columns) == list(csv.columns)
        assert len(tables[name]) == len(csv) > 0
        assert list(tables[name]["candidate"]) == list(csv["candidate"])


@pytest.mark.parametrize("reader", ["read_verdicts", "read_answers", "read_rankings", "report_tables"])
def test_without_pandas_the_error_names_the_extra(reader: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pandas", None)  # `import pandas` raises ImportError
    with pytest.raises(ConfigError, match=r"pip install 'speceval\[frames\]'"):
        getattr(speceval, reader)(tmp_path)


@pytest.mark.slow  # the small offline experiment above, exported and read back
def test_an_original_export_reads_back_with_its_variations_runs_and_position_consistency(
    experiment: Path, tmp_path: Path
) -> None:
    out = tmp_path / "original"
    assert speceval_main(["export", str(experiment), "--format", "original", "--out", str(out)]) == 0
    native, back = speceval.read_verdicts(experiment), speceval.read_verdicts(out)
    key = ["judge", "candidate", "variation", "run", "statement_id", "input", "compliant"]
    assert Counter(map(tuple, back[key].astype(object).values)) == Counter(
        map(tuple, native[key].astype(object).values)
    )
    rankings = ["judge", "candidate_a", "candidate_b", "variation", "run", "statement_id", "input", "rank"]
    native_r, back_r = speceval.read_rankings(experiment), speceval.read_rankings(out)
    assert Counter(map(tuple, back_r[rankings].astype(object).values)) == Counter(
        map(tuple, native_r[rankings].astype(object).values)
    )
    # Position consistency per run: the export's, read back, is the experiment's own (not one pooled run at 1.0).
    columns = ["variation", "run", "runs", "consistent", "compared"]
    native_pc = speceval.report_tables(experiment)["position_consistency"][columns].fillna({"run": 0})
    back_pc = speceval.report_tables(out)["position_consistency"][columns].fillna({"run": 0})
    assert len(native_pc) == 6 and (native_pc["run"] == 0).sum() == 2  # 2 variations x 2 runs, each pooled
    assert sorted(map(tuple, back_pc.values)) == sorted(map(tuple, native_pc.values))


def _sorted(frame: pd.DataFrame) -> pd.DataFrame:
    plain = frame.astype(object).where(frame.notna(), None)
    return plain.sort_values(list(plain.columns)).reset_index(drop=True)


@pytest.mark.slow  # the small offline experiment above, exported and read back
@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_a_flat_export_reads_back_as_the_folders_own_frames(experiment: Path, tmp_path: Path, fmt: str) -> None:
    """The round trip of a researcher sent only the export: `read_verdicts` and `read_rankings` of the file equal the
    folder's, every column and type (the candidate's settings included: the export now carries them). Given the
    file, both returned an empty frame without a word."""
    out = tmp_path / f"verdicts.{fmt}"
    assert speceval_main(["export", str(experiment), "--format", fmt, "--out", str(out)]) == 0
    for reader in (speceval.read_verdicts, speceval.read_rankings):
        native, back = reader(experiment), reader(out)
        assert len(native) > 0 and list(back.dtypes) == list(native.dtypes)
        pd.testing.assert_frame_equal(_sorted(back), _sorted(native))


def test_a_file_that_is_not_an_export_is_refused_by_name(tmp_path: Path) -> None:
    notes = tmp_path / "notes.csv"
    notes.write_text("a,b\n1,2\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"notes\.csv: a file, and not a speceval export"):
        speceval.read_verdicts(notes)
    rows = tmp_path / "rows.jsonl"
    rows.write_text('{"spec": "s"}\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"rows\.jsonl, line 1, field 'kind': row 1 is not a row of `speceval export`"):
        speceval.read_verdicts(rows)
    rows.write_text('{"kind": "compliance", "spec": "s", "judge": "j", "candidate": "c"}\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"rows\.jsonl, line 1, field 'statement_id': row 1 has no statement_id"):
        speceval.read_verdicts(rows)
    with pytest.raises(InputError, match=r"holds verdicts, each with the answer it judged"):
        speceval.read_answers(rows)
