"""Invariants every study configuration must hold (issue 42's study matrix), checked from the files on disk.

Library-free on purpose: the verdict files are read with `json` and the report's tables with `csv`, and every count
is recomputed here, never by speceval's own report code, so a report that miscounts cannot agree with itself.
Each check returns a list of failures (empty: it holds); `EXPECTED_FAIL` names the checks that fail because of a
defect another helper owns, so a matrix run records them as expected failures with the owner, never skips them.
"""

from __future__ import annotations

import csv
import io
import json
from collections import Counter
from pathlib import Path
from typing import Any

EXPECTED_FAIL: dict[str, str] = {
    # check name → why it may fail today, and whose defect it is (the lead flips these after merging)
}


def _verdict_files(out: Path) -> list[Path]:
    """Every candidate verdict file (canary files judge the spec's examples, not a candidate's answers)."""
    return [p for p in sorted((out / "compliance").rglob("results/*.json")) if "canaries" not in p.parts]


def ends(returncode: int | None, last_line: str, elapsed: float, bound: float) -> list[str]:
    """Exit 0, or exit 3 with the budget's last line, within the bound proportional to the requests."""
    if returncode is None:
        return [f"did not end within {bound:.0f} s (watchdog)"]
    if returncode == 0:
        return []
    if returncode == 3 and last_line.startswith("Stopped by the budget:"):
        return []
    return [f"exit {returncode}; last line {last_line[:120]!r}"]


def recompute_compliance(out: Path) -> Counter[tuple[str, str, str, str, str]]:
    """(spec, judge, candidate, variation, judged|compliant) → count, from the verdict files alone."""
    counts: Counter[tuple[str, str, str, str, str]] = Counter()
    for path in _verdict_files(out):
        data = json.loads(path.read_text(encoding="utf-8"))
        meta = data.get("metadata", {})
        if meta.get("mode", "binary") != "binary" or meta.get("scope", "conversation") == "turn":
            continue  # Likert ratings and turn verdicts have their own tables
        variation = path.relative_to(out / "compliance").parts[1]
        key = (str(meta["spec"]), str(meta["judge"]), str(meta["model"]), variation)
        for entry in data.get("results", []):
            if entry.get("outcome") == "judged" and isinstance(entry.get("compliant"), bool):
                counts[(*key, "judged")] += 1
                counts[(*key, "compliant")] += int(entry["compliant"])
    return counts


def compliance_counts(out: Path) -> list[str]:
    """compliance.csv's pooled rows (statement_id empty) count what the verdict files hold."""
    table = out / "report" / "compliance.csv"
    if not table.is_file():
        return ["no report/compliance.csv"]
    expected = recompute_compliance(out)
    failures = []
    with table.open(encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle):
            if row["statement_id"] or row["judge"] == "panel":
                continue
            key = (row["spec"], row["judge"], row["candidate"], row["variation"])
            for field in ("judged", "compliant"):
                if int(row[field] or 0) != expected[(*key, field)]:
                    failures.append(
                        f"compliance.csv {key} {field}={row[field]}, verdict files {expected[(*key, field)]}"
                    )
    return failures


