"""The generation matrix: the generation command (`python -m batched_examples.run_batched_generation`, README command
1) over its own feature lattice, an all-pairs covering array (`matrix.all_pairs`), as the study matrix runs
experiments.

Each configuration writes a small inputs folder (3 statements of the shipped spec, 2 inputs each: seconds a
configuration), then runs, offline, each in a child process under a watchdog: the dry run (which leaves a planned run
directory the run then continues), the run (killed with SIGKILL once it has sent something, then `--resume`; under a
budget that stops it, then `--resume --budget-usd` raised), and with 2 runs the same command again (reused: nothing
sent) and with `--new-run`. Every run directory is then checked with `checks_generation` and `checks_flow.sent_once`.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from speceval.emulator import ERROR_MARKER
from speceval.providers.registry import resolve_org
from tests import forked
from tests.study_matrix import checks, checks_flow
from tests.study_matrix import checks_generation as gen
from tests.study_matrix.matrix import INPUTS, REPO, SPEC, Outcome

FEATURES: dict[str, list[str]] = {
    "provider": ["openai", "anthropic", "google"],
    # flex where the provider sells it (Anthropic does not: its realtime tier is standard, and `--tier flex` is
    # refused); auto at a deadline that sends every round but the last through the Batch API (one round: none)
    "tier": ["batch", "flex", "auto"],
    # scripted: a follow-up turn; simulated_user: a second model writes turn 2; scripted+user: the script's turn 2,
    # then the user's turn 3; user_own_tier: the user's turns at a tier of their own (--simulated-user-tier: batch
    # beside a realtime candidate, else standard with its own rate limits)
    "conversation": ["none", "follow_ups", "simulated_user", "scripted+user", "user_own_tier"],
    # 2: the same command again (reused, nothing sent), then with --new-run (a second run directory)
    "runs": ["1", "2"],
    # a share of batch requests answered 5xx (retried once) and one input every tier refuses (a typed failure)
    # lossy: result lines dropped and duplicated, a share of jobs expiring half done (their rest sent again)
    # (flex_shed, half the flex calls refused and sent in a batch job of the run once --flex-patience runs out, is
    # met in EXTRA: at auto, the identical command then plans at batch and runs again instead of reusing the run)
    "faults": ["none", "errors", "lossy"],
    # SIGKILL then --resume: as soon as the run has sent anything, or once its last round has (one round: once an
    # answer is on file)
    "interruption": ["none", "killed", "killed_late"],
    # statement ids as the shipped spec's, or odd ones a results file name must encode (dots, a space, non-ASCII,
    # a leading "..", a percent sign)
    "ids": ["plain", "odd"],
    # a budget that stops the run, then `--resume` with it raised
    "budget": ["none", "stopped"],
}
# Joins of three factors the pairs need not meet, each once found broken: a kill while a budget holds round 1's
# batch jobs (the resume counted the job it adopted against nothing and spent past the limit), ...
EXTRA: list[dict[str, str]] = [
    {
        "provider": "openai",
        "tier": "batch",
        "conversation": "none",
        "runs": "1",
        "faults": "none",
        "interruption": "killed",
        "budget": "stopped",
        "ids": "plain",
    },
    # killed in round 2's candidate half after its simulated user's half closed (the resume lost that half's jobs
    # and spend)
    {
        "provider": "anthropic",
        "tier": "batch",
        "conversation": "simulated_user",
        "runs": "1",
        "faults": "none",
        "interruption": "killed_late",
        "budget": "none",
        "ids": "plain",
    },
    # flex refusing half its calls, those sent in a batch job (on_flex_unavailable batch), over two rounds with a
    # simulated user, killed, then the same command again (the run's summary counted each refused input twice)
    {
        "provider": "google",
        "tier": "flex",
        "conversation": "simulated_user",
        "runs": "2",
        "faults": "flex_shed",
        "interruption": "killed",
        "budget": "none",
        "ids": "odd",
    },
]
MODELS = {"openai": "o4-mini", "anthropic": "claude-haiku-4-5-20251001", "google": "gemini-2.5-flash"}  # flex: list
USERS = {
    "openai": "claude-haiku-4-5-20251001",
    "anthropic": "gpt-4.1-mini-2025-04-14",
    "google": "gpt-4.1-mini-2025-04-14",
}
BATCH_HOURS = {"openai": 6.0, "anthropic": 1.0, "google": 6.0}  # `--tier auto`'s default batch round trip
FAKE_KEYS = {  # recognisable, never valid: offline runs must not write them anywhere
    "OPENAI_API_KEY": "sk-genmatrix-FAKE-openai-7f3a9c01",
    "ANTHROPIC_API_KEY": "sk-ant-genmatrix-FAKE-2b8d4155",
    "GEMINI_API_KEY": "genmatrix-FAKE-gemini-5e0c77aa",
}
STATEMENTS, PER_STATEMENT, BATCH_SIZE, MAX_TOKENS = 3, 2, "2", "128"  # 6 requests in 3 jobs of 2
FOLLOW_UP = "Are you sure? Think again."
ODD_IDS = ["odd id.1 é", "..two", "three%2F"]
USER_LIMITS = ["--simulated-user-rpm", "600", "--simulated-user-max-concurrency", "2"]  # its own pace, realtime
ERRORS = {"error_rate": 0.3}
LOSSY = {"drop_rate": 0.2, "duplicate_rate": 0.2, "expire_fraction": 0.3}
SHED = {"flex_shed_rate": 0.5}
SHED_FLAGS = ["--flex-patience", "0.3", "--on-flex-unavailable", "batch"]
KILLED = {"realtime_latency_seconds": 0.2, "flex_latency_seconds": 0.2}  # realtime answers in flight when killed
KILLED_TURNAROUND = "0.5"  # a batch job in flight for half a second: killed while the provider holds it
REALTIME_STOP_USD = 0.0001  # below one realtime call's bound at 128 tokens for every model here: stops before it
RAISED_USD = "1000"
COMMAND_SECONDS = 90.0  # the watchdog per command, generous for a loaded two-core machine
MODULE = "batched_examples.run_batched_generation"
_JOB_ROW = re.compile(r"preprocessed/\S+\.jsonl\s*[│|]\s*\d+\s*[│|]\s*[\d,]*\s*[│|]\s*\$([\d.,]+)")


def write_inputs(folder: Path, config: dict[str, str]) -> dict[str, list[str]]:
    """The configuration's inputs folder and its spec beside it (`spec.jsonl`: the shipped statements of its inputs,
    renamed with odd ids): statement → its inputs' first user texts (follow-ups: a scripted second turn; errors: the
    first statement's last input carries the emulator's error marker)."""
    folder.mkdir(parents=True, exist_ok=True)
    written: dict[str, list[str]] = {}
    statements = {s["id"]: s for s in map(json.loads, SPEC.read_text(encoding="utf-8").splitlines()) if s}
    spec = []
    for number, path in enumerate(sorted(INPUTS.glob("*.json"))[:STATEMENTS]):
        sid = ODD_IDS[number] if config.get("ids") == "odd" else path.stem
        spec.append(json.dumps({**statements[path.stem], "id": sid}) + "\n")
        texts = [str(t) for t in json.loads(path.read_text(encoding="utf-8"))["inputs"][:PER_STATEMENT]]
        if config["faults"] == "errors" and not written:
            texts[-1] += f" {ERROR_MARKER}"
        scripted = config["conversation"] in ("follow_ups", "scripted+user")
        items = [{"turns": [t, FOLLOW_UP]} for t in texts] if scripted else texts
        (folder / f"{sid}.json").write_text(json.dumps({"inputs": items}), encoding="utf-8")
        written[sid] = texts
    (folder.parent / "spec.jsonl").write_text("".join(spec), encoding="utf-8")  # the statements of these inputs
    return written


def rounds(config: dict[str, str]) -> int:
    return {"none": 1, "scripted+user": 3}.get(config["conversation"], 2)


def _user(config: dict[str, str]) -> bool:
    return config["conversation"] in ("simulated_user", "scripted+user", "user_own_tier")


def realtime_tier(config: dict[str, str]) -> str:
    """The provider's discounted realtime tier: flex, or standard where it sells none (Anthropic)."""
    return "standard" if config["provider"] == "anthropic" else "flex"


