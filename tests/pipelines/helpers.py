"""Fabricated generation runs (a run.json and results files), so judge tests need no generation step."""

from __future__ import annotations

import json
from pathlib import Path

from speceval.batch.manifest import RunManifest
from speceval.spec import load_spec

JUDGE = "gpt-4.1-2025-04-14"


def make_run(directory: Path, model: str, spec_path: Path, answers: dict[str, list[str | None]]) -> Path:
    """A generation run of `model`: answers per statement (None = the request errored)."""
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
    ).save(directory)
    for statement_id, outputs in answers.items():
        records = [
            {
                "original_index": i,
                "input_text": f"input {i} of {statement_id}",
                "output_text": out,
                "batch_id": "b",
                "outcome": "succeeded" if out is not None else "errored",
                "error": None if out is not None else {"message": "boom"},
            }
            for i, out in enumerate(outputs)
        ]
        (directory / "results").mkdir(parents=True, exist_ok=True)
        (directory / "results" / f"{statement_id}.json").write_text(json.dumps(records), encoding="utf-8")
    return directory


def write_spec(path: Path, ids: list[str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [
        json.dumps(
            {
                "id": sid,
                "text": f"Statement {sid}.",
                "type": "requirement",
                "authority_level": "user",
                "metadata": {"examples": [{"description": "d", "user_query": "q", "good_response": "g"}]},
            }
        )
        for sid in ids
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def read_results(run_dir: Path) -> dict[str, dict]:
    return {p.stem: json.loads(p.read_text()) for p in sorted((run_dir / "results").glob("*.json"))}


def rewrite_answer(run_dir: Path, statement_id: str = "s2") -> None:
    """Change the first answer of a statement in a fabricated run (what a judge resumed over it must notice)."""
    path = run_dir / "results" / f"{statement_id}.json"
    records = json.loads(path.read_text())
    records[0]["output_text"] = "a different answer"
    path.write_text(json.dumps(records))