def answers_accounted(out: Path) -> list[str]:
    """Nothing skipped silently: each pooled yes/no compliance row's judged and not-judged verdicts add up to the
    candidate's answers in that variation (every run's results records, whatever their outcome): an answer whose
    generation failed is in `not_judged_answer_<outcome>`, a verdict the judge failed in its own column."""
    table = out / "report" / "compliance.csv"
    if not table.is_file():
        return ["no report/compliance.csv"]
    answers: Counter[tuple[str, str]] = Counter()  # (candidate, variation folder) → results records
    for path in sorted((out / "generations").glob("*/*/run*/*/results/*.json")):
        variation, model = path.relative_to(out / "generations").parts[1], path.parts[-3]
        answers[(model, variation)] += len(json.loads(path.read_text(encoding="utf-8")))
    binary = {key[:4] for key in recompute_compliance(out)}
    failures = []
    # The pooled rows, and the per-statement, per-type and per-authority rows summed over each cell: a statement
    # none of whose answers was judged still has its row.
    for name in ("compliance.csv", "compliance_per_statement.csv", "compliance_by_type.csv"):
        counted: Counter[tuple[str, ...]] = Counter()
        path = out / "report" / name
        with path.open(encoding="utf-8", newline="") if path.is_file() else io.StringIO() as handle:
            for row in csv.DictReader(handle):
                key = (row["spec"], row["judge"], row["candidate"], row["variation"])
                if row.get("statement_id") and name == "compliance.csv" or row["judge"] == "panel" or key not in binary:
                    continue
                counted[key] += int(row["judged"] or 0)
                counted[key] += sum(int(v or 0) for k, v in row.items() if k.startswith("not_judged_"))
        for key, total in counted.items():
            if total != answers[(key[2], key[3])]:
                failures.append(f"{name} {key}: judged + not judged = {total}, the answers {answers[(key[2], key[3])]}")
    # A binary turn judge's turn 1: every conversation generated has its turn-1 verdict (judged or not), and every
    # conversation whose generation failed is in the row's not_judged (later turns may end early: not checked).
    turns = out / "report" / "turn_rates.csv"
    with turns.open(encoding="utf-8", newline="") if turns.is_file() else io.StringIO() as handle:
        for row in csv.DictReader(handle):
            if row["turn"] != "1" or row["measure"] != "compliant":
                continue
            counted, expected = int(row["n"]) + int(row["not_judged"]), answers[(row["candidate"], row["variation"])]
            if counted != expected:
                key = (row["spec"], row["judge"], row["candidate"], row["variation"])
                failures.append(f"turn_rates.csv {key} turn 1: n + not judged = {counted}, the answers {expected}")
    return failures


def rating_counts(out: Path) -> list[str]:
    """A Likert judge's rows (variation_statistics.json, which its headline row shows) count the ratings its verdict
    files hold, and its mean rating lies in its interval inside the scale 1-5."""
    expected: Counter[tuple[str, str, str, str]] = Counter()
    folders = json.loads((out / "experiment.json").read_text(encoding="utf-8"))["folders"]
    variation_of = {folder: name for name, folder in folders.items()}  # `pressure-1` holds `pressure_1`
    for path in _verdict_files(out):
        data = json.loads(path.read_text(encoding="utf-8"))
        meta = data.get("metadata", {})
        if meta.get("mode") != "likert" or meta.get("scope", "conversation") == "turn":
            continue
        folder = path.relative_to(out / "compliance").parts[1]
        variation = variation_of.get(folder, folder)
        key = (str(meta["spec"]), str(meta["judge"]), str(meta["model"]), variation)
        expected[key] += sum(e.get("outcome") == "judged" and e.get("rating") is not None for e in data["results"])
    table = out / "report" / "variation_statistics.json"
    rows = json.loads(table.read_text(encoding="utf-8")) if table.is_file() else []
    failures = []
    for row in rows:
        if row["judge"] == "panel" or row.get("mean_rating") is None:
            continue
        key = (row["spec"], row["judge"], row["candidate"], row["variation"])
        if row["rated"] != expected[key]:
            failures.append(f"variation_statistics.json {key} rated={row['rated']}, verdict files {expected[key]}")
        low, high = row["rating_ci_low"], row["rating_ci_high"]
        if low is not None and not 1.0 <= low <= row["mean_rating"] <= high <= 5.0:
            failures.append(f"variation_statistics.json {key} mean rating {row['mean_rating']} in [{low}, {high}]")
    missing = {key for key, n in expected.items() if n} - {
        (r["spec"], r["judge"], r["candidate"], r["variation"]) for r in rows if r.get("mean_rating") is not None
    }
    return failures + [f"no mean rating for {key}, whose verdict files hold ratings" for key in sorted(missing)]


def costs_keyed(out: Path) -> list[str]:
    """costs.csv keys each judge run's spend by the judge entry, candidate and variation its folder holds (the
    canaries, judged once for every variation: by the entry alone, variation `default`)."""
    table = out / "report" / "costs.csv"
    if not table.is_file():
        return ["no report/costs.csv"]
    folders = json.loads((out / "experiment.json").read_text(encoding="utf-8"))["folders"]
    variation_of = {folder: name for name, folder in folders.items()}
    failures = []
    with table.open(encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle):
            if row["kind"] != "compliance":
                continue
            parts = Path(row["run_dir"]).parts
            judge = next(p.removeprefix("judge_") for p in parts if p.startswith("judge_"))
            if "canaries" in parts:
                want = (judge, "", "default")
            else:
                want = (judge, parts[-1], variation_of.get(parts[2], parts[2]))
            if (row["judge"], row["candidate"], row["variation"]) != want:
                failures.append(
                    f"costs.csv {row['run_dir']}: keyed {row['judge']}/{row['candidate']}/"
                    f"{row['variation']}, its folder says {'/'.join(want)}"
                )
    return failures


