"""A realtime run's recorded settings are checked with the flags' ranges when the run is resumed."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import cli_env, only_run_dir, run_generation, write_inputs, write_spec


def test_an_out_of_range_pace_in_run_json_is_refused_on_resume_naming_where_it_is(tmp_path: Path) -> None:
    spec = write_spec(tmp_path / "spec.jsonl", ["alpha"])
    inputs = write_inputs(tmp_path / "inputs", {"alpha": ["a0", "a1"]})
    done = run_generation(
        [
            "--offline",
            "--org",
            "openai-compatible",
            "--model-name",
            "local-model",
            "--spec-path",
            str(spec),
            "--pregenerated-inputs-dir",
            str(inputs),
            "--output-base-dir",
            str(tmp_path / "gen"),
        ],
        cli_env(),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    run_dir = only_run_dir(tmp_path / "gen")
    manifest = json.loads((run_dir / "run.json").read_text())
    manifest["parameters"]["realtime"]["max_concurrency"] = 0
    (run_dir / "run.json").write_text(json.dumps(manifest))
    again = run_generation(["--resume", str(run_dir)], cli_env())
    assert again.returncode == 2
    assert "run.json parameters.realtime.max_concurrency: must be at least 1 (got 0)" in again.stderr
