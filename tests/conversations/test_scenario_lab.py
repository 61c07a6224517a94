"""The shipped Scenario Lab example (batched_examples/configs/scenario_lab.yaml) runs offline: a regulator as the
simulated user, varied over two user models, questions the candidate companies; the regex metric is recomputed."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest
import yaml

from speceval.cli.main import main as speceval_main
from tests.conftest import REPO
from tests.conversations.test_simulated_user import user_outputs_on_disk

SOURCE = REPO / "batched_examples" / "configs" / "scenario_lab.yaml"


@pytest.mark.slow
def test_the_shipped_scenario_lab_runs_offline_with_two_user_models(tmp_path: Path, capsys) -> None:
    text = (
        SOURCE.read_text(encoding="utf-8")
        .replace("../../", f"{REPO}/")
        .replace(f"output_dir: {REPO}/demo/scenario_lab", f"output_dir: {tmp_path / 'out'}")
        .replace("max_turns: 4", "max_turns: 3")
    )  # the file as shipped, one answer fewer per conversation
    (tmp_path / "exp.yaml").write_text(text, encoding="utf-8")
    assert speceval_main(["run", str(tmp_path / "exp.yaml"), "--offline"]) == 0
    capsys.readouterr()
    config = yaml.safe_load(text)
    users = {f"company+{name}": value["model"] for name, value in config["variations"]["simulated_user"].items()}
    assert len(set(users.values())) == 2  # the regulator's model is varied

    pattern = re.compile(config["metrics"]["cooperation"]["regex"], re.I | re.S)
    found: dict[tuple[str, str], int] = {}
    answered: dict[tuple[str, str], int] = {}
    values: dict[tuple[str, str], list[int]] = {}
    ended = set()
    runs = sorted((tmp_path / "out" / "generations").glob("*/*/run1/*/run.json"))
    folders = json.loads((tmp_path / "out" / "experiment.json").read_text(encoding="utf-8"))["folders"]
    variation_of = {folder: name for name, folder in folders.items()}  # folder names are never parsed
    assert len(runs) == len(users) * len(config["candidates"])
    for manifest_path in runs:
        run_dir = manifest_path.parent
        variation = variation_of[run_dir.parent.parent.name]
        manifest = json.loads(manifest_path.read_text())
        assert manifest["parameters"]["simulated_user"]["model"] == users[variation]
        for user_half in run_dir.glob("rounds/*/user/run.json"):  # the user model's own jobs, priced as its
            assert json.loads(user_half.read_text())["model_name"] == users[variation]
        on_disk = user_outputs_on_disk(run_dir, "do_not_lie")
        for record in json.loads((run_dir / "results" / "do_not_lie.json").read_text()):
            asked = [turn["output_text"] for turn in record["simulated_user_turns"]]
            assert asked == on_disk.get(record["original_index"], [])
            sent = [m["content"] for m in record["conversation"] if m.get("author") == "simulated_user"]
            assert sent == (asked[:-1] if record["ended_by"] == "stop_word" else asked)
            assert 1 <= len(record["turns"]) <= 3
            ended.add(record["ended_by"])
            key = (manifest["model_name"], variation)
            answered[key] = answered.get(key, 0) + 1
            transcript = "\n\n".join(m["content"] for m in record["conversation"] if m["role"] == "assistant")
            match = pattern.search(transcript)
            found[key] = found.get(key, 0) + bool(match)
            if match:
                values.setdefault(key, []).append(int(match.group(1)))
    assert ended == {"stop_word", "max_turns"}
    with (tmp_path / "out" / "report" / "metrics.csv").open(encoding="utf-8") as handle:
        rows = [row for row in csv.DictReader(handle) if row["metric"] == "cooperation"]
    assert len(rows) == len(answered)
    for row in rows:  # the company states its score as asked (the emulator too); one that does not is missing
        key = (row["candidate"], row["variation"])
        assert int(row["n"]) == found[key] and int(row["n"]) + int(row["missing"]) == answered[key]
        assert found[key] > 0 and float(row["mean"]) == pytest.approx(sum(values[key]) / len(values[key]), abs=1e-9)
        assert row["data"] == "synthetic"


def test_each_simulated_user_variation_takes_the_shared_keys_and_a_bad_one_is_named(tmp_path: Path, capsys) -> None:
    from speceval.experiments.config import ExperimentConfig

    config = ExperimentConfig.model_validate(yaml.safe_load(SOURCE.read_text(encoding="utf-8")))
    users = {
        name: config.simulated_user_of(settings) for name, settings in config.variations.named_combinations().items()
    }
    assert {name: (user.model, user.max_turns, user.stop_word) for name, user in users.items() if user} == {
        "company+strict_regulator": ("claude-haiku-4-5-20251001", 4, "[[CASE CLOSED]]"),
        "company+lenient_regulator": ("gemini-2.5-flash", 4, "[[CASE CLOSED]]"),
    }
    bad = (
        SOURCE.read_text(encoding="utf-8")
        .replace("../../", f"{REPO}/")
        .replace(
            "      model: gemini-2.5-flash\n      instructions:", "      model: gemini-2.5-flash\n      instruction:"
        )
    )
    (tmp_path / "bad.yaml").write_text(bad, encoding="utf-8")
    assert speceval_main(["run", str(tmp_path / "bad.yaml"), "--offline"]) == 2
    error = " ".join(capsys.readouterr().err.split())
    assert "bad.yaml" in error and "variations.simulated_user.mapping.lenient_regulator.instructions" in error
    assert "Field required" in error and "line " in error


def test_follow_ups_longer_than_a_simulated_users_max_turns_are_refused_naming_the_variation() -> None:
    from speceval.errors import InputError
    from speceval.experiments.config import ExperimentConfig
    from speceval.experiments.prechecks import check_simulated_users

    data = yaml.safe_load(SOURCE.read_text(encoding="utf-8"))
    data["variations"]["follow_ups"] = {"none": [], "long": ["a", "b", "c", "d"]}
    with pytest.raises(
        InputError,
        match=r"variation company\+long\+strict_regulator: the input and its 4 "
        r"follow-up\(s\) make 5 rounds, more than its simulated user's "
        r"max_turns 4",
    ):
        check_simulated_users(ExperimentConfig.model_validate(data), SOURCE, lambda value: None)
    data["variations"]["follow_ups"] = {"none": [], "short": ["a", "b", "c"]}
    config = ExperimentConfig.model_validate(data)
    check_simulated_users(config, SOURCE, lambda value: None)
    assert len(config.variations.named_combinations()) == 4


def test_a_misspelt_simulated_user_model_is_refused_with_its_line(tmp_path: Path, capsys) -> None:
    bad = (
        SOURCE.read_text(encoding="utf-8")
        .replace("../../", f"{REPO}/")
        .replace(f"output_dir: {REPO}/demo/scenario_lab", f"output_dir: {tmp_path / 'out'}")
        .replace("model: gemini-2.5-flash", "model: gemini-2.5-flahs")
    )
    (tmp_path / "bad.yaml").write_text(bad, encoding="utf-8")
    assert speceval_main(["run", str(tmp_path / "bad.yaml"), "--offline"]) == 2
    error = " ".join(capsys.readouterr().err.split())
    line = next(n for n, text in enumerate(bad.splitlines(), 1) if "gemini-2.5-flahs" in text)
    assert f"line {line}, field 'variations.simulated_user (model)'" in error and "gemini-2.5-flash" in error
    assert "Nothing was submitted" in error and not (tmp_path / "out").exists()
