"""Every check before anything is on disk: whole flag names only, ranges, and usage errors that used to be found
after the run directory existed. A refused command exits 2 and leaves no run folder."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
from pydantic import BaseModel, ValidationError

from batched_examples import together_batch_inference
from speceval.cli import judge
from speceval.cli.generation import build_parser
from speceval.cli.generation import main as generation_main
from speceval.cli.main import build_parser as speceval_parser
from speceval.experiments.config import ExperimentConfig
from speceval.settings_checks import TEMPERATURE, BudgetUsd, MaxAttempts, Temperature, flag_type
from tests.conftest import TEST_KEY, cli_env, run_generation, write_inputs, write_spec


@pytest.fixture
def data(tmp_path: Path) -> tuple[Path, Path]:
    return write_spec(tmp_path / "spec.jsonl", ["a"]), write_inputs(tmp_path / "inputs", {"a": ["x"]})


def command(spec: Path, inputs: Path, out: Path, *extra: str, model: str = "gpt-4.1-mini") -> list[str]:
    return [
        "--spec-path",
        str(spec),
        "--pregenerated-inputs-dir",
        str(inputs),
        "--model-name",
        model,
        "--output-base-dir",
        str(out),
        *extra,
    ]


def test_negative_temperature_and_an_abbreviated_flag_exit_2_and_leave_no_run_folder(tmp_path, data):
    spec, inputs = data
    out = tmp_path / "out"
    env = cli_env(OPENAI_API_KEY=TEST_KEY)
    negative = run_generation(command(spec, inputs, out, "--temperature", "-1"), env)
    assert negative.returncode == 2
    assert "--temperature: must be between 0 and 2 (got -1)" in negative.stderr
    abbreviated = run_generation(command(spec, inputs, out, "--temp", "0.5"), env)
    assert abbreviated.returncode == 2
    assert "unrecognized arguments: --temp 0.5" in abbreviated.stderr
    assert not out.exists()


@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [
        ("--temperature", "2.5", "must be between 0 and 2 (got 2.5)"),
        ("--temperature", "nan", "must be a finite number"),
        ("--max-tokens", "0", "must be greater than 0 (got 0)"),
        ("--max-tokens", "1.5", "must be a whole number (got '1.5')"),
        ("--batch-size", "0", "must be greater than 0 (got 0)"),
        ("--poll-interval", "0", "must be greater than 0 (got 0)"),
        ("--timeout-hours", "-1", "must be greater than 0 (got -1)"),
        ("--max-attempts", "0", "must be at least 1 (got 0)"),
        ("--budget-usd", "-0.01", "must be at least 0 (got -0.01)"),
        ("--rpm", "0", "must be greater than 0 (got 0)"),
        ("--max-concurrency", "0", "must be at least 1 (got 0)"),
        ("--retry-backoff-factor", "0.5", "must be at least 1 (got 0.5)"),
        ("--request-timeout", "-1", "must be greater than 0 (got -1)"),
    ],
)
def test_each_range_is_checked_before_anything_exists(tmp_path, data, capsys, flag, value, message):
    spec, inputs = data
    with pytest.raises(SystemExit) as exit_:
        generation_main(command(spec, inputs, tmp_path / "out", flag, value, "--offline"))
    assert exit_.value.code == 2
    assert f"{flag}: {message}" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_monitor_checks_the_same_ranges(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        speceval_parser().parse_args(["monitor", str(tmp_path), "--poll-interval", "0"])
    assert exit_.value.code == 2 and "--poll-interval: must be greater than 0 (got 0)" in capsys.readouterr().err


def test_the_poll_interval_variable_is_checked_like_the_flag(tmp_path, data, monkeypatch, capsys):
    spec, inputs = data
    monkeypatch.setenv("SPECEVAL_POLL_INTERVAL", "-5")
    assert generation_main(command(spec, inputs, tmp_path / "out", "--offline")) == 2
    assert "SPECEVAL_POLL_INTERVAL must be greater than 0 (got -5)" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("extra", "env", "says"),
    [
        (["--org", "google", "--input-bucket", "b"], {"GOOGLE_API_KEY": TEST_KEY}, "apply to --org vertex only"),
        ([], {}, "OPENAI_API_KEY"),  # no credentials
        (["--rpm", "10"], {"OPENAI_API_KEY": TEST_KEY}, "apply to realtime runs"),
        (["--vllm", "--replicas", "2"], {"OPENAI_API_KEY": TEST_KEY}, "--vllm, --replicas apply to --org ray only"),
        (["--org", "ray"], {}, "--org ray needs --base-url"),
        (["--org", "vertex", "--offline"], {}, "offline runs support the providers"),
        (["--org", "nosuch"], {"OPENAI_API_KEY": TEST_KEY}, "unknown --org"),
    ],
)
def test_usage_errors_found_late_still_leave_no_run_folder(tmp_path, data, monkeypatch, capsys, extra, env, says):
    spec, inputs = data
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert generation_main(command(spec, inputs, tmp_path / "out", *extra)) == 2
    assert says in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def _parsers() -> list[argparse.ArgumentParser]:
    main = speceval_parser()
    subcommands = [action for action in main._actions if isinstance(action, argparse._SubParsersAction)]
    return [
        main,
        build_parser(),
        judge.build_parser("compliance"),
        judge.build_parser("ranking"),
        *(parser for action in subcommands for parser in action.choices.values()),
    ]


def test_no_parser_of_any_command_accepts_an_abbreviated_flag():
    parsers = _parsers()
    assert len(parsers) > 10 and all(parser.allow_abbrev is False for parser in parsers)
    checked = 0
    for parser in parsers[1:4]:  # the scripts' parsers take no positional argument: try every flag's prefix
        flags = {flag for action in parser._actions for flag in action.option_strings}
        for flag in sorted(flags):
            prefix = flag[:-1]
            if flag.startswith("--") and len(flag) > 4 and prefix not in flags:
                _, unparsed = parser.parse_known_args([prefix])
                assert unparsed == [prefix], (parser.prog, prefix)
                checked += 1
    assert checked > 60


def test_the_together_script_passes_an_abbreviation_on_to_be_refused(tmp_path, data, capsys):
    spec, inputs = data
    args = [
        "--model-name",
        "m",
        "--pregenerated-inputs-dir",
        str(inputs),
        "--spec-path",
        str(spec),
        "--output-base-dir",
        str(tmp_path / "out"),
        "--qp",
        "10",
    ]
    with pytest.raises(SystemExit) as exit_:
        together_batch_inference.main(args)
    assert exit_.value.code == 2 and "unrecognized arguments: --qp" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_yaml_keys_and_flags_are_refused_with_the_same_words():
    class Settings(BaseModel):
        temperature: Temperature | None = None
        max_attempts: MaxAttempts | None = None
        budget_usd: BudgetUsd | None = None

    with pytest.raises(ValidationError) as yaml_error:
        Settings.model_validate({"temperature": -1})
    with pytest.raises(argparse.ArgumentTypeError) as flag_error:
        flag_type(TEMPERATURE)("-1")
    assert yaml_error.value.errors()[0]["msg"] == str(flag_error.value) == "must be between 0 and 2 (got -1)"
    assert Settings.model_validate({"temperature": 2, "max_attempts": 1, "budget_usd": 0}).budget_usd == 0


def test_experiment_and_judge_yaml_files_use_the_flags_words_and_name_file_line_and_key(tmp_path):
    from speceval.errors import InputError
    from speceval.pipelines.judge_config import ComplianceFileConfig, load_config

    experiment = tmp_path / "experiment.yaml"
    experiment.write_text(
        "experiment_name: x\noutput_dir: out\nspecs: [{name: s, spec_path: s, inputs_dir: i}]\n"
        "candidates: [{model: gpt-4.1-mini}]\nvariations:\n  temperature: [0.2, -1]\n"
    )
    with pytest.raises(InputError) as bad_experiment:
        load_config(experiment, ExperimentConfig)
    assert "must be between 0 and 2 (got -1)" in str(bad_experiment.value)
    assert str(experiment) in str(bad_experiment.value)

    judge_yaml = tmp_path / "compliance.yaml"
    judge_yaml.write_text("spec_name: s\nmax_attempts: 0\n")
    with pytest.raises(InputError) as bad_judge:
        load_config(judge_yaml, ComplianceFileConfig)
    assert bad_judge.value.line == 2 and bad_judge.value.field == "max_attempts"
    assert "must be at least 1 (got 0)" in str(bad_judge.value)
