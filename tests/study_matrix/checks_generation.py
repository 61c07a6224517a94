"""Invariants of one generation command's run directory (the generation matrix, `generation_matrix.py`), checked
from the files on disk after its last command (a kill's resume, a budget's raise).

As `checks`: each returns a list of failures (empty: it holds), and every count is recomputed with `json` from the
files (results, metadata, rounds, the realtime journals, the emulator's own job files), never by speceval's code
but its price table (what a budget's spend is priced by).
A run of conversations is one engine run directory per round (`rounds/<k>/`, the simulated user's half in
`rounds/<k>/user/`) beside the run's assembled `results/`; a run without conversations is one engine directory.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

from speceval.batch.costs import PriceTable
from speceval.paths import safe_path
from speceval.wire.usage import Usage
from tests.study_matrix.checks import _sent_tier

OUTCOMES = frozenset({"succeeded", "errored", "expired", "cancelled", "missing"})
Item = tuple[str, int]  # (statement id, original index)


def _json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def engine_dirs(run_dir: Path) -> list[Path]:
    """The run's engine directories: each round and each simulated user's half, else the run itself."""
    rounds = [*run_dir.glob("rounds/*/run.json"), *run_dir.glob("rounds/*/user/run.json")]
    return sorted(p.parent for p in rounds) or [run_dir]


def _round(run_dir: Path, engine: Path) -> int:
    parts = engine.relative_to(run_dir).parts
    return int(parts[1]) if parts[:1] == ("rounds",) else 1


def _refs(engine: Path) -> dict[str, list[Item]]:
    """batch id → its requests' inputs in position order (the metadata record's `refs` spans)."""
    found = {}
    for path in sorted(engine.glob("metadata/*.json")):
        meta = _json(path)
        found[meta["batch_id"]] = [(sid, first + i) for sid, first, count in meta["refs"] for i in range(count)]
    return found


def _results(run_dir: Path, engine: Path) -> list[tuple[str, Path]]:
    """(statement id, its results file) of an engine directory, for each statement of the run's inputs folder (the
    file name made safe as the run makes it: an id with dots, `%` or non-ASCII letters is encoded)."""
    inputs = Path(_json(run_dir / "run.json")["inputs_path"])
    found = [(p.stem, safe_path(engine / "results", p.stem, ".json")) for p in sorted(inputs.glob("*.json"))]
    return [(sid, path) for sid, path in found if path.is_file()]


def inputs_accounted(run_dir: Path, inputs: dict[str, list[str]]) -> list[str]:
    """Every input has exactly one record in `results/<statement>.json`, in input order, its own first user text,
    and a final outcome of the closed set: an answer only when it succeeded, a typed error only when it did not."""
    failures = []
    for sid, texts in inputs.items():
        path = safe_path(run_dir / "results", sid, ".json")
        if not path.is_file():
            failures.append(f"{sid}: no results file for {len(texts)} input(s)")
            continue
        records = _json(path)
        indices = [r["original_index"] for r in records]
        if indices != list(range(len(texts))):
            failures.append(f"{sid}: records of indices {indices}, inputs 0..{len(texts) - 1}")
            continue
        for record, text in zip(records, texts, strict=True):
            where = f"{sid}[{record['original_index']}]"
            outcome = record.get("outcome")
            if record.get("input_text") != text:
                failures.append(f"{where}: input_text {str(record.get('input_text'))[:60]!r}, input {text[:60]!r}")
            if outcome not in OUTCOMES:
                failures.append(f"{where}: outcome {outcome!r} is not final")
            elif (record.get("output_text") is not None) != (outcome == "succeeded"):
                failures.append(f"{where}: {outcome} with output_text {str(record.get('output_text'))[:40]!r}")
            elif (record.get("error") is None) != (outcome == "succeeded"):
                failures.append(f"{where}: {outcome} with error {record.get('error')!r}")
    named = {safe_path(run_dir / "results", sid, ".json").name for sid in inputs}
    extra = sorted(p.name for p in (run_dir / "results").glob("*.json") if p.name not in named)
    return failures + [f"results for statements with no inputs: {extra}"] if extra else failures


def custom_ids_map_back(run_dir: Path) -> list[str]:
    """Each batch answer is filed under the input its custom id names: the job's record lists its inputs in position
    order, and the custom id's suffix is the position (providers return results in any order)."""
    failures, seen = [], 0
    for engine in engine_dirs(run_dir):
        refs = _refs(engine)
        for sid, path in _results(run_dir, engine):
            for record in _json(path):
                if not record.get("custom_id") or str(record.get("batch_id", "")).startswith("realtime"):
                    continue
                seen += 1
                job = refs.get(record["batch_id"], [])
                position = int(record["custom_id"].rsplit("-", 1)[1])
                named = job[position] if position < len(job) else None
                if named != (sid, record["original_index"]):
                    failures.append(
                        f"{path}: [{record['original_index']}] custom id {record['custom_id']} names {named}"
                    )
    return failures[:5]


