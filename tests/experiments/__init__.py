"""Helpers shared by the experiment tests."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import write_inputs, write_spec


def one_input_experiment(tmp_path: Path, name: str, rest: str) -> Path:
    """`tmp_path/exp.yaml`: an experiment over a spec of one statement with one input, output in `out`; `rest`
    (candidates, judges, stages, ...) is appended as written."""
    spec = write_spec(tmp_path / "spec.jsonl", ["a"])
    inputs = write_inputs(tmp_path / "inputs", {"a": ["x"]})
    path = tmp_path / "exp.yaml"
    path.write_text(f"""experiment_name: {name}
output_dir: out
specs:
  - name: s
    spec_path: {spec}
    inputs_dir: {inputs}
{rest}""")
    return path