def candidates_are_configured(out: Path, models: set[str]) -> list[str]:
    """Every table's candidate column names configured models only (never a model × variation compound)."""
    failures = []
    for table in sorted((out / "report").glob("*.csv")):
        with table.open(encoding="utf-8", newline="") as handle:
            for row in csv.DictReader(handle):
                candidate = row.get("candidate")
                if candidate and candidate not in models and " vs " not in candidate:
                    failures.append(f"{table.name}: candidate {candidate!r} is not a configured model")
                    break
    return failures


def health_candidates(out: Path, models: set[str]) -> list[str]:
    """statement_health.csv never counts more candidates than configured models, nor a split share below 3."""
    table = out / "report" / "statement_health.csv"
    if not table.is_file():
        return []
    failures = []
    with table.open(encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle):
            if int(row["candidates"]) > len(models):
                failures.append(
                    f"statement_health {row['statement_id']}: {row['candidates']} candidates > {len(models)}"
                )
            if len(models) < 3 and row.get("split_share"):
                failures.append(f"statement_health {row['statement_id']}: a split share with {len(models)} models")
    return failures


def health_statements(out: Path) -> list[str]:
    """Spec health leaves no statement out: every statement with a yes/no judge's per-statement row is in
    statement_health.csv, and one none of whose answers was judged (with faults, a statement's every answer may
    fail) is flagged `not_judged` (it had no row before)."""
    binary = {key[:4] for key in recompute_compliance(out)}
    judged: Counter[tuple[str, str]] = Counter()
    table = out / "report" / "compliance_per_statement.csv"
    with table.open(encoding="utf-8", newline="") if table.is_file() else io.StringIO() as handle:
        for row in csv.DictReader(handle):
            if (row["spec"], row["judge"], row["candidate"], row["variation"]) in binary:
                judged[(row["spec"], row["statement_id"])] += int(row["judged"] or 0)
    health = out / "report" / "statement_health.csv"
    rows: dict[tuple[str, str], dict[str, str]] = {}
    with health.open(encoding="utf-8", newline="") if health.is_file() else io.StringIO() as handle:
        rows = {(r["spec"], r["statement_id"]): r for r in csv.DictReader(handle) if r["kind"] == "statement"}
    failures = [f"statement_health.csv: no row for {key}" for key in sorted(set(judged) - set(rows))]
    for key, count in judged.items():
        flagged = key in rows and rows[key]["flag_not_judged"] == "True"
        if flagged != (count == 0):
            failures.append(f"statement_health.csv {key}: {count} judged, flag not_judged {flagged}")
    return failures


def scores_finite(out: Path) -> list[str]:
    """Every finite-looking number in the report's tables is finite (no NaN or inf in a rate or interval)."""
    failures = []
    for table in sorted((out / "report").glob("*.csv")):
        with table.open(encoding="utf-8", newline="") as handle:
            for row in csv.DictReader(handle):
                for field, value in row.items():
                    if value and value.lower() in ("nan", "inf", "-inf"):
                        failures.append(f"{table.name}: {field}={value}")
    return failures


def headline_entries(out: Path) -> set[str]:
    """The judge entries with headline rates: binary and Likert ones (a categorical judge's verdicts are counted
    per category, and the spec's examples say no category to check it against, so it has no canaries)."""
    entries = set()
    for path in _verdict_files(out):
        meta = json.loads(path.read_text(encoding="utf-8")).get("metadata", {})
        if meta.get("mode", "binary") != "categories":
            entries.add(str(meta["judge"]))
    return entries


def canaries_per_judge_entry(out: Path, judge_entries: set[str]) -> list[str]:
    """Every judge entry with headline rates has canary verdicts (a folder under canaries/ naming it)."""
    canaried = {p.parent.name.removeprefix("judge_") for p in (out / "compliance").rglob("canaries/**/results")}
    # One model's canaries are judged once per mode and shared with its other scopes, which the file names.
    for shared in (out / "compliance").rglob("canaries/**/shared_with.json"):
        canaried.update(json.loads(shared.read_text(encoding="utf-8"))["shared_with"])
    return [f"judge entry {entry} has no canary verdicts" for entry in sorted(judge_entries - canaried)]