def _job_id(batch_id: str) -> str:
    """The emulator's job file name of a batch id (Gemini's are `batches/<id>`)."""
    return batch_id.rsplit("/", 1)[-1]


def sent_as_recorded(run_dir: Path) -> list[str]:
    """Nothing paid lost or twice: every job the provider holds has a local record (its emulator job files against
    `metadata/`), and each input went to the provider in as many jobs as its record's `attempts` counts (a request
    sent again after a kill and `--resume` would be one more)."""
    jobs = {p.stem: _json(p) for p in sorted((run_dir / ".emulator" / "jobs").glob("*/*.json"))}
    local: dict[str, Path] = {}
    failures = []
    for engine in engine_dirs(run_dir):
        refs = _refs(engine)
        local.update({_job_id(batch_id): engine for batch_id in refs})
        sent: Counter[Item] = Counter()
        for batch_id, items in refs.items():
            count = len(jobs.get(_job_id(batch_id), {}).get("requests", []))
            if count != len(items):
                failures.append(f"{engine.name}/{batch_id}: {len(items)} inputs recorded, {count} at the provider")
            sent.update(items)
        for sid, path in _results(run_dir, engine):
            for record in _json(path):
                if str(record.get("batch_id") or "").startswith("realtime"):
                    continue
                item = (sid, record["original_index"])
                if record.get("attempts", 0) != sent[item] and record.get("outcome") in OUTCOMES:
                    failures.append(
                        f"{engine.relative_to(run_dir.parent)} {item}: sent {sent[item]} time(s), "
                        f"{record.get('attempts')} attempt(s) recorded"
                    )
    orphans = sorted(set(jobs) - set(local))
    return failures[:5] + ([f"jobs at the provider with no local record: {orphans}"] if orphans else [])


def journal_once(run_dir: Path) -> list[str]:
    """A realtime answer is recorded once: no input has two outcomes in a realtime journal (across kill and resume)."""
    failures = []
    for journal in sorted(run_dir.rglob("realtime/outcomes.jsonl")):
        lines = [json.loads(line) for line in journal.read_text(encoding="utf-8").splitlines() if line.strip()]
        counted = Counter((line["statement_id"], line["record"]["original_index"]) for line in lines)
        failures += [
            f"{journal.relative_to(run_dir)}: {item} recorded {n} times" for item, n in counted.items() if n > 1
        ]
    return failures[:5]


_PLAN_ROW = re.compile(
    r"^[│|]\s*(round \d+(?: \((?:candidate|user turns)\))?|answers)\s*[│|]\s*(\S+)\s*[│|]\s*(\w+)\s*[│|]"
)


def planned_tiers(dry_run_output: str) -> dict[str, str]:
    """`--tier auto`'s plan as the dry run prints it: row label (`answers`, `round 1`, `round 2 (candidate)`,
    `round 2 (user turns)`) → tier."""
    found = {}
    for line in dry_run_output.splitlines():
        match = _PLAN_ROW.match(line.strip())
        if match:
            found[match.group(1)] = match.group(3)
    return found


