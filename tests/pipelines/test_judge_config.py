"""Judge YAML configs: unknown keys are errors with file and line; a flag that was given overrides the YAML."""

from __future__ import annotations

from pathlib import Path

import pytest

from speceval.cli.judge import build_parser, compliance_main, ranking_main
from speceval.cli.judge_command import resolve_settings
from tests.pipelines.helpers import JUDGE, make_run, write_spec


@pytest.fixture
def config(tmp_path: Path) -> Path:
    spec = write_spec(tmp_path / "spec.jsonl", ["s1"])
    run = make_run(tmp_path / "gen", "cand", spec, {"s1": ["a"]})
    path = tmp_path / "c.yaml"
    path.write_text(
        f"spec_path: {spec}\ncandidate_generation_dirs:\n  - {run}\ncompliance_judge_model_name: {JUDGE}\n"
        f"batch_size: 7\ntemperature: 0.5\nverbose: true\nmode: likert\noutput_dir_base: {tmp_path / 'out'}\n"
    )
    return path


def settings(argv: list[str]):
    return resolve_settings(build_parser("compliance").parse_args(argv), "compliance")


def test_yaml_values_apply_and_only_given_flags_override_them(config: Path) -> None:
    s, candidates, file = settings(["--config-file", str(config)])
    assert (s.engine.batch_size, s.params.temperature, file.verbose, file.mode) == (7, 0.5, True, "likert")
    assert [c.name for c in candidates] == ["cand"]  # from run.json
    # Passing the default value explicitly still overrides (C5/U9): "not given" differs from "given 100".
    s, _, _ = settings(["--config-file", str(config), "--batch-size", "100", "--temperature", "0.0"])
    assert (s.engine.batch_size, s.params.temperature) == (100, 0.0)


def test_typo_key_exits_2_naming_file_line_and_key(config: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config.write_text(config.read_text() + "temprature: 0.2\n")
    assert compliance_main(["--config-file", str(config)]) == 2
    err = capsys.readouterr().err.replace("\n", "")
    assert f"{config}, line 10, field 'temprature': unknown key" in err and "temperature" in err


def test_ranking_keys_are_not_compliance_keys(config: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert ranking_main(["--config-file", str(config)]) == 2
    assert "compliance_judge_model_name" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("batch_size: -1\n", "line 1, field 'batch_size'"),
        ("mode: ternary\n", "field 'mode'"),
        ("[1, 2\n", "not valid YAML"),
        ("- a\n", "must be a mapping"),
    ],
)
def test_bad_values_exit_2(tmp_path: Path, text: str, message: str, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    assert compliance_main(["--config-file", str(path)]) == 2
    assert message in capsys.readouterr().err.replace("\n", "")


def test_candidates_without_run_json_are_named_from_their_path_unless_named_explicitly(tmp_path: Path) -> None:
    spec = write_spec(tmp_path / "spec.jsonl", ["s1"])
    run = make_run(tmp_path / "gpt-4.1-mini" / "20250509_012247", "x", spec, {"s1": ["a"]})
    (run / "run.json").unlink()
    _, candidates, _ = settings(
        [
            "--spec-path",
            str(spec),
            "--compliance-judge-model-name",
            JUDGE,
            "--candidate-generation-dirs",
            str(run / "results"),
        ]
    )
    assert [(c.name, c.results_dir, c.legacy) for c in candidates] == [("gpt-4.1-mini", run / "results", True)]
    path = tmp_path / "named.yaml"
    path.write_text(f"spec_path: {spec}\ncompliance_judge_model_name: {JUDGE}\ncandidates:\n  my-model: {run}\n")
    _, candidates, _ = settings(["--config-file", str(path)])
    assert [(c.name, c.directory) for c in candidates] == [("my-model", run)]


def test_duplicate_candidate_names_exit_2(tmp_path: Path, capsys) -> None:
    spec = write_spec(tmp_path / "spec.jsonl", ["s1"])
    runs = [str(make_run(tmp_path / f"r{i}", "same", spec, {"s1": ["a"]})) for i in range(2)]
    argv = ["--spec-path", str(spec), "--compliance-judge-model-name", JUDGE, "--candidate-generation-dirs", *runs]
    assert compliance_main(argv) == 2
    assert "both named 'same'" in capsys.readouterr().err


def test_shipped_example_configs_validate() -> None:
    from speceval.pipelines.judge_config import ComplianceFileConfig, RankingFileConfig, load_config
    from tests.conftest import REPO

    configs = REPO / "batched_examples" / "configs"
    for name, schema in (
        ("compliance_example.yaml", ComplianceFileConfig),
        ("ranking_example.yaml", RankingFileConfig),
        ("compliance_offline.yaml", ComplianceFileConfig),
        ("ranking_offline.yaml", RankingFileConfig),
    ):
        load_config(configs / name, schema)  # type: ignore[type-var]


@pytest.mark.parametrize("argv", [["--temperature", "-1"], ["--temp", "0.5"], ["--batch-size", "0"]])
def test_out_of_range_or_abbreviated_flags_exit_2_before_anything(
    tmp_path: Path, argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        compliance_main(["--output-dir-base", str(tmp_path / "out"), *argv])
    assert exit_info.value.code == 2 and not (tmp_path / "out").exists()


def test_yaml_range_errors_use_the_flag_words(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("spec_path: s.jsonl\ntemperature: 3\n")
    assert compliance_main(["--config-file", str(path)]) == 2
    assert "line 2, field 'temperature': must be between 0 and 2 (got 3" in capsys.readouterr().err.replace("\n", "")
