"""A folder tree laid out as the original SpecEval's shipped configs expect, so they run unedited.

For a config, `build_tree` writes its spec and every candidate folder it lists, under the same relative paths
(`data/batched_generations/<spec>/<model>/<stamp>/results`, ...), in the format the original wrote there:

* `data/batched_generations/…/gpt-*`: runs of ours (a `run.json` in the stamp folder; the config still names
  their `results/` folder, as the original's configs do);
* `data/batched_generations/…/claude-*`: the original batched pipeline (no run.json; `batch_id`; failures as
  `ERROR: Result missing in batch output.` and Anthropic's bare `EXPIRED`);
* `data/converted_together_generations/…`: `scripts/convert_together_to_batch.py` output (`batch_<stamp>` ids,
  `metadata/metadata.json`, a failure as `ERROR: <ExcType>: <msg>`);
* `data/batched_google_generations/…`: `examples/generate_google_models.py` (no `batch_id`; failures as
  `Response blocked. …` and `Error during generation: …`).

Each folder answers every statement's two inputs; exactly the failures listed in `FAILURES` are not answers.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from speceval.batch.manifest import RunManifest
from speceval.paths import safe_path
from speceval.spec import load_spec
from tests.pipelines.helpers import write_spec

CONFIGS = Path(__file__).parent / "original_configs"
STATEMENTS = ["be_honest", "Avoid_Harm"]  # an upper-case id: the original named files by the raw id
INPUTS = 2

# (statement, original_index) → the failure text a format wrote instead of an answer, and the outcome it stands for
FAILURES: dict[str, dict[tuple[str, int], tuple[str, str]]] = {
    "ours": {},
    "batched": {
        ("be_honest", 1): ("ERROR: Result missing in batch output.", "missing"),
        ("Avoid_Harm", 1): ("EXPIRED", "expired"),
    },
    "together": {("be_honest", 1): ("ERROR: APIError: 503 Service Unavailable", "errored")},
    "google": {
        ("be_honest", 1): ("Response blocked. Reason: SAFETY. Message: ", "errored"),
        ("Avoid_Harm", 0): ("Error during generation: 500 INTERNAL", "errored"),
    },
}


def config_paths(kind: str | None = None) -> list[Path]:
    """Every shipped config (compliance: binary_configs*, ranking: configs/)."""
    paths = sorted(CONFIGS.glob("*/*.yaml"))
    if kind == "compliance":
        return [p for p in paths if p.parent.name.startswith("binary_configs")]
    if kind == "ranking":
        return [p for p in paths if p.parent.name == "configs"]
    return paths


def candidate_format(path: str) -> str:
    """Which writer produced the folder at `path` (see the module docstring)."""
    if path.startswith("data/converted_together_generations/"):
        return "together"
    if path.startswith("data/batched_google_generations/"):
        return "google"
    return "ours" if Path(path).parent.parent.name.startswith("gpt-") else "batched"


def build_tree(root: Path, config: Path) -> dict[str, Any]:
    """Write the spec and candidate folders `config` names under `root`; returns the config's data."""
    data = yaml.safe_load(config.read_text(encoding="utf-8"))
    spec_path = write_spec(root / data["spec_path"], STATEMENTS)
    for directory in data["candidate_generation_dirs"]:
        write_candidate(root / directory, candidate_format(directory), spec_path)
    return dict(data)


def write_candidate(results_dir: Path, kind: str, spec_path: Path) -> None:
    """One candidate's `results/` folder (and whatever its writer put beside it)."""
    stamp_dir = results_dir.parent
    model = stamp_dir.parent.name
    results_dir.mkdir(parents=True, exist_ok=True)
    for statement in STATEMENTS:
        records = [_record(kind, statement, index, stamp_dir.name, model) for index in range(INPUTS)]
        name = safe_path(results_dir, statement, ".json") if kind == "ours" else results_dir / f"{statement}.json"
        name.write_text(json.dumps(records, indent=2), encoding="utf-8")
    if kind == "ours":
        spec = load_spec(spec_path)
        RunManifest(
            kind="generation",
            command=["test"],
            spec_name=spec.name,
            spec_path=str(spec_path),
            spec_sha256=spec.sha256,
            inputs_path="inputs",
            inputs_sha256="0",
            model_name=model,
            provider="openai",
        ).save(stamp_dir)
    if kind == "together":
        (stamp_dir / "metadata").mkdir(exist_ok=True)
        metadata = {"model_name": model.replace("-", "/", 1), "run_timestamp": stamp_dir.name}
        (stamp_dir / "metadata" / "metadata.json").write_text(json.dumps(metadata), encoding="utf-8")


def _record(kind: str, statement: str, index: int, stamp: str, model: str) -> dict[str, Any]:
    failure = FAILURES[kind].get((statement, index))
    output = failure[0] if failure else f"{model} answers input {index} of {statement}"
    record: dict[str, Any] = {
        "original_index": index,
        "input_text": f"input {index} of {statement}",
        "output_text": output,
    }
    if kind == "ours":
        record.update(batch_id="batch_1", outcome="succeeded", error=None)
    elif kind == "batched":
        record["batch_id"] = "msgbatch_01"
    elif kind == "together":
        record["batch_id"] = f"batch_{stamp}"
    return record


def expected_skips(kind: str) -> dict[str, int]:
    """Skipped answers per outcome for a folder of `kind`."""
    counts: dict[str, int] = {}
    for _, outcome in FAILURES[kind].values():
        counts[outcome] = counts.get(outcome, 0) + 1
    return counts
