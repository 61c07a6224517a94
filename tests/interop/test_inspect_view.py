"""A conversation study's Inspect export as Inspect reads it, and as a person sees it in Inspect View: each
conversation one sample whose messages are the transcript and whose scores are every judge's verdict (a per-turn
judge's named by turn), every score finite, a panel only over the whole-answer judges of one scale; rendered in
View's static bundle in headless Chromium, every log listed, and a sample shows its statement, its answer, each
judge's verdict and a finite panel."""

from __future__ import annotations

import asyncio
import json
import math
import os
from collections import Counter
from pathlib import Path

import pytest

from speceval.cli.main import main as speceval_main
from tests.conftest import SAMPLE_INPUTS, SAMPLE_SPEC
from tests.interop import view_browser
from tests.interop.inspect_reader import list_eval_logs, read_eval_log
from tests.once import built_once

pytestmark = pytest.mark.slow

JUDGES = """judges:
  - model: gpt-4.1-2025-04-14
    scope: conversation
  - model: claude-haiku-4-5-20251001
    scope: conversation
  - model: gpt-4.1-2025-04-14
    scope: turn
  - model: gpt-4.1-nano-2025-04-14
    mode: likert
"""


@pytest.fixture(scope="session")
def exported(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> tuple[Path, Path]:
    """(the experiment's output, its Inspect export): two candidates (a batch one, a realtime one), three follow-up
    turns, two binary judges of whole conversations, a per-turn judge and a Likert judge.
    Built once per session (tests/once.py); the tests only read it."""

    def build(root: Path) -> tuple[Path, Path]:
        (root / "exp.yaml").write_text(
            f"""experiment_name: talk
output_dir: {root / "out"}
specs:
  - name: openai
    spec_path: {SAMPLE_SPEC}
    inputs_dir: {SAMPLE_INPUTS}
candidates:
  - model: gpt-4.1-mini-2025-04-14
  - model: Qwen/Qwen3-235B-A22B-fp8-tput
    org: together
{JUDGES}variations:
  follow_ups:
    pressure: ["Are you sure?", "Final answer?"]
stages: [generation, compliance, report]
engine:
  poll_interval: 0.05
"""
        )
        assert speceval_main(["run", str(root / "exp.yaml"), "--offline"]) == 0
        assert speceval_main(["export", str(root / "out"), "--format", "inspect", "--out", str(root / "logs")]) == 0
        return root / "out", root / "logs"

    return built_once(tmp_path_factory, worker_id, "inspect-view-talk", build)


def conversations(out: Path) -> Counter[str]:
    """candidate → conversations its generation run recorded."""
    found: Counter[str] = Counter()
    for run in (out / "generations").glob("*/*/*/*"):
        model = json.loads((run / "run.json").read_text())["model_name"]
        found[model] += sum(len(json.loads(f.read_text())) for f in (run / "results").glob("*.json"))
    return found


def test_a_conversation_is_one_sample_scored_per_judge_and_per_turn_every_score_finite(exported):
    out, logs = exported
    expected = conversations(out)
    for info in list_eval_logs(str(logs)):
        log = read_eval_log(info.name)
        meta = log.eval.metadata["speceval"]
        assert meta["panels"] == {"panel": ["claude-haiku-4-5-20251001", "gpt-4.1-2025-04-14_conversation_binary"]}
        assert meta["turn_judges"] == {"gpt-4.1-2025-04-14_turn_binary": 3}
        assert len(log.samples) == expected[log.eval.model] > 0  # one sample per conversation
        assert len({s.id for s in log.samples}) == len(log.samples)
        per_turn = 0
        for sample in log.samples:
            assert [m.role for m in sample.messages if m.role != "system"] == ["user", "assistant"] * 3
            assert sample.output.completion == sample.messages[-1].text
            for name, score in sample.scores.items():
                assert isinstance(score.value, str) or math.isfinite(score.value), (sample.id, name, score.value)
                assert score.answer  # View's answer column
            turns = [n for n in (*sample.scores, *sample.metadata["not_judged"]) if "_turn" in n]
            assert sorted(turns) == [f"gpt-4.1-2025-04-14_turn_binary_turn{k}" for k in (1, 2, 3)]
            per_turn += len(turns)
            if "panel" in sample.scores:
                binary = [sample.scores[j].value for j in meta["panels"]["panel"]]
                assert sample.scores["panel"].value == pytest.approx(sum(v == "C" for v in binary) / len(binary))
            assert sample.total_time is not None and math.isfinite(sample.total_time)
        assert per_turn == 3 * len(log.samples)
        by_name = {score.name: score for score in log.results.scores}
        assert by_name["panel"].scored_samples > 0 and math.isfinite(by_name["panel"].metrics["mean"].value)
        assert log.stats.started_at and log.stats.completed_at  # View's log duration


def test_inspect_view_shows_every_log_and_a_samples_statement_answer_verdicts_and_panel(exported, tmp_path):
    reason = view_browser.missing()
    if reason is not None:
        pytest.skip(reason)
    from inspect_ai.log._bundle import bundle_log_dir

    _, logs = exported
    bundle = tmp_path / "bundle"
    bundle_log_dir(log_dir=str(logs), output_dir=str(bundle), overwrite=True)
    infos = list_eval_logs(str(logs))
    shots = Path(os.environ.get("SPECEVAL_VIEW_SHOTS", tmp_path))
    with view_browser.served(bundle) as base, view_browser.chromium() as socket:
        tasks = [read_eval_log(info.name, header_only=True).eval.task for info in infos]
        listing = asyncio.run(view_browser.look(socket, f"{base}/index.html#/logs", tasks, shots / "logs.png"))
        assert all(task in listing for task in tasks), listing[:2000]  # every log listed, none hidden as a retry
        log = read_eval_log(infos[0].name)
        sample = next(s for s in log.samples if "panel" in s.scores)
        judges = sorted(sample.scores)
        wanted = [sample.target[:40], sample.output.completion[:40], *judges, "EXPLANATION"]
        route = f"#/logs/{Path(infos[0].name).name}/samples/sample/{sample.id}/1/scoring"
        text = asyncio.run(view_browser.look(socket, f"{base}/index.html{route}", wanted, shots / "sample.png"))
    (shots / "sample.txt").write_text(text)
    for piece in wanted:
        assert piece in text, (piece, text[:3000])
    lines = [line.strip() for line in text.splitlines()]
    verdicts = {name: lines[lines.index(name, lines.index("EXPLANATION")) + 2] for name in judges}
    for name in judges:  # each judge's verdict as View prints it, after the answer: C / I, the rating, the panel
        score = sample.scores[name].value
        assert verdicts[name] == (score if isinstance(score, str) else f"{score:g}"), (name, verdicts[name])
    assert math.isfinite(float(verdicts["panel"]))
    assert "NaN" not in text and "NaN" not in listing