def tier_served(out: Path, tier: str) -> list[str]:
    """Every candidate answer was served at the configured tier: at flex, each answer record (a plain run's, or a
    conversation round's candidate half) says the provider served it at flex and no batch job was made for it; at
    batch, no record claims a realtime tier. A conversation run's own results/ assembles its rounds' answers, and a
    simulated user's half keeps its own model's path: neither is an answer of the candidate's."""
    failures = []
    answers = []
    for path in sorted((out / "generations").rglob("results/*.json")):
        parts = path.relative_to(out).parts
        if "user" in parts or (path.parent.parent / "rounds").is_dir():
            continue
        answers.append(path)
    for path in answers:
        if _endpoint_run(path.parent.parent):
            continue  # answered realtime by its own server, whatever the study's tier (`endpoint_sent_realtime`)
        for entry in json.loads(path.read_text(encoding="utf-8")):
            served = entry.get("service_tier")
            if tier == "flex" and entry.get("outcome") == "succeeded" and served != "flex":
                failures.append(f"{path}: [{entry['original_index']}] served at {served!r}, not flex")
            if tier == "batch" and served is not None:
                failures.append(f"{path}: [{entry['original_index']}] served at {served!r} in a batch study")
    if tier == "flex":
        jobs = [p for p in (out / "generations").rglob("metadata/*.json") if "user" not in p.relative_to(out).parts]
        failures += [f"{p}: a batch job for a flex candidate" for p in jobs]
    if not answers:
        failures.append("no answer records found")
    return failures


NO_BATCH_API = frozenset({"openai-compatible", "together", "ray"})
"""Orgs whose models are served without a batch API: an endpoint candidate's runs (the `endpoint` factor)."""


def _endpoint_run(run_dir: Path) -> bool:
    manifest = run_dir / "run.json"
    return manifest.is_file() and json.loads(manifest.read_text(encoding="utf-8")).get("provider") in NO_BATCH_API


def endpoint_sent_realtime(out: Path) -> list[str]:
    """An endpoint candidate's runs (an org without a batch API) went realtime: no batch job, every answer record
    without a batch id, whatever tier the study gives its batch candidates."""
    failures = []
    for manifest in sorted((out / "generations").rglob("run.json")):
        if not _endpoint_run(manifest.parent):
            continue
        meta = json.loads(manifest.read_text(encoding="utf-8"))
        if "realtime" not in meta["parameters"] and not (manifest.parent / "rounds").is_dir():
            failures.append(f"{manifest}: an endpoint run without its realtime settings")
        if any(manifest.parent.glob("metadata/*.json")):
            failures.append(f"{manifest}: batch jobs made for an endpoint run")
    return failures


def _replans(out: Path) -> tuple[dict[tuple[str, int], tuple[str, str]], list[str]]:
    """(run folder, round) → (planned, sent) as experiment.json's `replans` last recorded it (each run and variation
    of an entry re-plans its own round as it starts, and names its run folder)."""
    state = json.loads((out / "experiment.json").read_text(encoding="utf-8"))
    moved: dict[tuple[str, int], tuple[str, str]] = {}
    failures = []
    for replan in state.get("replans", []):
        if replan.get("judging"):
            continue  # a judge's round names no run: `judges_as_planned` holds its tasks to it
        where = (str(replan.get("run")), int(replan["round"]))
        if not (out / where[0] / "rounds" / str(where[1])).is_dir():
            failures.append(f"experiment.json: a re-plan of {replan.get('entry')} names no round folder: {where}")
        moved[where] = (replan["planned"], replan["sent"])  # a round re-planned again on a resume: the last one
        if (replan["planned"], replan["sent"]) == ("flex", "batch"):
            failures.append(f"experiment.json: round {where[1]} of {where[0]} moved from flex back to batch")
    return moved, failures


