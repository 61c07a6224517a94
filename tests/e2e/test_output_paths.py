"""An output path that cannot be a folder (it is a file, or below one) exits 2 in every command that writes, before
anything is written; files written follow the user's umask."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from speceval.cli.generation import main as generation_main
from speceval.cli.judge import compliance_main
from speceval.cli.main import main as speceval_main
from tests.analysis.test_report import compliance_file
from tests.conftest import REPO, SAMPLE_INPUTS, SAMPLE_SPEC
from tests.experiments.test_experiments import GRID


def files_under(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def commands(tmp: Path) -> dict[str, tuple[object, list[str]]]:
    blocker = tmp / "f"
    experiment = tmp / "exp.yaml"
    experiment.write_text(GRID.replace("output_dir: out", f"output_dir: {blocker}/sub"))
    results = tmp / "results"
    compliance_file(results / "c/m1/results/s1.json", "m1", "j", [True, False])
    spec_md = tmp / "spec.md"
    spec_md.write_text("# A spec\n")
    return {
        "generation": (
            generation_main,
            [
                "--offline",
                "--spec-path",
                str(SAMPLE_SPEC),
                "--pregenerated-inputs-dir",
                str(SAMPLE_INPUTS),
                "--model-name",
                "gpt-4.1-mini-2025-04-14",
                "--output-base-dir",
                str(blocker / "sub"),
            ],
        ),
        "experiment": (speceval_main, ["run", str(experiment), "--offline"]),
        "compliance judge": (
            compliance_main,
            [
                "--config-file",
                str(REPO / "batched_examples/configs/compliance_offline.yaml"),
                "--offline",
                "--candidate-generation-dirs",
                "CANDIDATE",
                "--output-dir-base",
                str(blocker / "sub"),
            ],
        ),
        "report": (speceval_main, ["report", str(results), "--out", str(blocker)]),
        "report below a file": (speceval_main, ["report", str(results), "--out", str(blocker / "sub")]),
        "export to a folder": (speceval_main, ["export", str(results), "--out", str(tmp / "results")]),
        "export below a file": (speceval_main, ["export", str(results), "--out", str(blocker / "v.jsonl")]),
        "convert-model-spec": (speceval_main, ["convert-model-spec", str(spec_md), str(blocker / "out.jsonl")]),
    }


@pytest.mark.parametrize(
    "command",
    [
        "generation",
        "experiment",
        "compliance judge",
        "report",
        "report below a file",
        "export to a folder",
        "export below a file",
        "convert-model-spec",
    ],
)
def test_an_output_path_under_a_file_exits_2_and_writes_nothing(tmp_path, capsys, command, monkeypatch):
    monkeypatch.chdir(REPO)  # the shipped judge config names its spec relative to the repository
    work = tmp_path / "work"
    work.mkdir()
    main, argv = commands(work)[command]
    if "CANDIDATE" in argv:  # a real (offline) generation run for the judge to read
        assert (
            generation_main(
                [
                    "--offline",
                    "--spec-path",
                    str(SAMPLE_SPEC),
                    "--pregenerated-inputs-dir",
                    str(SAMPLE_INPUTS),
                    "--model-name",
                    "gpt-4.1-mini-2025-04-14",
                    "--output-base-dir",
                    str(tmp_path / "gen"),
                ]
            )
            == 0
        )
        [run_dir] = [p.parent for p in (tmp_path / "gen").rglob("run.json")]
        argv = [str(run_dir) if a == "CANDIDATE" else a for a in argv]
    (work / "f").write_text("a regular file\n")
    before = files_under(work)
    assert main(argv) == 2  # type: ignore[operator]
    err = capsys.readouterr().err
    assert "unexpected failure" not in err and "cannot write here" in err or "is a folder" in err
    assert files_under(work) == before


def test_report_and_results_files_follow_the_umask(tmp_path, capsys):
    compliance_file(tmp_path / "runs/c/m1/results/s1.json", "m1", "j", [True, False])
    old = os.umask(0o022)
    try:
        assert speceval_main(["report", str(tmp_path / "runs"), "--out", str(tmp_path / "report")]) == 0
    finally:
        os.umask(old)
    capsys.readouterr()
    for name in ("report.html", "summary.md", "variation_statistics.csv"):
        mode = stat.S_IMODE((tmp_path / "report" / name).stat().st_mode)
        assert mode == 0o644, (name, oct(mode))


@pytest.mark.parametrize("content", [None, "{not json"])
def test_a_prices_file_missing_or_malformed_is_refused_even_without_a_budget(tmp_path, capsys, content):
    prices = tmp_path / "prices.json"
    if content is not None:
        prices.write_text(content)
    code = generation_main(
        [
            "--offline",
            "--spec-path",
            str(SAMPLE_SPEC),
            "--pregenerated-inputs-dir",
            str(SAMPLE_INPUTS),
            "--model-name",
            "gpt-4.1-mini-2025-04-14",
            "--output-base-dir",
            str(tmp_path / "out"),
            "--prices",
            str(prices),
        ]
    )
    assert code == 2 and str(prices) in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_a_verdict_that_is_not_a_boolean_is_refused_not_read_as_true(tmp_path):
    import json

    from speceval.analysis.reading.load import load_verdicts
    from speceval.errors import InputError

    compliance_file(tmp_path / "runs/c/m1/results/s1.json", "m1", "j", [True])
    path = tmp_path / "runs/c/m1/results/s1.json"
    data = json.loads(path.read_text())
    data["results"][0]["compliant"] = "yes"
    path.write_text(json.dumps(data))
    with pytest.raises(InputError, match="compliant"):
        load_verdicts([tmp_path / "runs"])


def test_an_experiment_in_a_symlinked_folder_writes_where_its_output_dir_resolves(tmp_path, capsys):
    """`configs/` linked to a shared folder, `output_dir: ../out`: `..` is the file system's (the shared folder's
    parent), as every file the run writes takes it. The log used to be opened at the text's parent (logging's
    abspath) where the run had made the other folder: FileNotFoundError, exit 1."""
    shared = tmp_path / "shared" / "configs"
    shared.mkdir(parents=True)
    (shared / "exp.yaml").write_text(
        GRID.replace("output_dir: out", "output_dir: ../out").replace(
            "runs_per_variation: 2", "runs_per_variation: 1\nstages: [generation]"
        )
    )
    project = tmp_path / "project"
    project.mkdir()
    (project / "configs").symlink_to(shared, target_is_directory=True)
    assert speceval_main(["run", str(project / "configs" / "exp.yaml"), "--offline"]) == 0
    said = capsys.readouterr().out.replace("\n", "")
    assert (tmp_path / "shared" / "out" / "logs" / "experiment.log").is_file()
    assert not (project / "out").exists()
    assert f"Experiment finished: {(tmp_path / 'shared' / 'out').resolve()}" in said
