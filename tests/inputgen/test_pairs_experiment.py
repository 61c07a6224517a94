"""An experiment's `inputs:` `pairs:` key (issue 38): pairs asked by id, or `related` (each statement with its
`related_statements`), are generated beside every statement's own inputs and written into both statements' files;
a pair that is not two ids is an error naming the key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from speceval.cli.main import main as speceval_main

SPEC_LINES = [
    {"id": "rule_0", "text": "Rule number 0.", "related_statements": ["rule_1", "not_in_spec"]},
    {"id": "rule_1", "text": "Rule number 1."},
    {"id": "rule_2", "text": "Rule number 2."},
]


def _experiment(tmp_path: Path, pairs: str) -> Path:
    (tmp_path / "spec.jsonl").write_text("".join(json.dumps(line) + "\n" for line in SPEC_LINES), encoding="utf-8")
    path = tmp_path / "exp.yaml"
    path.write_text(
        f"""experiment_name: tension
output_dir: out
specs:
  - name: tiny
    spec_path: spec.jsonl
inputs:
  generator: gpt-4.1-2025-04-14
  rater: claude-sonnet-4-6
  per_statement: 2
  rating_threshold: 1  # every rated proposal is kept: the test is about pairs, not the synthetic ratings
  pairs: {pairs}
candidates:
  - model: gpt-4.1-mini-2025-04-14
stages: [inputs]
""",
        encoding="utf-8",
    )
    return path


@pytest.mark.parametrize("pairs", ["[[rule_1, rule_0]]", "related"])
def test_pairs_are_generated_beside_every_statement_and_written_into_both_files(
    tmp_path: Path, pairs: str, capsys: pytest.CaptureFixture[str]
):
    assert speceval_main(["run", str(_experiment(tmp_path, pairs)), "--offline"]) == 0, capsys.readouterr().err
    [candidates] = (tmp_path / "out").rglob("candidates.jsonl")
    inputs = candidates.parent / "inputs"
    files = {p.stem: json.loads(p.read_text(encoding="utf-8")) for p in inputs.iterdir()}
    assert set(files) == {"rule_0", "rule_1", "rule_2"}  # every statement's own inputs, as without pairs
    assert files["rule_2"]["metadata"]["pairs"] == []
    texts = []
    for statement, other in (("rule_0", "rule_1"), ("rule_1", "rule_0")):
        [record] = files[statement]["metadata"]["pairs"]
        assert record["other"] == other and set(record["pair"]) == {"rule_0", "rule_1"}
        own = len(files[statement]["inputs"]) - len(record["indices"])
        assert own >= 1 and record["indices"] == list(range(own, own + len(record["indices"])))  # after its own
        texts.append([files[statement]["inputs"][i] for i in record["indices"]])
    assert texts[0] == texts[1] and texts[0]
    fates = {json.loads(line)["statement_id"] for line in candidates.read_text(encoding="utf-8").splitlines()}
    assert fates == {"rule_0", "rule_1", "rule_2", "rule_1+rule_0" if pairs != "related" else "rule_0+rule_1"}


def test_a_pair_that_is_not_two_ids_is_an_error_naming_the_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    assert speceval_main(["run", str(_experiment(tmp_path, "[[rule_0]]")), "--offline"]) == 2
    err = capsys.readouterr().err
    assert "inputs.pairs" in err and not (tmp_path / "out").exists()


@pytest.mark.parametrize("pairs", ["[[rule_0, nope]]", "[[rule_1, rule_1]]"])
def test_a_pair_the_spec_cannot_make_is_refused_before_the_folder_exists(
    tmp_path: Path, pairs: str, capsys: pytest.CaptureFixture[str]
):
    """Issue 42: exit 2 came from the inputs stage, after the experiment's folder and log were written, and named
    `--pair`, a flag the user never gave."""
    experiment = _experiment(tmp_path, pairs)
    assert speceval_main(["run", str(experiment), "--offline"]) == 2
    err = " ".join(capsys.readouterr().err.split())
    line = experiment.read_text().splitlines().index(f"  pairs: {pairs}") + 1
    assert f"line {line}, field 'inputs.pairs'" in err and "--pair" not in err, err
    assert not (tmp_path / "out").exists()
