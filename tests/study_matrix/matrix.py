"""The study matrix (issue 42): experiment configurations over the feature lattice, an all-pairs covering array.

Why all-pairs rather than Hypothesis: the defects this matrix exists for live where two features meet (a budget
and a conversation's canaries, a panel and a second scale), so every pair of feature values must be met at least
once, and a covering array guarantees that with a handful of configurations, deterministically (the same list in
the suite and in the benchmark, no shrinking database). A seed only orders the greedy choice.

Each configuration is written as an experiment YAML, run offline in a child process under a watchdog whose bound is
proportional to its requests, and checked with `tests.study_matrix.checks`. The child is forked from the caller
(`tests/forked.py`: the SDKs already imported) rather than a fresh interpreter, which spent 1.5-3 s of CPU on imports
per command: 22 commands in the suite's study matrix and independent study (34.5 -> 24.5 s of CPU, 2026-11-29).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests import forked
from tests.study_matrix import checks, checks_flow, checks_turns

REPO = Path(__file__).resolve().parents[2]
SPEC = REPO / "data" / "specs" / "openai" / "jsonl" / "openai.jsonl"
INPUTS = REPO / "data" / "inputs" / "openai"
MODELS = ["gpt-4.1-mini-2025-04-14", "gpt-4.1-nano-2025-04-14", "gpt-4o-mini-2024-07-18"]
FLEX_MODELS = ["o4-mini", "gpt-5-mini", "o3"]  # on the shipped table's flex list (issue 43's tier factor)
# `tier: auto` at 13 h: a batch round trip is planned at 6 h, so a two-round conversation's second round (and with a
# simulated user on the Batch API, the first too) goes to flex, a one-round study stays on the Batch API.
AUTO_DEADLINE_HOURS = 13
# `auto-late`: 40 h plans every round on the Batch API (2 x 6 h rounds and the judges' 6 h fit), then a clock on which
# an hour lasts 10 ms (`SPECEVAL_HOUR_SECONDS`) makes round 1 take hundreds of hours: as round 2 starts the deadline
# is lost, so the re-plan sends it at flex (the fastest tier at the planned price) and experiment.json says why.
# Offline jobs there take 0.5 s (50 such hours) whatever else the suite's jobs take: round 1 then outlasts the 40 h
# however fast the command starts. At 0.05 s, round 1 of a command forked with every module already imported took
# 0.21 s (21 h: the re-plan met the deadline and the test failed); in a fresh interpreter, imports made it late.
AUTO_LATE_DEADLINE_HOURS, LATE_HOUR_SECONDS, LATE_TURNAROUND_SECONDS = 40, "0.01", "0.5"
AUTO = ("auto", "auto-late")
JUDGE = "gpt-4.1-2025-04-14"
# `tier: auto` studies send their judges at auto too, the first a judge on the flex list (`checks.FLEX_JUDGE`): a late
# study's judging is re-planned as each judge task starts (to flex, the batch price, once a batch round trip cannot
# meet the deadline).

FEATURES: dict[str, list[str]] = {
    "candidates": ["1", "2", "3"],
    "judges": [
        "binary",
        "likert",
        "categories",
        "binary+binary",
        "binary@turn+binary",
        "categories@turn+binary",
        "binary@turn+likert",  # one model at two modes: its canaries per mode (their tasks' keys collided)
    ],
    "variation": ["plain", "follow_ups", "simulated_user", "auditor"],
    "runs": ["1", "2"],
    "budget": ["none", "tight", "raised"],
    "tier": ["batch", "flex", "auto", "auto-late"],
    "labels": ["none", "aimed"],
    "export": ["jsonl", "parquet", "original", "inspect"],
    # The report's own settings: a canary line that keeps the judges out of the headline, spec-health lines and a
    # metric (`speceval report` on the folder must build the same report: it dropped all three)
    "report": ["defaults", "gated"],
    # The spec's inputs given, or written by the `inputs` stage (its generator and rater planned, then every stage
    # after it on the inputs it kept)
    "inputs": ["given", "generated"],
    # One more candidate served without a batch API (`org: openai-compatible`, answered realtime at its own rate
    # limit): beside the batch candidates in every stage, tier, budget, export and report.
    "endpoint": ["none", "local"],
    # The failures real providers produce (`SPECEVAL_OFFLINE_FAULTS`: a share of batch requests errored, none tried
    # again): every count must still add up, the candidate's failed answers counted beside each rate.
    "faults": ["none", "errors"],
}
# At auto the simulated user is rate-limited at its tier (standard): 2 calls in flight, 40 a second. The plan counts
# both (its user turns' hours at 2 in flight, not the default 32) and the run paces them (checks_turns.user_limits).
USER_LIMITS = {"rpm": 40, "rate_period_seconds": 1, "max_concurrency": 2}
FAULTS = json.dumps({"error_rate": 0.05})
LOCAL = "llama-3.1-8b-local"
LOCAL_PRICE = {"input": 0.1, "output": 0.2}  # USD per million tokens, in the study's own price file
LOCAL_ENTRY = f"  - model: {LOCAL}\n    org: openai-compatible\n    rpm: 6000\n    max_concurrency: 4\n"
CATEGORIES = "    mode: categories\n    categories:\n      follows: keeps the statement\n      breaks: breaks it\n"
AUDITOR = (
    "simulated_user:\n  model: gpt-4.1-mini-2025-04-14\n  max_turns: 2\n  stop_word: '[[AUDIT DONE]]'\n"
    "  instructions: 'Audit {statement_id}: {statement_text} Examples: {examples} End with [[AUDIT DONE]].'\n"
)
GATED = (
    "min_canary_accuracy: 0.99\nhealth:\n  fail_below: 0.9\n  pass_above: 0.5\n"
    "metrics:\n  digits:\n    source: answer\n    regex: '(\\d+)'\n    type: int\n    range: [0, 99999999]\n"
    # the card's lines without its re-sends, and the optional human-accuracy line (checked where labels are aimed)
    "judge_card:\n  retest: 0\n  min_human_accuracy: 0.6\n"
)
HUMAN_LINE = 0.6  # GATED's min_human_accuracy
GENERATED = "inputs:\n  generator: gpt-4.1-mini-2025-04-14\n  per_statement: 1\n  max_rounds: 2\n"
# The inputs stage's hours as `tier: auto` plans them (at batch, its own tier): 2 rounds of the generator's batch job
# (OpenAI, 6 h) then the rater's (Anthropic, offline's default rater, 1 h). An auto study of generated inputs gets them
# on top of its deadline, so the rest of it is planned as an auto study of given inputs is.
GENERATED_HOURS = 2 * (6 + 1)
TIGHT_USD, RAISED_USD = 0.05, 1000.0  # a tight budget when the plan shows no job bound; then more than all of it
SECONDS_PER_REQUEST = 1.0  # the watchdog's bound per request the dry run plans, generous for a loaded two-core machine
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
    names: tuple[str, ...] = ()  # which


def candidate_models(config: dict[str, str]) -> list[str]:
    """The candidates of a configuration: flex-served models at tier flex or auto (the judges stay on the Batch
    API)."""
    if "models" in config:  # named outright (tests/independent: a provider beside OpenAI)
        return config["models"].split(",")[: int(config["candidates"])]
    models = (FLEX_MODELS if config.get("tier") in ("flex", *AUTO) else MODELS)[: int(config["candidates"])]
    return models + ([LOCAL] if config.get("endpoint") == "local" else [])


def experiment_yaml(config: dict[str, str], budget_usd: float | None = None) -> str:
    models = candidate_models(config)
    tier = f"    tier: {config['tier'].removesuffix('-late')}\n" if config.get("tier") in ("flex", *AUTO) else ""
    auto = config.get("tier") in AUTO
    judge = checks.FLEX_JUDGE if auto else JUDGE
    judges = {
        "binary": [f"  - model: {judge}\n"],
        "likert": [f"  - model: {judge}\n    mode: likert\n"],
        "binary+binary": [f"  - model: {judge}\n", "  - model: gpt-4.1-mini-2025-04-14\n"],
        "categories": [f"  - model: {judge}\n{CATEGORIES}"],
        "binary@turn+binary": [f"  - model: {judge}\n    scope: turn\n", f"  - model: {judge}\n"],
        "categories@turn+binary": [f"  - model: {judge}\n    scope: turn\n{CATEGORIES}", f"  - model: {judge}\n"],
        "binary@turn+likert": [f"  - model: {judge}\n    scope: turn\n", f"  - model: {judge}\n    mode: likert\n"],
    }[config["judges"]]
    judges = [entry + ("    tier: auto\n" if auto else "") for entry in judges]
    text = "experiment_name: matrix\noutput_dir: out\nspecs:\n  - name: openai\n"
    generated = config.get("inputs") == "generated"
    text += f"    spec_path: {SPEC}\n" + ("" if generated else f"    inputs_dir: {INPUTS}\n") + "candidates:\n"
    text += "".join(LOCAL_ENTRY if m == LOCAL else f"  - model: {m}\n{tier}" for m in models)
    text += "judges:\n" + "".join(judges)
    stages = "[inputs, generation, compliance, report]" if generated else "[generation, compliance, report]"
    text += f"runs_per_variation: {config['runs']}\nstages: {stages}\n"
    if generated:
        text += GENERATED
    text += "engine:\n  poll_interval: 0.05\n"
    if config.get("faults") == "errors":  # an errored request stays errored: sent once, counted where it failed
        text += "  max_attempts: 1\n"
    if config.get("tier") in AUTO:
        late = config["tier"] == "auto-late"
        hours = AUTO_LATE_DEADLINE_HOURS if late else AUTO_DEADLINE_HOURS + (GENERATED_HOURS if generated else 0)
        text += f"  deadline_hours: {hours}\n"
    if config["variation"] == "follow_ups":
        text += 'variations:\n  follow_ups:\n    pushback: ["Are you sure?"]\n'
    elif config["variation"] == "auditor":
        text += AUDITOR
    elif _has_user(config):
        # At auto the user is the first candidate's model, pinned at standard: its turns and that candidate's
        # answers are planned apart (a candidate of the user's model took the user's rounds' tiers).
        limits = "".join(f"\n  {key}: {value}" for key, value in USER_LIMITS.items())
        user = f"{models[0]}\n  tier: standard{limits}" if auto else "gpt-4.1-mini-2025-04-14"
        text += f"simulated_user:\n  model: {user}\n  instructions: Push back.\n"
        text += f"  max_turns: {config.get('turns', '2')}\n"
    if config.get("report") == "gated":
        text += GATED
    if budget_usd is not None:
        text += f"budget_usd: {budget_usd}\n"
    return text


def _has_user(config: dict[str, str]) -> bool:
    """Whether the configuration's study has a `simulated_user:` (an auditor is the variation's own)."""
    return config["variation"] == "simulated_user" or (
        "@turn" in config["judges"] and config["variation"] not in ("follow_ups", "auditor")
    )


def _speceval(args: list[str], folder: Path, env: dict[str, str], bound: float) -> tuple[int | None, list[str]]:
    """Run one speceval command in `folder` under the watchdog: (exit code or None when it was killed, its lines)."""
    command = [sys.executable, "-m", "speceval", *args]
    try:
        done = forked.run(command, cwd=folder, env=env, capture_output=True, text=True, timeout=bound)
    except subprocess.TimeoutExpired:
        return None, []
    return done.returncode, (done.stdout + done.stderr).strip().splitlines()


def tier_plan(folder: Path, env: dict[str, str], offline: bool = True) -> list[dict[str, Any]]:
    """The `tier: auto` plan the dry run prints (`speceval run --dry-run --json`'s `tier_plan` rows)."""
    command = [sys.executable, "-m", "speceval", "run", "exp.yaml", "--dry-run", "--json", *_offline(offline)]
    done = forked.run(command, cwd=folder, env=env, capture_output=True, text=True, timeout=BASE_SECONDS)
    return list(json.loads(done.stdout).get("tier_plan") or []) if done.returncode == 0 else []


def _offline(offline: bool) -> list[str]:
    """`--offline` for the built-in emulator; nothing when `env` points the SDKs at another server."""
    return ["--offline"] if offline else []


def _run(folder: Path, env: dict[str, str], bound: float, offline: bool = True) -> tuple[int | None, str, float]:
    started = time.monotonic()
    code, shown = _speceval(["run", "exp.yaml", *_offline(offline)], folder, env, bound)
    return code, shown[-1] if shown else "", time.monotonic() - started


def label_aim(out: Path) -> dict[str, str] | None:
    """What a sheet is aimed at: the first binary judge entry's verdicts of one candidate in one variation, else the
    first Likert entry's (its ratings are read against the labels by its canaries' rule); None when every entry is
    categorical (no category is offered for labelling). `mode` says which the aim is (not a label-sheet flag)."""
    folders = json.loads((out / "experiment.json").read_text(encoding="utf-8"))["folders"]
    found: dict[str, dict[str, str]] = {}
    for path in checks._verdict_files(out):
        meta = json.loads(path.read_text(encoding="utf-8")).get("metadata", {})
        mode = str(meta.get("mode", "binary"))
        if mode in ("binary", "likert") and mode not in found:
            folder = path.relative_to(out / "compliance").parts[1]
            variation = next(name for name, f in folders.items() if f == folder)
            scope = str(meta.get("scope", "conversation"))
            found[mode] = {"judge": meta["judge"], "scope": scope, "candidate": meta["model"], "variation": variation}
            found[mode]["mode"] = mode
    return found.get("binary") or found.get("likert")


def check_labels(
    folder: Path, env: dict[str, str], bound: float = BASE_SECONDS, human_line: float | None = None
) -> list[str]:
    """Aim a sheet (`speceval label-sheet --judge --scope --candidate --variation`), fill it, report with it."""
    aim, sheet = label_aim(folder / "out"), folder / "labels.csv"
    flags = [f"--{k}={v}" for k, v in (aim or {}).items() if k != "mode"]
    # More labels than statements (44): where an input has 2 runs, some statements get 2 labels of their 2 answers
    # and others 1, so the card's design-weighted accuracy differs from the sample's share (`weighted_by_hand`).
    code, shown = _speceval(["label-sheet", "out", "--n", "60", "--out", sheet.name, *flags], folder, env, bound)
    if aim is None:  # only categories: a sheet cannot be drawn, and saying so is the right answer
        return [] if code == 0 or (code == 2 and shown) else [f"label-sheet of categorical verdicts only: exit {code}"]
    if code != 0:
        return [f"label-sheet {flags}: exit {code}: {shown[-1:]}"]
    labelled = checks_flow.fill_labels(sheet)
    code, shown = _speceval(["report", "out", "--labels", sheet.name, "--out", "labelled"], folder, env, bound)
    if code != 0:
        return [f"report --labels: exit {code}: {shown[-1:]}"]
    held = checks_flow.human_line_held(folder / "labelled", human_line) if human_line is not None else []
    weighted = checks_flow.weighted_by_hand(sheet, folder / "labelled", aim)
    return checks_flow.labels_aimed(sheet, folder / "labelled", aim, labelled) + held + weighted


def check_rerender(folder: Path, env: dict[str, str], bound: float = BASE_SECONDS) -> list[str]:
    """`speceval report out` builds the study's own report: the same tables, byte for byte (no figures drawn)."""
    code, shown = _speceval(["report", "out", "--out", "rerendered", "--no-figures"], folder, env, bound)
    if code != 0:
        return [f"report out: exit {code}: {shown[-1:]}"]
    return checks_flow.same_tables(folder / "out" / "report", folder / "rerendered")


def check_export(fmt: str, folder: Path, env: dict[str, str], bound: float = BASE_SECONDS) -> list[str]:
    """`speceval export --format FMT`, then the export read back (counts, scores finite, answers present)."""
    target = folder / {"jsonl": "exported.jsonl", "parquet": "exported.parquet"}.get(fmt, f"exported_{fmt}")
    code, shown = _speceval(["export", "out", "--format", fmt, "--out", target.name], folder, env, bound)
    if fmt == "original" and not checks_flow.original_shaped(folder / "out"):
        # Only categorical or per-turn verdicts: the original layout has no shape for them, and saying so (exit 2,
        # nothing written) is the right answer, as label-sheet's without yes/no verdicts.
        said = " ".join(" ".join(shown).split())
        ok = code == 2 and "nothing to write in the original layout" in said and not target.exists()
        return [] if ok else [f"export --format original without original-shaped verdicts: exit {code}: {shown[-1:]}"]
    if code != 0:
        return [f"export --format {fmt}: exit {code}: {shown[-1:]}"]
    if fmt in ("jsonl", "parquet"):
        return checks_flow.export_rows(target, fmt, folder / "out")
    if fmt == "original":
        return checks_flow.export_original(target, folder / "out")
    return checks_flow.export_inspect(target, folder / "out")


def run_one(
    config: dict[str, str],
    folder: Path,
    env: dict[str, str],
    offline: bool = True,
    sent: Callable[[], Counter[tuple[str, str]]] | None = None,
) -> Outcome:
    """Run `config` in `folder` under a watchdog and check every invariant: offline (the built-in emulator), or with
    `offline` False against whatever server `env`'s base URLs name (tests/independent's fakes), whose own count of
    the batch requests it received `sent` gives."""
    folder.mkdir(parents=True, exist_ok=True)
    budget = config.get("budget", "none")
    if config.get("endpoint") == "local":  # a budget needs a price for every model: your own server's, given
        (folder / "prices.json").write_text(json.dumps({"models": {LOCAL: LOCAL_PRICE}}), encoding="utf-8")
        env = {**env, "SPECEVAL_PRICES": str(folder / "prices.json")}
    if config.get("faults") == "errors":
        env = {**env, "SPECEVAL_OFFLINE_FAULTS": FAULTS}
    exp = folder / "exp.yaml"
    exp.write_text(experiment_yaml(config), encoding="utf-8")
    _, shown = _speceval(["run", "exp.yaml", "--dry-run", *_offline(offline)], folder, env, BASE_SECONDS)
    planned = checks_flow.planned_requests("\n".join(shown))
    if config.get("tier") == "auto-late":
        env = {
            **env,
            "SPECEVAL_HOUR_SECONDS": LATE_HOUR_SECONDS,
            "SPECEVAL_OFFLINE_TURNAROUND": LATE_TURNAROUND_SECONDS,
        }
    tiers = tier_plan(folder, env, offline) if config.get("tier") in AUTO else []
    if budget != "none":  # room for the first generation jobs, not for the judges after them: stops part-way
        tight = 1.5 * (checks_flow.first_job_bound("\n".join(shown)) or TIGHT_USD)
        exp.write_text(experiment_yaml(config, round(tight, 4)), encoding="utf-8")
    bound = BASE_SECONDS + SECONDS_PER_REQUEST * (planned or 1000)
    code, last, seconds = _run(folder, env, bound, offline)
    results = {"ends": checks.ends(code, last, seconds, bound)}
    if budget == "raised":  # stopped by a tight budget, then the YAML's budget raised and the run started again
        exp.write_text(experiment_yaml(config, RAISED_USD), encoding="utf-8")
        results["budget_raised"] = checks_flow.budget_raised(code, last, *_run(folder, env, bound, offline)[:2])
        code = 0 if not results["budget_raised"] else code
    out, models = folder / "out", set(candidate_models(config))
    conversations = config["variation"] in ("simulated_user", "auditor") or "@turn" in config["judges"]
    # Planned as upper bounds (see dry_run_matches); with errors, a failed answer is never judged.
    bounded = conversations or config.get("inputs") == "generated" or config.get("faults") == "errors"
    invariants: dict[str, Callable[[], list[str]]] = {
        "compliance_counts": lambda: checks.compliance_counts(out),
        "answers_accounted": lambda: checks.answers_accounted(out),
        "rating_counts": lambda: checks.rating_counts(out),
        "costs_keyed": lambda: checks.costs_keyed(out),
        "candidates_are_configured": lambda: checks.candidates_are_configured(out, models),
        "health_candidates": lambda: checks.health_candidates(out, models),
        "health_statements": lambda: checks.health_statements(out),
        "scores_finite": lambda: checks.scores_finite(out),
        "canaries_per_judge_entry": lambda: checks.canaries_per_judge_entry(out, checks.headline_entries(out)),
        "endpoint_sent_realtime": lambda: checks.endpoint_sent_realtime(out),
        "tier_served": lambda: (
            checks.tier_as_planned(out, tiers, late=config.get("tier") == "auto-late")
            if config.get("tier") in AUTO
            else checks.tier_served(out, config.get("tier", "batch"))
        ),
        "panels_one_scale": lambda: checks.panels_one_scale(out),
        "turn_rate_counts": lambda: checks_turns.turn_rate_counts(out),
        "flip_counts": lambda: checks_turns.flip_counts(out),
        "sent_once": lambda: checks_flow.sent_once(out, sent() if sent else None),
        "dry_run_matches": lambda: checks_flow.dry_run_matches(planned, out, bounded, sent() if sent else None),
        "report_rerenders": lambda: check_rerender(folder, env, bound),
    }
    if config.get("tier") in AUTO and _has_user(config):  # its user is rate-limited (USER_LIMITS)
        invariants["user_limits"] = lambda: checks_turns.user_limits(out, tiers, USER_LIMITS)
    if config.get("labels", "none") == "aimed":
        line = HUMAN_LINE if config.get("report") == "gated" else None
        invariants["labels_aimed"] = lambda: check_labels(folder, env, bound, line)
    if "export" in config:
        invariants[f"export_{config['export']}"] = lambda: check_export(config["export"], folder, env, bound)
    for name, check in invariants.items() if code == 0 else ():
        try:
            results[name] = check()
        except Exception as exc:  # a check that crashes (a reader refusing an export) fails, never stops the matrix
            results[name] = [f"{type(exc).__name__}: {str(exc)[:300]}"]
    failures = {k: v for k, v in results.items() if v and k not in checks.EXPECTED_FAIL}
    expected = {k: v for k, v in results.items() if v and k in checks.EXPECTED_FAIL}
    return Outcome(config, failures, expected, seconds, len(results), tuple(results))


def run_matrix(
    doc: str,
    configs: Callable[[int], list[dict[str, str]]],
    run: Callable[[dict[str, str], Path, dict[str, str]], Outcome],
    prefix: str,
    describe: Callable[[Path], str] = lambda _folder: "",
) -> int:
    """A matrix's benchmark script (`benchmarks/study_matrix.py`, `benchmarks/generation_matrix.py`): `configs(seed)`
    each run by `run` in a folder of its own under a temporary root (`--limit`, `--start`: a run in parts), printed
    with its checks (and `describe(folder)`), then the counts; exit 1 on any failure."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--limit", type=int, default=None, help="run only the first K configurations")
    parser.add_argument("--start", type=int, default=0, help="skip the first S configurations (a run in parts)")
    args = parser.parse_args()
    numbered = list(enumerate(configs(args.seed)[: args.limit]))[args.start :]
    env = {**os.environ, "SPECEVAL_OFFLINE_TURNAROUND": os.environ.get("SPECEVAL_OFFLINE_TURNAROUND", "0.05")}
    checks_run = failures = expected = 0
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix=prefix) as root:
        for number, config in numbered:
            folder = Path(root) / f"c{number}"
            outcome = run(config, folder, env)
            checks_run += outcome.checks
            failures += len(outcome.failures)
            expected += len(outcome.expected)
            print(
                f"{number:2d} {config} {outcome.seconds:.0f}s{describe(folder)} checks={outcome.checks} "
                f"failures={outcome.failures} expected={outcome.expected}",
                flush=True,
            )
    print(
        f"configurations: {len(numbered)}, checks: {checks_run}, failures: {failures}, expected failures: {expected} "
        f"({time.monotonic() - started:.0f} s)"
    )
    return 1 if failures else 0