def command(config: dict[str, str], inputs: Path, out: Path) -> list[str]:
    provider = config["provider"]
    args = ["--offline", "--spec-path", str(inputs.parent / "spec.jsonl"), "--pregenerated-inputs-dir", str(inputs)]
    args += ["--model-name", MODELS[provider], "--output-base-dir", str(out)]
    args += ["--batch-size", BATCH_SIZE, "--max-tokens", MAX_TOKENS]
    if config["tier"] == "flex":
        args += ["--tier", realtime_tier(config)]
    elif config["tier"] == "auto":  # every round but the last fits at batch; the last needs the faster tier
        deadline = BATCH_HOURS[provider] * (rounds(config) - 0.5)
        if _user(config):  # room for its turns through their Batch API too
            deadline += BATCH_HOURS[resolve_org(USERS[provider], None).org] * (rounds(config) - 1)
        args += ["--tier", "auto", "--deadline-hours", f"{deadline:g}"]
    if _user(config):
        args += ["--simulated-user-model", USERS[provider], "--simulated-user-instructions", "Push back once."]
        args += ["--max-turns", str(rounds(config))]
    if config["conversation"] == "user_own_tier":
        if config["tier"] == "flex":
            args += ["--simulated-user-tier", "batch"]
        else:
            args += ["--simulated-user-tier", "standard", *USER_LIMITS]
    if config["faults"] == "errors":
        args += ["--max-attempts", "2"]  # a 5xx is retried once, then a typed failure
    if config["faults"] == "flex_shed" and config["tier"] in ("flex", "auto") and provider != "anthropic":
        args += SHED_FLAGS
    return args