def tier_recorded(run_dir: Path, tier: str, plan: dict[str, str] | None = None) -> list[str]:
    """Each candidate round went where `run.json` records: `parameters.round_tiers` (a `--tier auto` plan over
    rounds) or the tier given, and, at auto, the plan the dry run showed; batch jobs exactly where it went to the
    Batch API, and every answer the provider served says the tier it was sent at."""
    top = _json(run_dir / "run.json")["parameters"]
    stored = (top.get("round_tiers") or {}).get("tiers")
    failures = []
    for engine in engine_dirs(run_dir):
        if engine.name == "user":
            failures += _user_tier(engine, top, tier)
            continue
        number = _round(run_dir, engine)
        sent = _sent_tier(engine / "run.json")
        # auto over one round without a dry run's plan (a --new-run, planned on the folder's learned times): its
        # run.json's realtime record is the only record of the tier, checked below against jobs and answers
        want = stored[number - 1] if stored else (plan or {}).get("answers", sent if tier == "auto" else tier)
        if plan is not None:  # auto: the dry run's plan is the one recorded and sent
            label = f"round {number}" + (" (candidate)" if number > 1 else "") if stored else "answers"
            shown = plan.get(label) or plan.get(f"round {number}")
            if shown != want:
                failures.append(f"round {number}: the dry run planned {shown}, run.json records {want}")
        if sent != want:
            failures.append(f"round {number}: sent at {sent}, run.json records {want}")
        # At flex with `--on-flex-unavailable batch`, what flex kept refusing goes to batch jobs of the same round:
        # exactly the inputs `realtime/deferred.json` lists, each answered by a job.
        deferred_file = engine / "realtime" / "deferred.json"
        deferred = {(sid, i) for sid, i in _json(deferred_file)} if deferred_file.is_file() else set()
        if (sent == "batch" or bool(deferred)) != any(engine.glob("metadata/*.json")):
            failures.append(f"round {number}: sent at {sent}, batch jobs {'missing' if sent == 'batch' else 'made'}")
        for sid, path in _results(run_dir, engine):
            for record in _json(path):
                served, fell_back = record.get("service_tier"), (sid, record["original_index"]) in deferred
                ok = {"batch": served is None, "flex": served == "flex"}.get(sent, served != "flex")
                if record.get("outcome") == "succeeded" and not (ok or (fell_back and served is None)):
                    failures.append(f"round {number} {sid}[{record['original_index']}]: served at {served!r}")
    return failures[:8]


def _user_tier(half: Path, parameters: dict[str, Any], tier: str) -> list[str]:
    """A simulated user's half went at its own tier: the one given it (`parameters.simulated_user.tier`), else the
    one a `--tier auto` plan chose for its turns, else as the candidate is reached (its batch API beside a batch
    candidate, realtime beside a realtime one); batch jobs exactly where it went to a batch API."""
    given = (parameters.get("simulated_user") or {}).get("tier")
    planned = ((parameters.get("round_tiers") or {}).get("user") or {}).get("tier")
    want = given or planned or ("batch" if tier == "batch" else "realtime")
    sent = _sent_tier(half / "run.json")
    failures = []
    if sent != want and not (want == "realtime" and sent != "batch"):
        failures.append(f"{half.parent.name}/user: sent at {sent}, expected {want}")
    if (sent == "batch") != any(half.glob("metadata/*.json")):
        failures.append(
            f"{half.parent.name}/user: sent at {sent}, batch jobs {'missing' if sent == 'batch' else 'made'}"
        )
    return failures


_SUMMARY_ROW = re.compile(
    r"^[│|]\s*(succeeded|errored|expired|cancelled|missing|not final yet|total requests)\s*[│|]"
    r"\s*([\d,]+)\s*[│|]"
)


JOBS = "**/metadata/*.json"  # every job record of a run, its rounds' and simulated user's included


def summary_counts(run_dir: Path, printed: str | None = None) -> list[str]:
    """`run.json`'s totals (each engine directory's, and the run's) and the summary table the command printed equal
    the records on disk: requests, outcomes, jobs."""
    failures = []
    for engine in sorted({run_dir, *engine_dirs(run_dir)}):
        totals = _json(engine / "run.json").get("totals") or {}
        records = [r for p in sorted(engine.glob("results/*.json")) for r in _json(p)]
        outcomes = Counter(str(r.get("outcome")) for r in records)
        where = engine.relative_to(run_dir).as_posix()
        if totals.get("total_requests") != len(records):
            failures.append(f"{where}: totals.total_requests {totals.get('total_requests')}, {len(records)} records")
        if {k: v for k, v in (totals.get("outcome_counts") or {}).items() if v} != dict(outcomes):
            failures.append(f"{where}: totals.outcome_counts {totals.get('outcome_counts')}, records {dict(outcomes)}")
        # A conversation run's own totals count every round's jobs (the simulated user's too) and the candidate's
        # tokens, which its assembled records sum over their turns.
        jobs = len(list((run_dir if engine == run_dir else engine).glob(JOBS if engine == run_dir else "metadata/*")))
        if totals.get("jobs") != jobs:
            failures.append(f"{where}: totals.jobs {totals.get('jobs')}, {jobs} job records")
        for field in ("input_tokens", "output_tokens"):
            summed = sum((r.get("usage") or {}).get(field, 0) for r in records)
            if (totals.get("usage") or {}).get(field) != summed:
                failures.append(
                    f"{where}: totals.usage.{field} {(totals.get('usage') or {}).get(field)}, records {summed}"
                )
    if printed is not None:
        records = [r for p in sorted((run_dir / "results").glob("*.json")) for r in _json(p)]
        shown = {
            m.group(1): int(m.group(2).replace(",", ""))
            for line in printed.splitlines()
            if (m := _SUMMARY_ROW.match(line.strip()))
        }
        want = {o: sum(r.get("outcome") == o for r in records) for o in OUTCOMES} | {"total requests": len(records)}
        if not shown or any(shown.get(k, 0) != v for k, v in want.items()):
            failures.append(f"the printed summary {shown}, the records {want}")
    return failures[:8]


