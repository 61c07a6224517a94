"""Variation folders on disk: readable (`temperature-0.7_plain`), never shared by two variations, mapped back to
the variation through experiment.json (never by parsing the name); an experiment folder started before readable
names resumes under its percent-encoded folders without renaming or re-submitting anything."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest

from speceval.analysis.rendering.exports.export import verdict_rows
from speceval.cli.console import experiment_place
from speceval.cli.main import main as speceval_main
from speceval.emulator import Emulator
from speceval.experiments.changes import grid_digest
from speceval.experiments.loading import load_experiment
from speceval.experiments.state import ExperimentState
from speceval.paths import READABLE_NAMING, folder_names, readable_names, safe_filename
from tests.analysis.test_report import compliance_file
from tests.experiments.test_variations import HEAD
from tests.unit.test_paths import HOSTILE

SMALL = HEAD.replace(
    "judges: []\nstages: [generation]\n",
    """judges:
  - model: gpt-4.1-2025-04-14
stages: [generation, compliance]
variations:
  temperature: [0.7]
  system_prompt: {plain: null}
""",
)
VARIATION = "temperature_0.7+plain"


def test_variation_names_read_as_themselves_on_disk():
    assert readable_names([VARIATION, "temperature_0.0+time_pressure", "default"]) == {
        VARIATION: "temperature-0.7_plain",
        "temperature_0.0+time_pressure": "temperature-0.0_time-pressure",
        "default": "default",
    }


def test_names_that_would_share_a_folder_are_told_apart_the_same_way_in_any_order():
    clashing = ["a_b", "a-b", "Plain", "plain", "keep"]
    folders = readable_names(clashing)
    assert folders == readable_names(list(reversed(clashing)))
    assert folders["keep"] == "keep"  # only the names that clash get a suffix
    for name in ("a_b", "a-b", "Plain", "plain"):
        assert re.fullmatch(r"[A-Za-z-]+~[0-9a-f]{8}", folders[name]), folders[name]
        assert folders[name].startswith(name.replace("_", "-"))
    assert len({folder.casefold() for folder in folders.values()}) == len(clashing)


def test_hostile_names_get_safe_distinct_folders():
    folders = readable_names(HOSTILE)
    assert len({folder.casefold() for folder in folders.values()}) == len(set(HOSTILE))
    for name, folder in folders.items():
        assert re.fullmatch(r"[A-Za-z0-9._~-]{1,150}", folder), (name, folder)
        assert not folder.startswith(".") and not folder.endswith(".")
    assert folder_names(["a+b"], None) == {"a+b": safe_filename("a+b")} == {"a+b": "a%2Bb"}
    with pytest.raises(ValueError, match="unknown folder naming 9"):
        folder_names(["a"], 9)


def jobs(out: Path) -> int:
    with Emulator(state_dir=out / ".emulator") as emulator:
        return len(emulator.list_jobs("openai"))


def variation_dirs(out: Path) -> set[str]:
    return {
        p.name
        for stage in ("generations", "compliance")
        for p in (out / stage / "openai").iterdir()
        if p.name != "canaries"
    }


def test_a_new_folder_records_readable_folders_and_reads_variations_back_from_them(tmp_path):
    experiment = tmp_path / "exp.yaml"
    experiment.write_text(SMALL)
    assert speceval_main(["run", str(experiment), "--offline"]) == 0
    out = tmp_path / "out"
    state = json.loads((out / "experiment.json").read_text())
    assert state["naming"] == READABLE_NAMING and state["folders"] == {VARIATION: "temperature-0.7_plain"}
    assert variation_dirs(out) == {"temperature-0.7_plain"}
    assert {row["variation"] for row in verdict_rows([out])} == {VARIATION}
    run_dir = out / "generations" / "openai" / "temperature-0.7_plain" / "run1" / "gpt-4.1-mini-2025-04-14"
    assert experiment_place(run_dir) == f"spec openai · variation {VARIATION} · run 1"


def test_a_folder_started_before_readable_names_resumes_under_its_old_folders(tmp_path):
    experiment = tmp_path / "exp.yaml"
    experiment.write_text(SMALL)
    out = tmp_path / "out"
    old_run = out / "generations" / "openai" / "temperature_0.7%2Bplain" / "run1" / "gpt-4.1-mini-2025-04-14"
    # experiment.json as the speceval before readable names wrote it: no `naming`, no `folders`.
    config = load_experiment(experiment)
    old_state = ExperimentState(
        experiment_name="names",
        config_sha256=hashlib.sha256(experiment.read_bytes()).hexdigest(),
        grid_sha256=grid_digest(config),
        variations={VARIATION: {"temperature": 0.7, "system_prompt": None}},
        generation_runs=[str(old_run)],
        offline=True,
    ).model_dump(mode="json", exclude={"naming", "folders"})
    out.mkdir()
    (out / "experiment.json").write_text(json.dumps(old_state))

    assert speceval_main(["run", str(experiment), "--offline"]) == 0
    assert variation_dirs(out) == {"temperature_0.7%2Bplain"}
    assert (old_run / "run.json").is_file()
    state = json.loads((out / "experiment.json").read_text())
    assert "naming" not in state or state["naming"] is None
    assert not state.get("folders") and state["generation_runs"] == [str(old_run)]
    paid = jobs(out)
    assert paid == 3  # generation, compliance, the judge's canaries

    assert speceval_main(["run", str(experiment), "--offline"]) == 0  # resumed by the same (new) speceval
    assert jobs(out) == paid
    assert variation_dirs(out) == {"temperature_0.7%2Bplain"}
    assert {row["variation"] for row in verdict_rows([out])} == {VARIATION}
    assert experiment_place(old_run) == f"spec openai · variation {VARIATION} · run 1"


def test_the_original_layout_export_names_variation_folders_readably(tmp_path):
    """Two variations of a hand-built experiment folder (one verdict file each), exported in the original's layout."""
    names = {VARIATION: "temperature-0.7_plain", "temperature_0.0+plain": "temperature-0.0_plain"}
    (tmp_path / "exp" / "experiment.json").parent.mkdir()
    (tmp_path / "exp" / "experiment.json").write_text(
        json.dumps({"variations": {name: {} for name in names}, "naming": READABLE_NAMING, "folders": names})
    )
    for folder in names.values():
        compliance_file(
            tmp_path
            / "exp"
            / "compliance"
            / "openai"
            / folder
            / "run1"
            / "spec_openai"
            / "judge_j"
            / "m"
            / "results"
            / "s1.json",
            "m",
            "j",
            [True, False],
        )
    assert speceval_main(["export", str(tmp_path / "exp"), "--format", "original", "--out", str(tmp_path / "o")]) == 0
    assert sorted(p.name for p in (tmp_path / "o").iterdir()) == sorted(names.values())
    assert {row["variation"] for row in verdict_rows([tmp_path / "exp"])} == set(names)
