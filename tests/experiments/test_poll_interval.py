"""`speceval run` reads `$SPECEVAL_POLL_INTERVAL` as the other commands do: it wins over the file's
`engine.poll_interval`, and a bad value exits 2 naming the variable before anything is written."""

from __future__ import annotations

import json
from pathlib import Path

from speceval.cli.main import main as speceval_main
from tests.experiments import one_input_experiment


def experiment(tmp_path: Path) -> Path:
    return one_input_experiment(
        tmp_path,
        "poll",
        """candidates:
  - model: gpt-4.1-mini-2025-04-14
stages: [generation]
engine:
  poll_interval: 30
""",
    )


def test_the_variable_wins_over_the_file(tmp_path, monkeypatch):
    monkeypatch.setenv("SPECEVAL_POLL_INTERVAL", "0.05")
    assert speceval_main(["run", str(experiment(tmp_path)), "--offline"]) == 0
    [manifest] = (tmp_path / "out" / "generations").rglob("run.json")
    assert json.loads(manifest.read_text())["parameters"]["engine"]["poll_interval"] == 0.05


def test_without_the_variable_the_file_decides(tmp_path, monkeypatch):
    monkeypatch.delenv("SPECEVAL_POLL_INTERVAL", raising=False)
    path = experiment(tmp_path)
    path.write_text(path.read_text().replace("poll_interval: 30", "poll_interval: 0.1"))
    assert speceval_main(["run", str(path), "--offline"]) == 0
    [manifest] = (tmp_path / "out" / "generations").rglob("run.json")
    assert json.loads(manifest.read_text())["parameters"]["engine"]["poll_interval"] == 0.1


def test_a_bad_value_exits_2_naming_the_variable_and_leaves_nothing(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SPECEVAL_POLL_INTERVAL", "-5")
    assert speceval_main(["run", str(experiment(tmp_path)), "--offline"]) == 2
    assert "SPECEVAL_POLL_INTERVAL must be greater than 0 (got -5)" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