def no_key_written(root: Path, keys: list[str], printed: str = "") -> list[str]:
    """No API key in any file the commands wrote, nor in anything they printed."""
    found = [f"{k[:12]}… printed" for k in keys if k in printed]
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        data = path.read_bytes()
        found += [f"{k[:12]}… in {path.relative_to(root)}" for k in keys if k.encode() in data]
    return found[:5]


def reused(code: int | None, jobs_before: set[str], jobs_after: set[str], before: bytes, after: bytes) -> list[str]:
    """The same command again reuses the finished run: exit 0, no job sent, its results untouched."""
    failures = [] if code == 0 else [f"the identical command again: exit {code}"]
    if jobs_after != jobs_before:
        failures.append(f"the identical command again sent {len(jobs_after - jobs_before)} job(s)")
    if after != before:
        failures.append("the identical command again changed the finished run's results")
    return failures


EXPECTED_FAIL: dict[str, str] = {
    # check name → why it may fail today, and whose defect it is (the lead flips these after merging)
}


_STOP_LINE = re.compile(r"spent \$([\d.,]+), reserved \$([\d.,]+) of the \$([\d.,]+) limit")


def budget_stop(run_dir: Path, last_line: str) -> list[str]:
    """A run stopped by its budget (`--budget-usd`: what the run may spend) leaves nothing paid for lost: every job
    the provider holds has a local record, the spend its last line reports is within the limit and is what the
    run's collected jobs cost (every invocation's: a resume does not start the count again), and `run.json` says it
    stopped for the budget with the unanswered inputs outstanding."""
    match = _STOP_LINE.search(last_line)
    if match is None:
        return [f"no spend in the budget's last line {last_line[:160]!r}"]
    spent, reserved, limit = (float(g.replace(",", "")) for g in match.groups())
    failures = [] if spent <= limit else [f"spent ${spent} over the ${limit} limit"]
    records = [_json(p) for engine in engine_dirs(run_dir) for p in sorted(engine.glob("metadata/*.json"))]
    paid = sum(_job_cost(r) for r in records if r.get("collected")) + realtime_cost(run_dir)
    if abs(paid - spent) > 5e-5:
        failures.append(f"the last line says spent ${spent:.4f}, the run's answers on file cost ${paid:.4f}")
    jobs = {p.stem for p in (run_dir / ".emulator" / "jobs").glob("*/*.json")}
    orphans = sorted(jobs - {_job_id(r["batch_id"]) for r in records})
    failures += [f"jobs at the provider with no local record: {orphans}"] if orphans else []
    totals = _json(run_dir / "run.json").get("totals") or {}
    if totals.get("reason") != "budget" or not totals.get("outstanding"):
        failures.append(
            f"run.json: stopped with reason {totals.get('reason')!r}, {totals.get('outstanding')} outstanding"
        )
    return failures


def _job_cost(record: dict[str, Any]) -> float:
    """A collected job's cost: as recorded under a budget, else its usage at the model's batch price."""
    if record.get("cost_usd") is not None:
        return float(record["cost_usd"])
    usage = Usage.model_validate(record.get("usage") or {})
    return PriceTable.load().cost(record["model"], record["provider"], usage, batch=True) or 0.0


def realtime_cost(run_dir: Path) -> float:
    """What the realtime calls of a run cost: each engine directory's journaled answers, one per input, at the tier
    that served each and the directory's model's price (the shipped price table: the one the run used)."""
    prices, total = PriceTable.load(), 0.0
    for engine in engine_dirs(run_dir):
        journal = engine / "realtime" / "outcomes.jsonl"
        if not journal.is_file():
            continue
        manifest = _json(engine / "run.json")
        lines = [json.loads(line) for line in journal.read_text(encoding="utf-8").splitlines() if line.strip()]
        answers = {(line["statement_id"], line["record"]["original_index"]): line["record"] for line in lines}
        for record in answers.values():
            if record.get("usage"):
                tier = "flex" if record.get("service_tier") == "flex" else "standard"
                usage = Usage.model_validate(record["usage"])
                total += prices.cost(manifest["model_name"], manifest["provider"], usage, tier=tier) or 0.0
    return total
