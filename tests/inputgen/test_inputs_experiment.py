"""The `inputs` stage of an experiment: a spec without `inputs_dir` gets its inputs generated once, shared by every
candidate, variation and run, and the report shows what was proposed, dropped and kept."""

from __future__ import annotations

import csv
import json

import pytest

from speceval.cli.main import main as speceval_main
from tests import forked

SPEC_LINES = [
    {"id": f"rule_{i}", "text": f"Rule number {i}.", "type": "requirement", "authority_level": "user"} for i in range(3)
]
EXPERIMENT = """\
experiment_name: generated
output_dir: out
specs:
  - name: tiny
    spec_path: spec.jsonl
inputs:
  generator: gpt-4.1-2025-04-14
  rater: claude-haiku-4-5-20251001
  per_statement: 3
candidates:
  - model: gpt-4.1-mini-2025-04-14
judges:
  - model: gpt-4.1-2025-04-14
variations:
  temperature: [0.0, 0.7]
runs_per_variation: 1
stages: [inputs, generation, compliance, report]
"""


@pytest.mark.slow
def test_an_experiment_generates_inputs_once_and_reports_them(tmp_path, capsys):
    (tmp_path / "spec.jsonl").write_text("".join(json.dumps(line) + "\n" for line in SPEC_LINES), encoding="utf-8")
    (tmp_path / "exp.yaml").write_text(EXPERIMENT, encoding="utf-8")
    assert speceval_main(["run", str(tmp_path / "exp.yaml"), "--offline"]) == 0
    capsys.readouterr()
    out = tmp_path / "out"
    inputs_runs = list(out.rglob("candidates.jsonl"))
    assert len(inputs_runs) == 1  # once, not per variation or run
    generated = {p.stem: json.loads(p.read_text())["inputs"] for p in (inputs_runs[0].parent / "inputs").iterdir()}
    # Every generation run (2 variations) answered exactly the generated inputs.
    runs = [p.parent for p in (out / "generations").rglob("run.json")]
    assert len(runs) == 2
    for run in runs:
        for statement_id, texts in generated.items():
            records = json.loads((run / "results" / f"{statement_id}.json").read_text())
            assert [r["input_text"] for r in records] == texts
    with (out / "report" / "inputs.csv").open(encoding="utf-8") as handle:
        rows = {r["statement_id"]: r for r in csv.DictReader(handle)}
    assert set(rows) == set(generated)
    for statement_id, row in rows.items():
        assert int(row["kept"]) == len(generated[statement_id]) and row["data"] == "synthetic"
        assert json.loads(row["ratings"])  # JSON, not a Python repr
    assert 'id="inputs"' in (out / "report" / "report.html").read_text(encoding="utf-8")
    assert "## Inputs (generated from the spec)" in (out / "report" / "summary.md").read_text(encoding="utf-8")
    # Rerun: nothing generated again, nothing paid.
    jobs = sorted(p.name for p in out.rglob("metadata/*.json"))
    assert speceval_main(["run", str(tmp_path / "exp.yaml"), "--offline"]) == 0
    assert sorted(p.name for p in out.rglob("metadata/*.json")) == jobs


def test_a_spec_without_inputs_and_without_an_inputs_block_exits_2(tmp_path, capsys):
    (tmp_path / "spec.jsonl").write_text("".join(json.dumps(line) + "\n" for line in SPEC_LINES), encoding="utf-8")
    text = EXPERIMENT.replace(
        "inputs:\n  generator: gpt-4.1-2025-04-14\n  rater: claude-haiku-4-5-20251001\n  per_statement: 3\n", ""
    )
    (tmp_path / "exp.yaml").write_text(text, encoding="utf-8")
    assert speceval_main(["run", str(tmp_path / "exp.yaml"), "--offline"]) == 2
    error = capsys.readouterr().err
    assert "specs[0].inputs_dir" in error and "exp.yaml" in error
    assert not (tmp_path / "out").exists()


def test_the_docs_offline_inputs_command_runs_as_shown(tmp_path):
    import re
    import shlex
    import subprocess
    import sys

    from tests.conftest import REPO, cli_env

    page = (REPO / "docs" / "inputs-from-a-spec.md").read_text(encoding="utf-8")
    command = next(
        line
        for block in re.findall(r"```bash\n(.*?)```", page, flags=re.S)
        for line in block.splitlines()
        if "--offline" in line
    )
    words = shlex.split(command)
    words[words.index("--output-dir") + 1] = str(tmp_path / "generated")
    assert words[:2] == ["speceval", "inputs"]
    done = forked.run(
        [sys.executable, "-m", "speceval", *words[1:]],
        cwd=REPO,
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr
    [inputs] = list((tmp_path / "generated").glob("*/input_judge/*/*/inputs"))
    kept = {p.stem: json.loads(p.read_text())["inputs"] for p in inputs.iterdir()}
    assert set(kept) == {"avoid_errors", "do_not_lie"} and all(kept.values())
    # Reported alone (no verdicts anywhere), the offline run's inputs are said to be synthetic, row by row and on top.
    from speceval.analysis.rendering.report import build_report

    report = build_report([tmp_path / "generated"], tmp_path / "report")
    with (tmp_path / "report" / "inputs.csv").open(encoding="utf-8") as handle:
        assert {row["data"] for row in csv.DictReader(handle)} == {"synthetic"}
    assert "SYNTHETIC DATA" in report.summary_path.read_text(encoding="utf-8")