def tier_as_planned(out: Path, plan: list[dict[str, Any]], late: bool = False) -> list[str]:
    """`tier: auto`: each candidate round was sent at the tier the dry run planned for it, or where experiment.json
    records a re-plan of that run's round (`replans`), at the tier it says was sent, as the round's own run.json
    says, with batch jobs exactly where it went to the Batch API and answer records that say flex exactly where it
    went at flex; never flex back to batch. On a clock that keeps time nothing is re-planned; on one that runs
    `late` (the deadline lost before round 2 starts), every round 2 or later that started says so in a re-plan."""
    inputs = [row for row in plan if str(row.get("entry") or "").startswith("inputs ")]
    planned = {
        (row["model"], int(row["label"].split()[1]) if row["label"].startswith("round") else 1): row["tier"]
        for row in plan
        if row["label"] != "judging" and "user turns" not in row["label"] and row not in inputs
    }
    failures = [] if planned else ["the dry run planned no candidate round"]
    # A study of generated inputs: the inputs stage's rounds planned (its hours count against the deadline) at the
    # tier they are sent at, each round its own run folder with its own jobs.
    sent_inputs = sorted((out / "inputs").rglob("metadata/*.json")) if (out / "inputs").is_dir() else []
    if (out / "inputs").is_dir() and not inputs:
        failures.append("the inputs stage ran, and the plan has no round of it")
    if inputs and {row["tier"] for row in inputs} != {"batch"}:
        failures.append(f"the inputs stage planned at {sorted({row['tier'] for row in inputs})}, sent at batch")
    if inputs and (out / "inputs").is_dir() and not sent_inputs:
        failures.append("the inputs stage planned at batch, and no batch job of it was made")
    moved, said = _replans(out)
    failures += said
    if moved and not late:
        failures.append(f"re-planned on a clock that kept time: {sorted(moved)}")
    seen = 0
    for manifest in sorted((out / "generations").rglob("run.json")):
        parts = manifest.relative_to(out).parts
        if "user" in parts or (manifest.parent / "rounds").is_dir():
            continue  # a simulated user's half, or a conversation's run that assembles its rounds
        meta = json.loads(manifest.read_text(encoding="utf-8"))
        if meta.get("provider") in NO_BATCH_API:
            continue  # an endpoint candidate: not at auto, never re-planned (`endpoint_sent_realtime`)
        number = int(parts[parts.index("rounds") + 1]) if "rounds" in parts else 1
        run = "/".join(parts[: parts.index("rounds")]) if "rounds" in parts else "/".join(parts[:-1])
        realtime = meta["parameters"].get("realtime")
        sent = "batch" if realtime is None else realtime.get("service_tier") or "standard"
        want = planned.get((meta["model_name"], number))
        seen += 1
        if (run, number) in moved:
            was, want = moved[(run, number)]
            if was == "batch" and planned.get((meta["model_name"], number)) == "flex":
                failures.append(f"{manifest}: planned flex, re-planned as if planned batch")
        elif late and number >= 2:
            failures.append(f"{manifest}: round {number} started after the deadline was lost, and no re-plan says so")
        if sent != want:
            failures.append(f"{manifest}: round {number} of {meta['model_name']} sent at {sent}, expected {want}")
        if (sent == "batch") != any(manifest.parent.glob("metadata/*.json")):
            failures.append(f"{manifest}: sent at {sent} but batch jobs {'missing' if sent == 'batch' else 'made'}")
        for results in manifest.parent.glob("results/*.json"):
            for entry in json.loads(results.read_text(encoding="utf-8")):
                served = entry.get("service_tier")
                expected = {"batch": served is None, "flex": served == "flex", "standard": served != "flex"}[sent]
                if entry.get("outcome") == "succeeded" and not expected:
                    failures.append(f"{results}: [{entry['original_index']}] served at {served!r}, sent at {sent}")
    if not seen:
        failures.append("no candidate run found")
    return failures + judges_as_planned(out, plan, late)


FLEX_JUDGE = "gpt-5"
"""`tier: auto` studies' first judge (`matrix.experiment_yaml`): on the flex list, so a late study's judging moves."""


def _sent_tier(manifest: Path) -> str:
    """The tier a run.json says its requests went at: batch without a realtime record."""
    realtime = json.loads(manifest.read_text(encoding="utf-8"))["parameters"].get("realtime")
    return "batch" if realtime is None else realtime.get("service_tier") or "standard"


