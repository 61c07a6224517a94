"""Benchmark (issue 35): peak memory of `speceval report` over a conversation study's turn verdicts, against generation.

For each size N it fabricates N turn verdicts (scope turn: N / T conversations of T turns, every verdict carrying
the transcript up to its turn, as `BatchedComplianceJudge` writes them) beside the plain fabricated data of
`evidence_memory.py` (spec, inputs of N prompts, a generation run), then measures, each in its own process and
interleaved (`--pairs` rounds): `generation` (run_batched_generation over the N prompts: the flat baseline) and
`report` (`speceval report` over the N turn verdicts: flips, per-turn rates, elicitation, samples with transcripts).
It prints the ratio report / generation per round (target <= 2) and the verdict files' bytes against the same
verdicts without transcripts.

    python benchmarks/conversation_memory.py [--sizes 100000] [--turns 3] [--pairs 2]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.evidence_memory import CANDIDATE, JUDGE, _text, make_data, measure, spread  # noqa: E402
from speceval.batch.manifest import RunManifest  # noqa: E402
from speceval.spec import load_spec  # noqa: E402


def make_turn_verdicts(root: Path, size: int, statements: int, turns: int) -> tuple[Path, int, int]:
    """`size` turn verdicts under `root / "turns"`; returns the folder and the bytes of the verdict files with and
    without their transcripts."""
    spec = load_spec(root / "spec.jsonl")
    run = root / "conversation_run"
    judge_run = root / "turns" / f"spec_{spec.name}" / f"judge_{JUDGE}" / CANDIDATE
    (judge_run / "results").mkdir(parents=True)
    RunManifest(
        kind="compliance",
        command=["benchmark"],
        spec_name=spec.name,
        spec_path=str(root / "spec.jsonl"),
        spec_sha256=spec.sha256,
        inputs_path=str(run),
        inputs_sha256="0",
        model_name=JUDGE,
        provider="openai",
        parameters={"identity": {"prompt_version": "compliance_binary_v2"}},
    ).save(judge_run)
    conversations, extra = divmod(size // turns, statements)
    with_bytes = without_bytes = 0
    for s, statement in enumerate(spec.statements):
        entries = []
        for c in range(conversations + (1 if s < extra else 0)):
            messages: list[dict[str, str]] = []
            for turn in range(1, turns + 1):
                messages.append({"role": "user", "content": _text(s * 1_000_003 + c * 10 + turn, 200)})
                messages.append({"role": "assistant", "content": _text(s * 7_000_001 + c * 10 + turn, 1_000)})
                compliant = (c + turn * 3 + s) % 4 != 0
                explanation = _text(c + s + turn, 150)
                entries.append(
                    {
                        "input": messages[0]["content"],
                        "output": messages[-1]["content"],
                        "compliant": compliant,
                        "confidence": 0.9,
                        "explanation": explanation,
                        "outcome": "judged",
                        "raw_judge_response": json.dumps({"explanation": explanation, "compliant": compliant}),
                        "parse_error": None,
                        "error": None,
                        "original_index": c,
                        "batch_id": "batch_judge",
                        "turn": turn,
                        "conversation": list(messages),
                        "prompt_version": "compliance_binary_transcript_v2",
                        "conversation_id": f"conversation_{c}",
                        "ended_by": None,
                    }
                )
        metadata = {
            "model": CANDIDATE,
            "judge": JUDGE,
            "spec": spec.name,
            "statement_id": statement.id,
            "prompt_version": "compliance_binary_v2",
            "mode": "binary",
            "batch_ids": ["batch_judge"],
            "candidate_dir": str(run),
            "scope": "turn",
            "transcript_prompt_version": "compliance_binary_transcript_v2",
        }
        text = json.dumps({"schema_version": 1, "metadata": metadata, "results": entries}, indent=2)
        with_bytes += len(text.encode("utf-8"))
        without_bytes += len(
            json.dumps(
                {
                    "schema_version": 1,
                    "metadata": metadata,
                    "results": [{k: v for k, v in e.items() if k != "conversation"} for e in entries],
                },
                indent=2,
            ).encode("utf-8")
        )
        (judge_run / "results" / f"{statement.id}.json").write_text(text, encoding="utf-8")
    return root / "turns", with_bytes, without_bytes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000])
    parser.add_argument("--statements", type=int, default=200)
    parser.add_argument("--turns", type=int, default=3)
    parser.add_argument("--pairs", type=int, default=2, help="interleaved rounds (generation, report, then reversed)")
    parser.add_argument("--poll", type=float, default=0.5)
    args = parser.parse_args()
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}", flush=True)
    for size in args.sizes:
        with tempfile.TemporaryDirectory(prefix="speceval-conversations-") as tmp:
            root = Path(tmp)
            started = time.perf_counter()
            data = make_data(root / "data", size, args.statements, verdicts=False)
            data["verdicts"], with_bytes, without_bytes = make_turn_verdicts(
                root / "data", size, args.statements, args.turns
            )
            print(
                f"\n{size:,} turn verdicts ({args.turns} turns a conversation) over {args.statements} statements "
                f"(fabricated in {time.perf_counter() - started:.0f} s); verdict files {with_bytes / 1e6:.1f} MB "
                f"with transcripts, {without_bytes / 1e6:.1f} MB without ({with_bytes / without_bytes:.2f}x)",
                flush=True,
            )
            rounds = []
            for index in range(args.pairs):
                order = ["generation", "report"] if index % 2 == 0 else ["report", "generation"]
                results = {}
                for program in order:
                    results[program] = result = measure(program, data, root, args.poll)
                    extra = f", report.html {result['html_mb']:.1f} MB" if "html_mb" in result else ""
                    print(
                        f"  round {index + 1} {program:>10}: {result['seconds']:7.1f} s, peak "
                        f"{result['peak_mib']:7.1f} MiB{extra}",
                        flush=True,
                    )
                rounds.append(results)
            ratios = [r["report"]["peak_mib"] / r["generation"]["peak_mib"] for r in rounds]
            print(f"  report / generation: {spread(ratios)} (target <= 2.0)", flush=True)


if __name__ == "__main__":
    main()
