"""The study matrix (issue 42): experiment configurations over the feature lattice, an all-pairs covering array.

Why all-pairs rather than Hypothesis: the defects this matrix exists for live where two features meet (a budget
and a conversation's canaries, a panel and a second scale), so every pair of feature values must be met at least
once, and a covering array guarantees that with a handful of configurations, deterministically (the same list in
the suite and in the benchmark, no shrinking database). A seed only orders the greedy choice.

Each configuration is written as an experiment YAML, run offline in a subprocess under a watchdog whose bound is
proportional to its requests, and checked with `tests.study_matrix.checks`.
"""

from __future__ import annotations

import itertools
import random
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from tests.study_matrix import checks

REPO = Path(__file__).resolve().parents[2]
SPEC = REPO / "data" / "specs" / "openai" / "jsonl" / "openai.jsonl"
INPUTS = REPO / "data" / "inputs" / "openai"
MODELS = ["gpt-4.1-mini-2025-04-14", "gpt-4.1-nano-2025-04-14", "gpt-4o-mini-2024-07-18"]
FLEX_MODELS = ["o4-mini", "gpt-5-mini", "o3"]  # on the shipped table's flex list (issue 43's tier factor)
JUDGE = "gpt-4.1-2025-04-14"

FEATURES: dict[str, list[str]] = {
    "candidates": ["1", "2", "3"],
    "judges": ["binary", "likert", "binary+binary", "binary@turn+binary"],
    "variation": ["plain", "follow_ups", "simulated_user"],
    "runs": ["1", "2"],
    "budget": ["none", "tight"],
    "tier": ["batch", "flex"],
}
SECONDS_PER_REQUEST = 1.5  # the watchdog's bound per planned request, generous for a loaded two-core machine
BASE_SECONDS = 90.0


def all_pairs(features: dict[str, list[str]], seed: int = 0) -> list[dict[str, str]]:
    """A greedy covering array: configurations until every pair of values of two features occurs in one."""
    names = list(features)
    uncovered = {
        ((a, va), (b, vb)) for a, b in itertools.combinations(names, 2) for va in features[a] for vb in features[b]
    }
    rng = random.Random(seed)
    chosen: list[dict[str, str]] = []
    while uncovered:
        best, best_gain = None, -1
        for _ in range(50):
            candidate = {name: rng.choice(features[name]) for name in names}
            gain = sum(((a, candidate[a]), (b, candidate[b])) in uncovered for a, b in itertools.combinations(names, 2))
            if gain > best_gain:
                best, best_gain = candidate, gain
        assert best is not None
        if best_gain == 0:  # force one uncovered pair in
            (a, va), (b, vb) = next(iter(uncovered))
            best = {**best, a: va, b: vb}
        uncovered -= {((a, best[a]), (b, best[b])) for a, b in itertools.combinations(names, 2)}
        chosen.append(best)
    return chosen


@dataclass
class Outcome:
    config: dict[str, str]
    failures: dict[str, list[str]]
    expected: dict[str, list[str]]
    seconds: float
    checks: int  # invariants checked (a budget stop is checked for its ending only: its tables are partial)


def candidate_models(config: dict[str, str]) -> list[str]:
    """The candidates of a configuration: flex-served models at tier flex (the judges stay on the Batch API)."""
    return (FLEX_MODELS if config.get("tier") == "flex" else MODELS)[: int(config["candidates"])]


def experiment_yaml(config: dict[str, str], budget_usd: float | None = None) -> str:
    models = candidate_models(config)
    tier = "    tier: flex\n" if config.get("tier") == "flex" else ""
    judges = {
        "binary": [f"  - model: {JUDGE}\n"],
        "likert": [f"  - model: {JUDGE}\n    mode: likert\n"],
        "binary+binary": [f"  - model: {JUDGE}\n", "  - model: gpt-4.1-mini-2025-04-14\n"],
        "binary@turn+binary": [f"  - model: {JUDGE}\n    scope: turn\n", f"  - model: {JUDGE}\n"],
    }[config["judges"]]
    text = "experiment_name: matrix\noutput_dir: out\nspecs:\n  - name: openai\n"
    text += f"    spec_path: {SPEC}\n    inputs_dir: {INPUTS}\ncandidates:\n"
    text += "".join(f"  - model: {m}\n{tier}" for m in models) + "judges:\n" + "".join(judges)
    text += f"runs_per_variation: {config['runs']}\nstages: [generation, compliance, report]\n"
    text += "engine:\n  poll_interval: 0.05\n"
    if config["variation"] == "follow_ups":
        text += 'variations:\n  follow_ups:\n    pushback: ["Are you sure?"]\n'
    elif config["variation"] == "simulated_user" or config["judges"] == "binary@turn+binary":
        text += "simulated_user:\n  model: gpt-4.1-mini-2025-04-14\n  instructions: Push back.\n  max_turns: 2\n"
    if budget_usd is not None:
        text += f"budget_usd: {budget_usd}\n"
    return text


def run_one(config: dict[str, str], folder: Path, env: dict[str, str]) -> Outcome:
    """Run `config` offline in `folder` under a watchdog and check every invariant."""
    folder.mkdir(parents=True, exist_ok=True)
    budget = 0.05 if config["budget"] == "tight" else None  # a fraction of the planned cost: stops part-way
    (folder / "exp.yaml").write_text(experiment_yaml(config, budget), encoding="utf-8")
    requests = 40 * int(config["candidates"]) * int(config["runs"]) * (2 if "+" in config["judges"] else 1)
    bound = BASE_SECONDS + SECONDS_PER_REQUEST * requests
    command = [sys.executable, "-m", "speceval", "run", "exp.yaml", "--offline"]
    started = time.monotonic()
    try:
        done = subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True, timeout=bound)
        code, shown = done.returncode, (done.stdout + done.stderr).strip().splitlines()
    except subprocess.TimeoutExpired:
        code, shown = None, []
    seconds = time.monotonic() - started
    out, models = folder / "out", set(candidate_models(config))
    results = {"ends": checks.ends(code, shown[-1] if shown else "", seconds, bound)}
    if code == 0:
        results["compliance_counts"] = checks.compliance_counts(out)
        results["candidates_are_configured"] = checks.candidates_are_configured(out, models)
        results["health_candidates"] = checks.health_candidates(out, models)
        results["scores_finite"] = checks.scores_finite(out)
        entries = {
            p.name.removeprefix("judge_")
            for p in (out / "compliance").rglob("spec_*/judge_*")
            if p.is_dir() and "canaries" not in p.parts
        }
        results["canaries_per_judge_entry"] = checks.canaries_per_judge_entry(out, entries)
        results["tier_served"] = checks.tier_served(out, config.get("tier", "batch"))
    failures = {k: v for k, v in results.items() if v and k not in checks.EXPECTED_FAIL}
    expected = {k: v for k, v in results.items() if v and k in checks.EXPECTED_FAIL}
    return Outcome(config, failures, expected, seconds, len(results))