def environment(config: dict[str, str], base: dict[str, str]) -> dict[str, str]:
    faults: dict[str, object] = {}
    faults.update({"none": {}, "errors": ERRORS, "lossy": LOSSY, "flex_shed": SHED}[config["faults"]])
    if config["budget"] == "stopped":  # answers cost their bound: a job's spend is known before it is collected
        faults["answer_at_max_tokens"] = True
    env = {**base, **FAKE_KEYS, "COLUMNS": "250", "PYTHONPATH": f"{REPO}{os.pathsep}{base.get('PYTHONPATH', '')}"}
    env.pop("SPECEVAL_OFFLINE_FAULTS", None)
    if faults:
        env["SPECEVAL_OFFLINE_FAULTS"] = json.dumps(faults)
    return env


def slowed(env: dict[str, str]) -> dict[str, str]:
    """`env` for the command that is killed: its jobs and realtime answers take long enough to be killed in flight
    (a job keeps the turnaround it was created with; the commands after it go at the usual pace)."""
    faults = json.loads(env.get("SPECEVAL_OFFLINE_FAULTS", "{}")) | KILLED
    return {**env, "SPECEVAL_OFFLINE_FAULTS": json.dumps(faults), "SPECEVAL_OFFLINE_TURNAROUND": KILLED_TURNAROUND}


def generation(args: list[str], env: dict[str, str]) -> tuple[int | None, str]:
    """One command under the watchdog: (exit code or None when killed by it, stdout + stderr)."""
    try:
        done = forked.run(
            [sys.executable, "-m", MODULE, *args],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=COMMAND_SECONDS,
        )
    except subprocess.TimeoutExpired:
        return None, ""
    return done.returncode, done.stdout + done.stderr


def _last(shown: str) -> str:
    lines = shown.strip().splitlines()
    return lines[-1] if lines else ""


