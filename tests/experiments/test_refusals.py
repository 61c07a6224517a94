"""An experiment file with a mistake exits 2 naming file, line and field, before anything is written (no log, no
experiment.json, no run.json) or submitted; an offline folder is never continued against a provider, or the
reverse."""

from __future__ import annotations

import time

import pytest

from speceval.cli.main import main as speceval_main
from tests.experiments.test_experiments import GRID


def line_of(text: str, needle: str, occurrence: int = 1) -> int:
    lines = [n for n, line in enumerate(text.splitlines(), 1) if needle in line]
    return lines[occurrence - 1]


NO_JUDGES = GRID.replace("judges:\n  - model: gpt-4.1-2025-04-14\n", "")
CASES = {
    "runs_per_variation twice": (GRID + "runs_per_variation: 3\n", "runs_per_variation", 2, "given twice"),
    "variation name twice": (
        GRID.replace("  temperature: [0.0, 0.7]\n", "  system_prompt:\n    plain: A\n    plain: B\n"),
        "plain: B",
        1,
        "given twice",
    ),
    "runs as a boolean": (
        GRID.replace("runs_per_variation: 2", "runs_per_variation: true"),
        "runs_per_variation",
        1,
        "valid integer",
    ),
    "runs beyond any study": (
        GRID.replace("runs_per_variation: 2", "runs_per_variation: 100000000000"),
        "runs_per_variation",
        1,
        "less than or equal to 10000",
    ),
    "empty output_dir": (GRID.replace("output_dir: out", "output_dir: ''"), None, None, "output_dir is empty"),
    "empty axis": (GRID.replace("temperature: [0.0, 0.7]", "temperature: []"), "temperature", 1, "at least 1"),
    "judging without judges": (
        NO_JUDGES.replace("runs_per_variation: 2", "runs_per_variation: 2\nstages: [generation, compliance]"),
        "stages",
        1,
        "need judges",
    ),
    "candidate twice": (
        GRID.replace("  - model: claude-haiku-4-5-20251001\n", "  - model: gpt-4.1-mini-2025-04-14\n"),
        "gpt-4.1-mini-2025-04-14",
        2,
        "repeats candidates[0]",
    ),
    "nested typo": (GRID.replace("inputs_dir:", "inputs_dri:"), "inputs_dri", 1, "unknown key"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_mistake_exits_2_with_its_line_and_leaves_nothing(tmp_path, capsys, case):
    text, needle, occurrence, message = CASES[case]
    experiment = tmp_path / "exp.yaml"
    experiment.write_text(text)
    started = time.monotonic()
    assert speceval_main(["run", str(experiment), "--offline"]) == 2
    assert time.monotonic() - started < 60  # a huge count is refused, not planned
    err = capsys.readouterr().err
    assert message in err and str(experiment) in err
    if needle is not None:
        assert f"line {line_of(text, needle, occurrence)}" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["exp.yaml"]


def test_no_api_keys_exits_2_naming_the_variable_and_leaves_no_file(tmp_path, capsys, monkeypatch):
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    experiment = tmp_path / "exp.yaml"
    experiment.write_text(GRID)
    assert speceval_main(["run", str(experiment)]) == 2
    err = capsys.readouterr().err
    assert "OPENAI_API_KEY" in err and "--offline" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["exp.yaml"]


def test_an_offline_folder_is_not_continued_without_offline(tmp_path, capsys, monkeypatch):
    experiment = tmp_path / "exp.yaml"
    experiment.write_text(
        GRID.replace("runs_per_variation: 2", "runs_per_variation: 1").replace(
            "  temperature: [0.0, 0.7]\n", "  temperature: [0.0]\n"
        )
    )
    assert speceval_main(["run", str(experiment), "--offline"]) == 0
    capsys.readouterr()
    before = sorted(str(p) for p in (tmp_path / "out").rglob("metadata/*.json"))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-not-a-real-key")
    assert speceval_main(["run", str(experiment)]) == 2
    err = capsys.readouterr().err
    assert "--offline" in err and "synthetic" in err
    assert sorted(str(p) for p in (tmp_path / "out").rglob("metadata/*.json")) == before  # no job created


def test_an_experiment_folder_started_against_providers_is_not_continued_offline(tmp_path, capsys):
    experiment = tmp_path / "exp.yaml"
    experiment.write_text(GRID)
    out = tmp_path / "out"
    out.mkdir()
    import hashlib

    from speceval.experiments.state import ExperimentState, save_state

    digest = hashlib.sha256(experiment.read_bytes()).hexdigest()
    save_state(
        out,
        ExperimentState(experiment_name="grid", config_sha256=digest, variations={}, generation_runs=[], offline=False),
    )
    assert speceval_main(["run", str(experiment), "--offline"]) == 2
    assert "drop --offline" in capsys.readouterr().err
    assert sorted(p.name for p in out.iterdir()) == ["experiment.json"]


def test_a_temperature_claude_never_received_is_reported_as_not_sent(tmp_path, capsys):
    experiment = tmp_path / "exp.yaml"
    experiment.write_text(
        GRID.replace("runs_per_variation: 2", "runs_per_variation: 1").replace(
            "  temperature: [0.0, 0.7]\n", "  temperature: [0.7]\n"
        )
    )
    assert speceval_main(["run", str(experiment), "--offline"]) == 0
    capsys.readouterr()
    import json

    manifests = {
        json.loads(p.read_text())["model_name"]: json.loads(p.read_text())
        for p in (tmp_path / "out" / "generations").rglob("run.json")
    }
    claude = manifests["claude-haiku-4-5-20251001"]["parameters"]
    assert claude["params"]["temperature"] == 0.7  # asked for
    assert str(claude["sent"]["temperature"]).startswith("not sent")  # never on the wire (API version refuses it)
    assert manifests["gpt-4.1-mini-2025-04-14"]["parameters"]["sent"]["temperature"] == 0.7
    lines = [
        json.loads(line)
        for p in (tmp_path / "out").rglob("preprocessed/*.jsonl")
        for line in p.read_text().splitlines()
    ]
    claude_requests = [line["params"] for line in lines if "params" in line]
    assert claude_requests and not any("temperature" in params for params in claude_requests)
    [summary] = (tmp_path / "out").rglob("summary.md")
    text = summary.read_text(encoding="utf-8")
    assert "SYNTHETIC" in text.splitlines()[0]
    sent_rows = [line for line in text.splitlines() if "claude-haiku-4-5" in line and "not sent" in line]
    assert sent_rows and "generation" in sent_rows[0]
    [page] = (tmp_path / "out").rglob("report.html")
    assert "not sent" in page.read_text(encoding="utf-8")


def test_status_labels_an_experiments_runs_with_their_variation_and_run(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    experiment = tmp_path / "exp.yaml"
    experiment.write_text(GRID.replace("runs_per_variation: 2", "runs_per_variation: 2\nstages: [generation]"))
    assert speceval_main(["run", str(experiment), "--offline"]) == 0
    capsys.readouterr()
    assert speceval_main(["status", "--no-refresh", str(tmp_path / "out")]) == 0
    shown = capsys.readouterr().out
    headings = [line for line in shown.splitlines() if "generation ·" in line]
    assert len(headings) == 8 and len(set(headings)) == 8  # 2 candidates × 2 variations × 2 runs, all told apart
    for variation in ("temperature_0.0", "temperature_0.7"):
        for run in (1, 2):
            assert sum(f"variation {variation} · run {run}]" in h for h in headings) == 2


def test_a_misspelt_judge_exits_2_naming_the_closest_served_name_before_any_job(tmp_path, capsys):
    experiment = tmp_path / "exp.yaml"
    text = GRID.replace("  - model: gpt-4.1-2025-04-14\n", "  - model: gpt-4.1-2025-04-41\n")
    experiment.write_text(text)
    assert speceval_main(["run", str(experiment), "--offline"]) == 2
    err = capsys.readouterr().err
    assert "gpt-4.1-2025-04-41" in err and "gpt-4.1-2025-04-14" in err
    assert f"line {line_of(text, 'gpt-4.1-2025-04-41')}" in err and "judges[0].model" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["exp.yaml"]


def test_a_misspelt_candidate_is_refused_against_the_providers_own_list(tmp_path, capsys, monkeypatch):
    from speceval.cli.generation import main as generation_main
    from speceval.emulator import Emulator
    from tests.conftest import SAMPLE_INPUTS, SAMPLE_SPEC

    with Emulator() as emu:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", emu.anthropic_base_url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-list")
        code = generation_main(
            [
                "--spec-path",
                str(SAMPLE_SPEC),
                "--pregenerated-inputs-dir",
                str(SAMPLE_INPUTS),
                "--model-name",
                "claude-sonet-4-6",
                "--output-base-dir",
                str(tmp_path / "out"),
            ]
        )
        created = emu.stats.batches_created.get("anthropic", 0)
        listed = emu.stats.requests.get("GET /anthropic/v1/models", 0)
    err = capsys.readouterr().err
    assert code == 2 and created == 0 and listed == 1
    assert "claude-sonet-4-6" in err and "claude-sonnet-4-6" in err
    assert not (tmp_path / "out").exists()


def test_a_misspelt_judge_command_is_refused_before_anything_is_written(tmp_path, capsys, monkeypatch):
    from speceval.cli.generation import main as generation_main
    from speceval.cli.judge import compliance_main
    from tests.conftest import REPO, SAMPLE_INPUTS, SAMPLE_SPEC

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
    capsys.readouterr()
    monkeypatch.chdir(REPO)
    code = compliance_main(
        [
            "--config-file",
            str(REPO / "batched_examples/configs/compliance_offline.yaml"),
            "--offline",
            "--candidate-generation-dirs",
            str(run_dir),
            "--compliance-judge-model-name",
            "gpt-4.1-2025-04-41",
            "--output-dir-base",
            str(tmp_path / "judged"),
        ]
    )
    err = capsys.readouterr().err
    assert code == 2 and "gpt-4.1-2025-04-14" in err
    assert not (tmp_path / "judged").exists()
