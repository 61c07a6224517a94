"""The README's "Using the library" chain, run verbatim in a fresh interpreter: two candidates, compliance, ranking."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from tests.conftest import OFFLINE_TURNAROUND, REPO, cli_env, doc_text

MARKER = "<!-- readme-library-chain:"
FRAMES_MARKER = "<!-- library-frames:"


def readme_block() -> str:
    text = doc_text()
    return text.split(MARKER, 1)[1].split("```python\n", 1)[1].split("```", 1)[0]


def test_the_readme_library_chain_runs_verbatim_offline(tmp_path: Path) -> None:
    shutil.copytree(REPO / "data", tmp_path / "data")
    code = readme_block()
    assert "offline=True" in code and "import speceval." not in code  # everything it uses comes from `speceval`
    done = run_code(code, tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "position-consistent" in done.stdout and "judged compliant" in done.stdout

    runs = sorted((tmp_path / "demo/generations/openai").glob("*/*/run.json"))
    assert [json.loads(p.read_text())["model_name"] for p in runs] == [
        "claude-haiku-4-5-20251001",
        "gpt-4.1-mini-2025-04-14",
    ]
    for path in runs:
        manifest = json.loads(path.read_text())
        assert manifest["offline"] and manifest["status"] == "finished"
        assert manifest["parameters"]["params"]["temperature"] == 0.7
        # Offline, polls follow the emulator's turnaround (half of it), not the 60 s default.
        assert manifest["parameters"]["engine"]["poll_interval"] == OFFLINE_TURNAROUND / 2
        assert manifest["totals"]["outcome_counts"] == {"succeeded": manifest["parameters"]["requests"]}

    compliance = tmp_path / "demo/compliance/spec_openai/judge_gpt-4.1-2025-04-14"
    for candidate in ("claude-haiku-4-5-20251001", "gpt-4.1-mini-2025-04-14"):
        summary = json.loads((compliance / candidate / "summary.json").read_text())
        assert summary["model"] == candidate and summary["outcomes"]["judged"] > 30
        assert summary["outcomes"]["pending"] == 0
        judge_run = json.loads((compliance / candidate / "run.json").read_text())
        assert judge_run["offline"] is True
        assert judge_run["parameters"]["engine"]["poll_interval"] == OFFLINE_TURNAROUND / 2
    rankings = tmp_path / "demo/rankings/spec_openai/judge_gpt-4.1-2025-04-14"
    pairs = sorted(p.name for p in rankings.iterdir() if (p / "summary.json").is_file())
    assert pairs == [
        "claude-haiku-4-5-20251001xgpt-4.1-mini-2025-04-14",
        "gpt-4.1-mini-2025-04-14xclaude-haiku-4-5-20251001",
    ]
    assert (rankings / "position_consistency.json").is_file()

    # The "Results as data frames" block, run as a notebook would after the chain: one row per verdict.
    frames = run_code(frames_block(), tmp_path)
    assert frames.returncode == 0, frames.stderr[-3000:]
    verdicts = sum(
        len(json.loads(f.read_text())["results"])
        for f in (tmp_path / "demo/compliance").rglob("results/*.json")
        if "canaries" not in json.loads(f.read_text())
    )
    assert f"{verdicts} verdicts; ['synthetic']" in frames.stdout
    assert "ci_method" in frames.stdout and "claude-haiku-4-5-20251001" in frames.stdout


def run_code(code: str, folder: Path) -> subprocess.CompletedProcess[str]:
    """A doc's Python block run in a fresh interpreter in `folder`, as a reader would."""
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=folder,
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )


def frames_block() -> str:
    return doc_text().split(FRAMES_MARKER, 1)[1].split("```python\n", 1)[1].split("```", 1)[0]


def readme_emulator_block() -> str:
    text = doc_text()
    return text.split("**The emulator as a library.**", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]


def test_the_readme_emulator_snippet_points_a_pipeline_at_an_in_process_emulator(tmp_path: Path) -> None:
    from speceval import BatchedGenerationPipeline, EngineOptions, GenerationConfig
    from tests.conftest import write_inputs, write_spec

    statements = {"s1": ["one", "two"], "s2": ["three"]}
    pipeline = BatchedGenerationPipeline(
        GenerationConfig(
            spec_path=write_spec(tmp_path / "spec.jsonl", list(statements)),
            inputs_dir=write_inputs(tmp_path / "inputs", statements),
            model_name="gpt-4.1-mini-2025-04-14",
            output_base_dir=tmp_path / "out",
            engine=EngineOptions(poll_interval=0.1, timeout_hours=0.05, max_attempts=10),
        )
    )
    namespace: dict[str, object] = {"pipeline": pipeline}
    exec(readme_emulator_block(), namespace)  # noqa: S102 - the README's own text, run as a reader would
    summary = namespace["summary"]
    assert summary.finished and summary.outcome_counts == {"succeeded": 3}  # type: ignore[attr-defined]
    assert json.loads((pipeline.run_dir / "run.json").read_text())["offline"] is False