def _sent(run_dir: Path, late: int) -> bool:
    """Early (`late` 0): a batch job at the provider, or a realtime answer journaled. Late: the candidate's half of
    round `late` has sent something (a job recorded, an answer journaled: after its simulated user's half closed),
    or with one round an answer is on file."""
    if late == 1:
        return any(run_dir.glob("results/*.json"))
    if late:
        half = run_dir / "rounds" / str(late)
        journal = half / "realtime" / "outcomes.jsonl"
        return any(half.glob("metadata/*.json")) or (journal.is_file() and journal.stat().st_size > 0)
    journals = run_dir.rglob("realtime/outcomes.jsonl")
    return any(run_dir.glob(".emulator/jobs/*/*.json")) or any(p.stat().st_size for p in journals)


def killed(args: list[str], env: dict[str, str], run_dir: Path, late: int = 0) -> list[str]:
    """Start the run, SIGKILL it once it has sent something (`late`: see `_sent`): [] when it was killed mid-run."""
    process = forked.Popen(
        [sys.executable, "-m", MODULE, *args],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + COMMAND_SECONDS
    while process.poll() is None and not _sent(run_dir, late) and time.monotonic() < deadline:
        time.sleep(0.005)
    alive = process.poll() is None
    process.kill()
    process.communicate()
    return [] if alive else [f"the run ended (exit {process.returncode}) before anything it sent could be killed"]


def budget_for(config: dict[str, str], dry_run: str, plan: dict[str, str]) -> float:
    """1.5 batch jobs' bound when round 1 goes to the Batch API (answers at their bound: the second job waits, and
    after the first the next cannot fit: stopped part-way), else less than one realtime call's bound."""
    first = plan.get("answers") or plan.get("round 1") or {"batch": "batch"}.get(config["tier"], "realtime")
    bounds = [float(m.group(1).replace(",", "")) for m in map(_JOB_ROW.search, dry_run.splitlines()) if m]
    return round(1.5 * bounds[0], 6) if first == "batch" and bounds else REALTIME_STOP_USD


def run_one(config: dict[str, str], folder: Path, base_env: dict[str, str]) -> Outcome:
    """Run `config`'s commands in `folder` and check every invariant on every run directory it made."""
    started = time.monotonic()
    texts = write_inputs(folder / "inputs", config)
    out, env = folder / "out", environment(config, base_env)
    args = command(config, folder / "inputs", out)
    results: dict[str, list[str]] = {}
    shown: list[str] = []

    def step(name: str, argv: list[str], codes: tuple[int, ...] = (0,), stop: bool = False) -> int | None:
        code, text = generation(argv, env)
        shown.append(text)
        ended = code in codes and not (stop and code == 3 and not _last(text).startswith("Stopped by the budget:"))
        results[name] = [] if ended else [f"exit {code}, expected {codes}; last line {_last(text)[:160]!r}"]
        if code == 3 and ended and stop:  # checked as it stopped, before the raise
            results["budget_stop"] = gen.budget_stop(run_dir, _last(text))
        return code

    if config["provider"] == "anthropic" and config["tier"] == "flex":  # refused before anything is written
        code, text = generation([*args[: args.index("--tier")], "--tier", "flex"], env)
        shown.append(text)
        made = out.exists()
        results["flex_refused"] = [] if code == 2 and not made else [f"--tier flex on anthropic: exit {code}"]
    step("dry_run", [*args, "--dry-run"])
    plan = gen.planned_tiers(shown[-1]) if config["tier"] == "auto" else None
    runs = sorted(p.parent for p in out.glob("*/*/*/run.json"))
    if len(runs) != 1:
        results["dry_run"] = results.get("dry_run", []) + [f"{len(runs)} run directories after the dry run"]
        return Outcome(config, results, {}, time.monotonic() - started, len(results), tuple(results))
    run_dir = runs[0]
    budget = ["--budget-usd", f"{budget_for(config, shown[-1], plan or {}):g}"] if config["budget"] == "stopped" else []
    raised = ["--resume", str(run_dir), "--budget-usd", RAISED_USD]
    # The kill meets the first command that gets as far as it waits for: the run, unless its budget stops it first
    # (a budget below one realtime call sends nothing; one of 1.5 batch jobs ends in round 1), then the resume that
    # raised the budget.
    late = rounds(config) if config["interruption"] == "killed_late" else 0
    first = config["interruption"] != "none" and (not budget or (float(budget[1]) > REALTIME_STOP_USD and not late))
    if first:
        results["killed_mid_run"] = killed([*args, *budget], slowed(env), run_dir, late)
        step("resumed", ["--resume", str(run_dir), *budget], (0, 3) if budget else (0,), stop=True)
    else:
        step("run", [*args, *budget], (3,) if budget else (0,), stop=True)
    if budget and config["interruption"] != "none" and not first:
        results["killed_mid_run"] = killed(raised, slowed(env), run_dir, late)
    if budget:
        step("budget_raised", raised)
    finished = shown[-1]
    run_dirs = [run_dir]
    if config["runs"] == "2":
        jobs = {p.name for p in out.rglob(".emulator/jobs/*/*.json")}
        before = b"".join(p.read_bytes() for p in sorted(run_dir.rglob("results/*.json")))
        code, text = generation(args, env)
        shown.append(text)
        after = b"".join(p.read_bytes() for p in sorted(run_dir.rglob("results/*.json")))
        results["reused"] = gen.reused(
            code, jobs, {p.name for p in out.rglob(".emulator/jobs/*/*.json")}, before, after
        )
        step("new_run", [*args, "--new-run"])
        run_dirs = sorted(p.parent for p in out.glob("*/*/*/run.json"))
        if len(run_dirs) != 2:
            results["new_run"] = results.get("new_run", []) + [f"{len(run_dirs)} run directories, expected 2"]
    for number, run in enumerate(run_dirs):
        printed = finished if number == 0 else shown[-1]
        invariants: dict[str, Callable[[], list[str]]] = {
            "inputs_accounted": lambda run=run: gen.inputs_accounted(run, texts),
            "custom_ids_map_back": lambda run=run: gen.custom_ids_map_back(run),
            "sent_once": lambda run=run: checks_flow.sent_once(run),
            "sent_as_recorded": lambda run=run: gen.sent_as_recorded(run),
            "journal_once": lambda run=run: gen.journal_once(run),
            # a --new-run is planned on the first run's learned batch times: its own run.json is its plan
            "tier_recorded": lambda run=run, plan=plan if number == 0 else None: gen.tier_recorded(
                run, _given_tier(config), plan
            ),
            "summary_counts": lambda run=run, printed=printed: gen.summary_counts(run, printed),
        }
        for name, check in invariants.items():
            key = name if number == 0 else f"{name}@new_run"
            try:
                results[key] = check()
            except Exception as exc:  # a check that crashes on what it reads fails, never stops the matrix
                results[key] = [f"{type(exc).__name__}: {str(exc)[:300]}"]
    results["no_key_written"] = gen.no_key_written(folder, list(FAKE_KEYS.values()), "\n".join(shown))
    failures = {k: v for k, v in results.items() if v and k.split("@")[0] not in gen.EXPECTED_FAIL}
    expected = {k: v for k, v in results.items() if v and k.split("@")[0] in gen.EXPECTED_FAIL}
    return Outcome(config, failures, expected, time.monotonic() - started, len(results), tuple(results))


def _given_tier(config: dict[str, str]) -> str:
    return {"batch": "batch", "flex": realtime_tier(config)}.get(config["tier"], "auto")


def tiers_sent(folder: Path) -> list[str]:
    """The tier each candidate round of the configuration's first run went at (for the benchmark's lines)."""
    runs = sorted(p.parent for p in (folder / "out").glob("*/*/*/run.json"))
    if not runs:
        return []
    engines = [e for e in gen.engine_dirs(runs[0]) if e.name != "user"]
    return [checks._sent_tier(e / "run.json") for e in engines]
