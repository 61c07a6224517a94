"""Ranking: three candidates → six ordered pairs, each labelled with the model whose outputs it holds (R1)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from speceval.cli.judge import build_parser
from speceval.cli.judge_command import resolve_settings
from speceval.emulator import Emulator, FaultConfig
from speceval.pipelines.position import Consistency, combine
from speceval.pipelines.ranking import BatchedRankingPipeline
from speceval.providers.registry import create_batched_model
from speceval.wire.params import GenerationParams
from tests.conftest import TEST_KEY
from tests.pipelines.helpers import JUDGE, make_run, read_results, write_spec

MODELS = ("zeta-model", "alpha-model", "mid-model")


@pytest.fixture
def runs(tmp_path: Path) -> tuple[Path, list[Path]]:
    spec = write_spec(tmp_path / "spec.jsonl", ["s1", "s2"])
    dirs = []
    for number, model in enumerate(MODELS):
        # Directory names that lie: the original guessed names from substrings of paths.
        directory = tmp_path / "generations" / f"{MODELS[(number + 1) % 3]}-run{number}"
        outputs = {sid: [f"answer of {model} to {sid} #{i}" for i in range(3)] for sid in ("s1", "s2")}
        if model == "mid-model":
            outputs["s1"][0] = None  # mid-model failed one input: only its pairs lose it
        dirs.append(make_run(directory, model, spec, outputs))
    return spec, dirs


def rank(tmp_path: Path, spec: Path, dirs: list[Path], out: str, emulator: Emulator) -> BatchedRankingPipeline:
    config = tmp_path / f"{out}.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "spec_path": str(spec),
                "candidate_generation_dirs": [str(d) for d in dirs],
                "ranking_judge_model_name": JUDGE,
                "output_dir_base": str(tmp_path / out),
                "poll_interval": 0.05,
                "batch_size": 7,
            }
        )
    )
    settings, candidates, _ = resolve_settings(
        build_parser("ranking").parse_args(["--config-file", str(config)]), "ranking"
    )
    pipeline = BatchedRankingPipeline(settings, candidates)
    model = create_batched_model(
        JUDGE, "openai", GenerationParams(), base_url=emulator.openai_base_url, api_key=TEST_KEY
    )
    summaries, _, _ = pipeline.run(model)
    assert all(s.finished for s in summaries)
    return pipeline


def labelled(pipeline: BatchedRankingPipeline) -> dict[tuple[str, str], dict]:
    out = {}
    for pair in pipeline.pairs:
        files = read_results(pair.target.run_dir)
        for content in files.values():
            content["metadata"].pop("batch_ids")
            for entry in content["rankings"]:
                entry.pop("batch_id")
        out[(pair.a.name, pair.b.name)] = files
    return out


def test_six_ordered_pairs_labelled_right_and_directory_order_does_not_matter(tmp_path, runs) -> None:
    spec, dirs = runs
    with Emulator(faults=FaultConfig(turnaround_seconds=0.1)) as emulator:
        first = rank(tmp_path, spec, dirs, "out1", emulator)
        second = rank(tmp_path, spec, [dirs[2], dirs[0], dirs[1]], "out2", emulator)
    pairs = labelled(first)
    assert sorted(pairs) == sorted((a, b) for a in MODELS for b in MODELS if a != b)
    assert {p.target.run_dir.name for p in first.pairs} == {f"{a}x{b}" for a, b in pairs}
    for (model_a, model_b), files in pairs.items():
        assert set(files) == {"s1", "s2"}
        for statement_id, content in files.items():
            meta = content["metadata"]
            assert (meta["model_a"], meta["model_b"], meta["statement_id"]) == (model_a, model_b, statement_id)
            assert meta["prompt_version"] == "ranking_v2" and meta["judge"] == JUDGE
            for entry in content["rankings"]:
                assert entry["output_a"].startswith(f"answer of {model_a} to {statement_id} #")
                assert entry["output_b"].startswith(f"answer of {model_b} to {statement_id} #")
                assert entry["output_a"].endswith(f"#{entry['index']}") and entry["input"].startswith("input ")
            # Inputs are paired per pair: only pairs with mid-model lose s1 #0.
            expected = [1, 2] if "mid-model" in (model_a, model_b) and statement_id == "s1" else [0, 1, 2]
            assert [e["index"] for e in content["rankings"]] == expected
    assert labelled(second) == pairs  # swapping the YAML's directory order changes nothing

    report = json.loads((first.output_dir / "position_consistency.json").read_text())
    assert len(report["pairs"]) == 3
    for pair in report["pairs"]:
        forward = pairs[(pair["model_x"], pair["model_y"])]
        backward = pairs[(pair["model_y"], pair["model_x"])]
        for comparison in pair["comparisons"]:
            ranks = [
                next(
                    e["rank"]
                    for e in files[comparison["statement_id"]]["rankings"]
                    if e["index"] == comparison["index"]
                )
                for files in (forward, backward)
            ]
            assert [comparison["rank_xy"], comparison["rank_yx"]] == ranks
            assert comparison["verdict"] == combine(*ranks).value
        decided = pair["consistent"] + pair["inconsistent"]
        assert pair["consistency_rate"] == (pair["consistent"] / decided if decided else None)


@pytest.mark.parametrize(
    ("xy", "yx", "verdict"),
    [
        (1, -1, Consistency.X_BETTER),
        (-1, 1, Consistency.Y_BETTER),
        (0, 0, Consistency.TIE),
        (1, 1, Consistency.INCONSISTENT),
        (1, 0, Consistency.INCONSISTENT),
        (None, 1, Consistency.INCOMPLETE),
        (0, None, Consistency.INCOMPLETE),
    ],
)
def test_position_consistent_verdict_needs_both_orders_to_agree(xy, yx, verdict) -> None:
    assert combine(xy, yx) is verdict
