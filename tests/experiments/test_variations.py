"""Named variations: lists get names derived from their values, mappings name them; names join with '+' across
axes; a bad name or an unknown key is refused with the file, line and field before anything runs."""

from __future__ import annotations

from pathlib import Path

from speceval.cli.main import main as speceval_main
from speceval.experiments.config import ExperimentConfig, Variations
from speceval.experiments.runner import plan
from tests.conftest import SAMPLE_INPUTS, SAMPLE_SPEC

HEAD = f"""experiment_name: named
output_dir: out
specs:
  - name: openai
    spec_path: {SAMPLE_SPEC}
    inputs_dir: {SAMPLE_INPUTS}
candidates:
  - model: gpt-4.1-mini-2025-04-14
judges: []
stages: [generation]
"""


def test_list_values_are_named_after_themselves_and_mapping_keys_name_theirs():
    variations = Variations.model_validate(
        {"temperature": [0.0, 0.7], "system_prompt": {"baseline": None, "time_pressure": "Answer fast."}}
    )
    assert variations.named_combinations() == {
        "temperature_0.0+baseline": {"temperature": 0.0, "system_prompt": None},
        "temperature_0.0+time_pressure": {"temperature": 0.0, "system_prompt": "Answer fast."},
        "temperature_0.7+baseline": {"temperature": 0.7, "system_prompt": None},
        "temperature_0.7+time_pressure": {"temperature": 0.7, "system_prompt": "Answer fast."},
    }
    assert Variations.model_validate({"system_prompt": [None, "a", "b"]}).named_combinations() == {
        "system_prompt_none": {"system_prompt": None},
        "system_prompt_2": {"system_prompt": "a"},
        "system_prompt_3": {"system_prompt": "b"},
    }
    assert Variations().named_combinations() == {"default": {}}


def test_run_directories_carry_the_variation_name(tmp_path):
    config = ExperimentConfig.model_validate(
        {
            "experiment_name": "x",
            "output_dir": "out",
            "specs": [{"name": "openai", "spec_path": str(SAMPLE_SPEC), "inputs_dir": str(SAMPLE_INPUTS)}],
            "candidates": [{"model": "gpt-4.1-mini-2025-04-14"}],
            "variations": {"system_prompt": {"baseline": None, "time_pressure": "Hurry."}},
            "runs_per_variation": 2,
        }
    )
    variations, groups = plan(config, tmp_path)
    assert list(variations) == ["baseline", "time_pressure"]
    dirs = {run.run_dir.relative_to(tmp_path).as_posix() for group in groups for run in group.runs}
    assert dirs == {
        f"generations/openai/{name}/run{k}/gpt-4.1-mini-2025-04-14"
        for name in ("baseline", "time-pressure")
        for k in (1, 2)
    }


def line_of(text: str, needle: str) -> int:
    return next(n for n, line in enumerate(text.splitlines(), 1) if needle in line)


def run_bad(tmp_path: Path, capsys, text: str) -> str:  # type: ignore[no-untyped-def]
    experiment = tmp_path / "exp.yaml"
    experiment.write_text(text)
    assert speceval_main(["run", str(experiment), "--offline"]) == 2
    assert not (tmp_path / "out").exists()
    return str(capsys.readouterr().err)


def test_bad_variation_name_unknown_axis_and_duplicate_values_exit_2_with_line_and_field(tmp_path, capsys):
    plus = HEAD + "variations:\n  system_prompt:\n    a+b: null\n"
    err = run_bad(tmp_path, capsys, plus)
    # Each problem at its own line (the nested key), not at the section's.
    assert f"line {line_of(plus, 'a+b')}" in err and "variations.system_prompt" in err and "a+b" in err
    unknown = HEAD + "variations:\n  temprature: [0.1]\n"
    err = run_bad(tmp_path, capsys, unknown)
    assert f"line {line_of(unknown, 'temprature')}" in err and "variations.temprature" in err
    twice = HEAD + "variations:\n  temperature: [0.7, 0.7]\n"
    err = run_bad(tmp_path, capsys, twice)
    assert "temperature_0.7 occur more than once" in err and f"line {line_of(twice, 'variations:')}" in err


def _started_by_the_unnamed_version(tmp_path: Path, settings: list[dict[str, float]]) -> tuple[Path, Path]:
    """An experiment folder as the version that labelled variations v0, v1, ... left it (nothing run yet)."""
    import hashlib
    import json

    experiment = tmp_path / "exp.yaml"
    experiment.write_text(HEAD + "variations:\n  temperature: [0.0, 0.7]\n")
    out = tmp_path / "out"
    out.mkdir()
    (out / "experiment.json").write_text(
        json.dumps(
            {
                "experiment_name": "named",
                "config_sha256": hashlib.sha256(experiment.read_bytes()).hexdigest(),
                "variations": {f"v{i}": s for i, s in enumerate(settings)},
                "generation_runs": [],
            }
        )
    )
    return experiment, out


def test_an_experiment_started_with_v0_v1_labels_continues_under_them(tmp_path, capsys):
    experiment, out = _started_by_the_unnamed_version(tmp_path, [{"temperature": 0.0}, {"temperature": 0.7}])
    assert speceval_main(["run", str(experiment), "--offline"]) == 0
    assert sorted(p.name for p in (out / "generations" / "openai").iterdir()) == ["v0", "v1"]
    assert "continuing with them" in " ".join(capsys.readouterr().err.split())
    runs = sorted((out / "generations").rglob("run.json"))
    assert speceval_main(["run", str(experiment), "--offline"]) == 0  # the same runs, finished: nothing more
    assert sorted((out / "generations").rglob("run.json")) == runs and len(runs) == 2


def test_an_experiment_started_with_other_settings_is_not_resumed_into_new_directories(tmp_path, capsys):
    # v0/v1 whose settings are not the file's: not the same variations, so not continued under any name.
    experiment, out = _started_by_the_unnamed_version(tmp_path, [{"temperature": 0.0}, {"temperature": 1.0}])
    assert speceval_main(["run", str(experiment), "--offline"]) == 2
    assert "names its variations v0, v1, not temperature_0.0, temperature_0.7" in capsys.readouterr().err
    assert not (out / "generations").exists()
