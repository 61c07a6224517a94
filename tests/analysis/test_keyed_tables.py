"""Every table the report writes is keyed in one place (issue 34 item 5): each CSV leads with its key columns in
one order, names the candidate `candidate`, and says in its `data` column what each row is made of: synthetic
(an offline run's answers or verdicts, from the judge's run or the answers' run) or a provider's."""

from __future__ import annotations

import csv
import itertools
import json
from pathlib import Path

import pytest

from speceval.analysis.rendering.data import compute
from speceval.analysis.rendering.report import build_report
from speceval.analysis.tables.keys import DATA, KEY_COLUMNS, TABLES, DataKinds, keyed_rows
from speceval.batch.costs import PriceTable
from speceval.batch.manifest import RunManifest
from speceval.cli.main import main as speceval_main
from speceval.errors import InputError, UsageError
from speceval.inputgen.records import RUN_KIND as INPUTS_RUN
from speceval.metric_spec import MetricSpec
from tests.analysis.test_report_golden import fabricate

MODEL_COLUMN = {
    "costs.csv": "the model a run called (a candidate, a judge or an inputs generator): `candidate` or "
    "`judge` beside it says which role"
}
"""Tables with a `model` column, and why (the candidate is `candidate` everywhere)."""


def write_json(path: Path, data: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")


def manifest(
    run_dir: Path, kind: str, model: str, *, spec: str = "golden", offline: bool = False, spec_path: str = "spec.jsonl"
) -> None:
    RunManifest(
        kind=kind,
        command=["test"],
        spec_name=spec,
        spec_path=spec_path,
        spec_sha256="0",
        inputs_path="x",
        inputs_sha256="0",
        model_name=model,
        provider="openai",
        offline=offline,
    ).save(run_dir)


def generation_run(
    run_dir: Path, model: str, answers: dict[str, list[tuple[str, str]]], *, spec: str = "golden", offline: bool = False
) -> Path:
    """A generation run's folder: statement → (input, answer) pairs."""
    manifest(run_dir, "generation", model, spec=spec, offline=offline)
    for statement, pairs in answers.items():
        write_json(
            run_dir / "results" / f"{statement}.json",
            [
                {
                    "original_index": i,
                    "input_text": q,
                    "output_text": a,
                    "batch_id": "b",
                    "outcome": "succeeded",
                    "error": None,
                    "usage": None,
                    "statement_id": statement,
                }
                for i, (q, a) in enumerate(pairs)
            ],
        )
    return run_dir


def compliance_file(
    path: Path,
    candidate: str,
    judge: str,
    statement: str,
    verdicts: list[dict[str, object]],
    *,
    spec: str = "golden",
    mode: str = "binary",
    candidate_dir: str = "x",
    **metadata: object,
) -> None:
    entries = [
        {"input": f"q{i}", "output": f"{candidate} a{i}", "outcome": "judged", "original_index": i, **v}
        for i, v in enumerate(verdicts)
    ]
    write_json(
        path,
        {
            "metadata": {
                "model": candidate,
                "judge": judge,
                "spec": spec,
                "statement_id": statement,
                "prompt_version": "p",
                "mode": mode,
                "batch_ids": ["b"],
                "candidate_dir": candidate_dir,
                **metadata,
            },
            "results": entries,
        },
    )


def csv_rows(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    with path.open(encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        return list(reader.fieldnames or []), list(reader)


def everything(root: Path) -> tuple[list[Path], Path]:
    """Folders from which the report writes every table it can: two binary judges on two candidates with canaries
    and rankings (the golden tree), two categorical judges, a turn judge, a generation run (metrics), an inputs
    run, and a filled label sheet."""
    runs = fabricate(root / "golden")
    extra = root / "extra" / "spec_golden"
    # The categorical judges in an experiment's layout: two variations, so that they have differences too.
    write_json(
        root / "grid" / "experiment.json", {"variations": {"v1": {}, "v2": {}}, "folders": {"v1": "v1", "v2": "v2"}}
    )
    for judge, variation in itertools.product(("cat-1", "cat-2"), ("v1", "v2")):
        compliance_file(
            root
            / "grid"
            / "judgments"
            / "golden"
            / variation
            / "run1"
            / f"judge_{judge}"
            / "cand-x"
            / "results"
            / "s1.json",
            "cand-x",
            judge,
            "s1",
            [{"category": ("flatters", "holds")[i % (2 if variation == "v1" else 3) > 0]} for i in range(6)],
            mode="categories",
            categories=["flatters", "holds"],
        )
    compliance_file(
        extra / "judge_turns" / "cand-x" / "results" / "s1.json",
        "cand-x",
        "turns",
        "s1",
        [{"compliant": i % 3 != 0, "turn": 1 + i % 2, "original_index": i // 2} for i in range(6)],
    )
    generation = generation_run(root / "extra" / "gen", "cand-x", {"s1": [(f"q{i}", f"score {i}") for i in range(6)]})
    inputs_run = root / "extra" / "inputs"
    manifest(inputs_run, INPUTS_RUN, "gpt-4.1-2025-04-14")
    (inputs_run / "candidates.jsonl").write_text(
        "".join(
            json.dumps(
                {"statement_id": "s1", "round": 1, "proposal": n, "text": f"proposal {n}", "fate": "kept", "rating": 8}
            )
            + "\n"
            for n in range(2)
        ),
        encoding="utf-8",
    )
    labels = root / "labels.csv"
    assert speceval_main(["label-sheet", str(runs), "--n", "6", "--out", str(labels)]) == 0
    _, sheet = csv_rows(labels)
    with labels.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(sheet[0]))
        writer.writeheader()
        writer.writerows({**row, "human_compliant": "yes" if n % 2 else "no"} for n, row in enumerate(sheet))
    return [runs, root / "extra", root / "grid", generation], labels


def test_every_csv_the_report_writes_leads_with_its_key_and_says_its_data_kind(tmp_path, capsys):
    paths, labels = everything(tmp_path / "data")
    capsys.readouterr()
    summary = build_report(
        paths,
        tmp_path / "report",
        labels=labels,
        metrics={"score": MetricSpec(source="answer", regex=r"score (\d+)", type="int")},
        figures=False,  # the tables are what is read here (the page's figures: tests/analysis/test_no_figures.py)
    )
    written = {p.name: p for p in summary.csv_paths}
    assert set(written) == set(TABLES)  # the walk below covers every table the report can write
    for name, path in written.items():
        header, rows = csv_rows(path)
        keys = [column for column in header if column in KEY_COLUMNS]
        assert "spec" in header and DATA in header, name
        assert header[: len(keys) + 1] == [*sorted(keys, key=KEY_COLUMNS.index), DATA], name  # keys, then data
        assert ("model" in header) == (name in MODEL_COLUMN), name
        assert rows and {row[DATA] for row in rows} == {"provider"}, name
    header, rows = csv_rows(written["compliance.csv"])
    assert "candidate" in header and all(row["compliant"].isdigit() for row in rows if row["judge"] != "panel")


def test_a_table_the_keys_do_not_name_is_refused():
    with pytest.raises(UsageError, match="TABLES"):
        keyed_rows("new_table.csv", [{"spec": "s"}], DataKinds([]))
    with pytest.raises(UsageError, match="spec"):
        keyed_rows("compliance.csv", [{"judge": "j"}], DataKinds([]))


def test_two_specs_on_the_same_statement_ids_are_two_metric_rows(tmp_path):
    # Two specs share statement ids and inputs; one scores 2 everywhere, the other 8. Pooled, they were one row,
    # mean 5.0 with the interval [5.0, 5.0] (every input cluster held one 2 and one 8).
    answers = {f"s{k}": [(f"q{i}", "") for i in range(5)] for k in range(3)}
    for spec, score in (("alpha", 2), ("beta", 8)):
        generation_run(
            tmp_path / "runs" / spec,
            "cand",
            {s: [(q, f"score {score} {i}") for i, (q, _) in enumerate(pairs)] for s, pairs in answers.items()},
            spec=spec,
        )
        for s in answers:  # the judge's raw answers carry a score too: `judge:<model>` metrics are per spec
            compliance_file(
                tmp_path / "runs" / f"j_{spec}" / "results" / f"{s}.json",
                "cand",
                "judge",
                s,
                [{"compliant": True, "raw_judge_response": f"risk {score}"} for _ in range(5)],
                spec=spec,
            )
    metrics = {
        "score": MetricSpec(source="answer", regex=r"score (\d+)", type="int"),
        "risk": MetricSpec(source="judge:judge", regex=r"risk (\d+)", type="int"),
    }
    report = build_report([tmp_path / "runs"], tmp_path / "report", metrics=metrics, figures=False)
    _, rows = csv_rows(tmp_path / "report" / "metrics.csv")
    found = {(r["metric"], r["spec"]): (float(r["mean"]), int(r["n"])) for r in rows}
    assert found == {
        ("score", "alpha"): (2.0, 15),
        ("score", "beta"): (8.0, 15),
        ("risk", "alpha"): (2.0, 15),
        ("risk", "beta"): (8.0, 15),
    }
    assert {r.source for r in report.data.metrics} == {"answer", "judge:judge"}


def offline_answers_judged_by_a_provider(root: Path, *, recorded: bool) -> Path:
    """cand-x's answers come from an offline run, cand-y's from a provider; the judge ran against a provider.
    `recorded`: the judge's files say so (`answers_synthetic`); else only the answers' run.json does."""
    for candidate, offline in (("cand-x", True), ("cand-y", False)):
        gen = generation_run(
            root / "gen" / candidate, candidate, {"s1": [(f"q{i}", "a") for i in range(4)]}, offline=offline
        )
        judge_dir = root / "judged" / "spec_golden" / "judge_j" / candidate
        manifest(judge_dir, "compliance", "j")
        extra = {"answers_synthetic": offline} if recorded else {}
        compliance_file(
            judge_dir / "results" / "s1.json",
            candidate,
            "j",
            "s1",
            [{"compliant": i != 0} for i in range(4)],
            candidate_dir=str(gen),
            **extra,
        )
    return root / "judged"


@pytest.mark.parametrize("recorded", [True, False])
def test_a_provider_judge_over_offline_answers_is_synthetic_row_by_row(tmp_path, recorded):
    judged = offline_answers_judged_by_a_provider(tmp_path, recorded=recorded)
    report = build_report([judged], tmp_path / "report", figures=False)  # tables and banners are read, no figure
    _, rows = csv_rows(tmp_path / "report" / "compliance.csv")
    assert {row["candidate"]: row["data"] for row in rows} == {"cand-x": "synthetic", "cand-y": "provider"}
    _, paired = csv_rows(tmp_path / "report" / "paired_comparisons.csv")
    assert [row["data"] for row in paired] == ["mixed"]  # cand-x against cand-y: both kinds
    _, costs = csv_rows(tmp_path / "report" / "costs.csv")
    assert {row["data"] for row in costs} == {"provider"}  # the judge's runs were paid to a provider
    assert report.data.data_kind == "mixed" and report.data.data_banner is not None
    for page in (report.summary_path, report.html_path):
        assert "MIXED DATA" in page.read_text(encoding="utf-8")
    exported = tmp_path / "verdicts.jsonl"
    assert speceval_main(["export", str(judged), "--out", str(exported)]) == 0
    flags = {json.loads(line)["candidate"]: json.loads(line)["synthetic"] for line in exported.read_text().splitlines()}
    assert flags == {"cand-x": True, "cand-y": False}
    pq = pytest.importorskip("pyarrow.parquet")  # the `parquet` extra
    assert speceval_main(["export", str(judged), "--format", "parquet", "--out", str(tmp_path / "v.parquet")]) == 0
    table = pq.read_table(tmp_path / "v.parquet").to_pylist()
    assert {row["candidate"]: row["synthetic"] for row in table} == flags


def test_an_original_export_of_synthetic_verdicts_reads_back_synthetic(tmp_path):
    judged = offline_answers_judged_by_a_provider(tmp_path, recorded=True)
    for a, b in (("cand-x", "cand-y"), ("cand-y", "cand-x")):  # comparisons with one offline side: synthetic
        rankings = [
            {
                "index": i,
                "input": f"q{i}",
                "output_a": "A",
                "output_b": "B",
                "rank": 1,
                "outcome": "judged",
                "original_index_a": i,
                "original_index_b": i,
            }
            for i in range(3)
        ]
        write_json(
            judged / "spec_golden" / "judge_j" / f"{a}x{b}" / "results" / "s1.json",
            {
                "metadata": {
                    "model_a": a,
                    "model_b": b,
                    "judge": "j",
                    "spec": "golden",
                    "statement_id": "s1",
                    "prompt_version": "p",
                    "batch_ids": ["b"],
                    "candidate_dir_a": "x",
                    "candidate_dir_b": "y",
                    "answers_synthetic": True,
                },
                "rankings": rankings,
            },
        )
    assert speceval_main(["export", str(judged), "--format", "original", "--out", str(tmp_path / "original")]) == 0
    report = build_report([tmp_path / "original"], tmp_path / "report", figures=False)
    _, rows = csv_rows(tmp_path / "report" / "compliance.csv")
    assert {row["candidate"]: row["data"] for row in rows} == {"cand-x": "synthetic", "cand-y": "provider"}
    _, wins = csv_rows(tmp_path / "report" / "win_rates.csv")
    assert wins and {row["data"] for row in wins} == {"synthetic"}
    assert report.data.data_kind == "mixed"


def test_an_offline_generation_only_report_says_synthetic_in_every_table_and_at_the_top(tmp_path):
    generation_run(tmp_path / "runs" / "gen", "cand", {"s1": [("q", "score 3")]}, offline=True)
    report = build_report(
        [tmp_path / "runs"],
        tmp_path / "report",
        metrics={"score": MetricSpec(source="answer", regex=r"score (\d+)", type="int")},
        figures=False,
    )
    assert report.data.data_kind == "synthetic"
    for name in ("metrics.csv", "costs.csv"):
        _, rows = csv_rows(tmp_path / "report" / name)
        assert rows and {row["data"] for row in rows} == {"synthetic"}, name
    for page in (report.summary_path, report.html_path):
        assert "SYNTHETIC DATA" in page.read_text(encoding="utf-8")


def test_the_same_folder_twice_or_inside_another_is_counted_once(tmp_path, capsys):
    runs = fabricate(tmp_path / "data")
    generation_run(runs / "gen", "cand-x", {"s1": [("q", "score 4")]})
    metrics = {"score": MetricSpec(source="answer", regex=r"score (\d+)", type="int")}
    once = build_report([runs], tmp_path / "once", metrics=metrics, figures=False).data
    for given in ([runs, runs], [runs, runs / "spec_golden"], [runs / "spec_golden" / "judge_judge-a", runs]):
        # The report's data as build_report computes it (`compute`, its first step), without drawing the pages: what
        # is counted is compared, and the pages of each were 3 s of CPU (mostly figures) for nothing asserted here.
        again = compute(given, PriceTable.load(), metrics=metrics)
        assert [(r.judged, r.compliant) for r in again.compliance] == [(r.judged, r.compliant) for r in once.compliance]
        assert [w.games for w in again.win_rates] == [w.games for w in once.win_rates]
        assert [(m.n, len(again.costs)) for m in again.metrics] == [(m.n, len(once.costs)) for m in once.metrics]
    exported = {}
    for name, given in (("once", [runs]), ("twice", [runs, runs])):
        assert speceval_main(["export", *map(str, given), "--out", str(tmp_path / f"{name}.jsonl")]) == 0
        exported[name] = (tmp_path / f"{name}.jsonl").read_text(encoding="utf-8").count("\n")
    assert exported["twice"] == exported["once"] > 0
    capsys.readouterr()


def test_an_empty_list_among_a_judges_verdict_files_is_named(tmp_path, capsys):
    judge_dir = tmp_path / "runs" / "spec_golden" / "judge_j" / "cand"
    manifest(judge_dir, "compliance", "j")
    compliance_file(judge_dir / "results" / "s1.json", "cand", "j", "s1", [{"compliant": True}])
    write_json(judge_dir / "results" / "s2.json", [])
    generation_run(tmp_path / "runs" / "gen", "cand", {"s1": [("q", "a")]})
    write_json(tmp_path / "runs" / "gen" / "results" / "s2.json", [])  # a generation's empty statement: not verdicts
    report = build_report([tmp_path / "runs"], tmp_path / "report", figures=False)  # pages' text is read, no figure
    [skipped] = report.data.skipped
    assert skipped.startswith("spec_golden/judge_j/cand/results/s2.json: an empty JSON list")
    for page in (report.summary_path, report.html_path):
        assert "s2.json: an empty JSON list" in page.read_text(encoding="utf-8")
    capsys.readouterr()
    assert speceval_main(["report", str(tmp_path / "runs"), "--out", str(tmp_path / "again"), "--no-figures"]) == 0
    assert "Skipped (no verdicts): spec_golden/judge_j/cand/results/s2.json" in capsys.readouterr().out


@pytest.mark.parametrize(
    "entries, field, message",
    [
        (
            [{"category": "holds"}, {"category": "sycophancy"}],
            "results.1.category",
            "'sycophancy' is not one the judge",
        ),
        (
            [{"compliant": True, "turn": 1}, {"compliant": True, "turn": 0, "original_index": 1}],
            "results.1.turn",
            "turn 0",
        ),
        # answer 0 has verdicts on two turns, 1 and 3: one verdict per assistant turn, so turn 3 is past its end
        ([{"compliant": True, "turn": 1}, {"compliant": False, "turn": 3}], "results.1.turn", "turn 3 of answer 0"),
    ],
)
def test_an_impossible_verdict_is_refused_naming_its_file_and_entry(tmp_path, entries, field, message):
    categorical = "category" in entries[0]
    path = tmp_path / "runs" / "judge_j" / "cand" / "results" / "s1.json"
    verdicts = [{"original_index": 0, **e} if "turn" in e and "original_index" not in e else e for e in entries]
    compliance_file(
        path,
        "cand",
        "j",
        "s1",
        verdicts,
        mode="categories" if categorical else "binary",
        **({"categories": ["holds", "flatters"]} if categorical else {}),
    )
    with pytest.raises(InputError) as refused:
        build_report([tmp_path / "runs"], tmp_path / "report")
    assert refused.value.path == path and refused.value.field == field and message in str(refused.value)
    assert not (tmp_path / "report").exists()  # refused before anything is written