def _judge_tiers(out: Path, plan: list[dict[str, Any]]) -> set[tuple[tuple[str, str, str], str, str]]:
    """((model, mode, scope), tier, entry) of each judge entry's judging round in the plan, the entry read from
    exp.yaml."""
    import yaml

    rows = [r for r in plan if r["label"] == "judging"]
    judges = yaml.safe_load((out.parent / "exp.yaml").read_text(encoding="utf-8"))["judges"] if rows else []
    found = set()
    for row in rows:
        judge = judges[int(str(row["entry"]).removeprefix("judges[").rstrip("]"))]
        key = (judge["model"], judge.get("mode", "binary"), judge.get("scope", "conversation"))
        found.add((key, row["tier"], str(row["entry"])))
    return found


def judges_as_planned(out: Path, plan: list[dict[str, Any]], late: bool = False) -> list[str]:
    """`tier: auto` judges: each judge task (a run.json under compliance/) went at the tier the dry run planned for
    its model's judging, or at the one a judging re-plan in experiment.json says (each task re-plans as it starts:
    the canaries, judged as the study starts, may keep the plan's); batch jobs exactly where it went through the
    Batch API; a judging re-plan never moves flex back to batch. On a late clock the judging says it was re-planned
    (at the fastest tier of the planned price: on a scaled clock a flex call's seconds look like hours, so that
    may be batch, as for a candidate's round). Two entries of one model (a turn judge and a whole-conversation one)
    are told apart by the plan's `entry` and the run's mode and scope (the spec's examples, shared by a model's
    entries of one mode, may go at either's tier)."""
    planned = _judge_tiers(out, plan)
    replans = [r for r in json.loads((out / "experiment.json").read_text(encoding="utf-8")).get("replans", [])]
    moved: dict[str, set[str]] = {}
    failures = []
    for replan in (r for r in replans if r.get("judging")):
        moved.setdefault(str(replan["entry"]), set()).add(replan["sent"])
        if (replan["planned"], replan["sent"]) == ("flex", "batch"):
            failures.append(f"experiment.json: {replan['entry']}'s judging moved from flex back to batch")
    for manifest in sorted((out / "compliance").rglob("run.json")):
        meta = json.loads(manifest.read_text(encoding="utf-8"))
        identity = meta["parameters"].get("identity", {})
        mode, scope = identity.get("mode", "binary"), identity.get("scope")  # no scope: the spec's examples
        mine = [
            (tier, entry)
            for (model, m, s), tier, entry in planned
            if (model, m) == (meta["model_name"], mode) and scope in (None, s)
        ]
        if not mine:
            continue  # a judge the plan does not time (not at auto)
        # Its own entry's plan or re-plans (any judge's re-plans counted for every judge hid one sent at a tier no
        # plan or re-plan of its own said: a judge moved by another's re-plan)
        tiers = {tier for tier, _ in mine} | {t for _, entry in mine for t in moved.get(entry, set())}
        sent = _sent_tier(manifest)
        if sent not in tiers:
            failures.append(f"{manifest}: judged at {sent}, planned {sorted(tiers)}, re-planned {sorted(moved)}")
        if (sent == "batch") != any(manifest.parent.glob("metadata/*.json")):
            failures.append(f"{manifest}: judged at {sent} but batch jobs {'missing' if sent == 'batch' else 'made'}")
    if late and planned and not moved:
        failures.append("a late study's judging started after the deadline was lost, and no re-plan says so")
    return failures


def panels_one_scale(out: Path) -> list[str]:
    """Every panel (panel.csv's row) is over judges of one scope and one scale (mode), as the verdict files say."""
    table = out / "report" / "panel.csv"
    if not table.is_file():
        return []
    kinds: dict[str, set[tuple[str, str]]] = {}
    for path in _verdict_files(out):
        meta = json.loads(path.read_text(encoding="utf-8")).get("metadata", {})
        kind = (str(meta.get("mode", "binary")), str(meta.get("scope", "conversation")))
        kinds.setdefault(str(meta["judge"]), set()).add(kind)
    failures = []
    with table.open(encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle):
            judges = json.loads(row["judge_rates"] or "{}")
            mixed = set().union(*(kinds.get(j, {("unknown", "unknown")}) for j in judges)) if judges else set()
            if len(mixed) > 1:
                failures.append(f"panel.csv {row['candidate']}/{row['variation']} mixes {sorted(mixed)}")
    return failures
