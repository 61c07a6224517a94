"""Invariants of a study's flow across commands (issue 42's study matrix): the dry run's count against what was sent,
nothing paid twice across a budget stop and its rerun, an aimed label sheet, and every export read back.

As `checks`: each returns a list of failures (empty: it holds), and every count is recomputed from files on disk with
`json` and `csv` (the emulator's job files, the verdict files, the exported files), never by speceval's report code.
An export is read back by the reader that would take it as a candidate's answers or verdicts (that round trip is
what is checked), and Parquet by pyarrow.
"""

from __future__ import annotations

import csv
import json
import math
import re
from collections import Counter
from pathlib import Path
from typing import Any

from tests.study_matrix.checks import _verdict_files

_PLANNED = re.compile(r"^[│|]\s*total\s*[│|]\s*[│|]\s*([\d,]+)\s*[│|]")


def planned_requests(dry_run_output: str) -> int | None:
    """The dry run's total request count (its table's `total` row), None when the output has none."""
    for line in dry_run_output.splitlines():
        match = _PLANNED.match(line.strip())
        if match:
            return int(match.group(1).replace(",", ""))
    return None


def first_job_bound(dry_run_output: str) -> float | None:
    """The upper bound of one generation job (the plan's first stage: its bound over its jobs), None if not shown."""
    for line in dry_run_output.splitlines():
        cells = [c.strip() for c in re.split(r"[│|]", line.strip())[1:-1]]
        if len(cells) == 6 and cells[0] == "generation" and cells[3].isdigit() and cells[5].startswith("$"):
            return float(cells[5].lstrip("$").replace(",", "")) / max(1, int(cells[3]))
    return None


def sent_requests(out: Path) -> Counter[tuple[str, str]]:
    """(model, custom_id) → how many times the emulator was sent it in a batch job (its job files on disk)."""
    sent: Counter[tuple[str, str]] = Counter()
    for job in sorted((out / ".emulator" / "jobs").rglob("*.json")):
        for request in json.loads(job.read_text(encoding="utf-8")).get("requests", []):
            sent[(str(request.get("model")), str(request["custom_id"]))] += 1
    return sent


def realtime_answers(out: Path) -> int:
    """Answers and judge responses served on a realtime tier (flex): each one request, which no batch job file
    records."""
    count = 0
    records = [*(out / "generations").rglob("results/*.json"), *(out / "compliance").rglob("judge_responses/*.json")]
    for path in sorted(records):
        if (path.parent.parent / "rounds").is_dir():
            continue  # a conversation's assembled answers; its rounds' records are counted themselves
        count += sum(1 for e in json.loads(path.read_text(encoding="utf-8")) if e.get("service_tier") is not None)
    return count


def sent_once(out: Path, sent: Counter[tuple[str, str]] | None = None) -> list[str]:
    """Nothing paid twice: every request id went to the provider in one job only (across stops and reruns). `sent`:
    what another server says it received (default: the built-in emulator's job files)."""
    counted = sent_requests(out) if sent is None else sent
    return [f"{model} {cid} sent {n} times" for (model, cid), n in sorted(counted.items()) if n > 1][:5]


def dry_run_matches(
    planned: int | None, out: Path, bounded: bool, sent: Counter[tuple[str, str]] | None = None
) -> list[str]:
    """The dry run's request count equals what was sent. `bounded`: part of the plan is an upper bound, so what was
    sent may be fewer, never more (a conversation's later rounds, planned with every conversation to its last turn;
    the inputs stage, planned at every round as large as the first, and the inputs it keeps at their target)."""
    if planned is None:
        return ["the dry run printed no total request count"]
    sent_total = sum((sent_requests(out) if sent is None else sent).values()) + realtime_answers(out)
    if sent_total == planned or (bounded and sent_total < planned):
        return []
    return [f"dry run planned {planned} requests, {sent_total} were sent"]


def budget_raised(first: int | None, first_last: str, second: int | None, second_last: str) -> list[str]:
    """A tight budget stops the run (exit 3, the budget's last line); the rerun with the budget raised finishes."""
    failures = []
    if first != 3 or not first_last.startswith("Stopped by the budget:"):
        failures.append(f"the tight budget ended with exit {first}, last line {first_last[:120]!r}")
    if second != 0:
        failures.append(f"the rerun with the budget raised ended with exit {second}, last line {second_last[:120]!r}")
    return failures


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8-sig", newline="") as handle:
        return list(csv.DictReader(handle))


def fill_labels(sheet: Path) -> int:
    """Label every row of a sheet (a fixed pattern, two in three compliant); returns how many were labelled."""
    rows = _rows(sheet)
    for number, row in enumerate(rows):
        row["human_compliant"] = "no" if number % 3 == 0 else "yes"
    with sheet.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]) if rows else ["item"])
        writer.writeheader()
        writer.writerows(rows)
    return len(rows)


def labels_aimed(sheet: Path, report: Path, aim: dict[str, str], labelled: int) -> list[str]:
    """Every label landed on the aimed judge entry, candidate and variation: the sheet's rows are of the aimed
    candidate and variation (and scope), ppi.csv's labelled rows are of that candidate and variation only, the aimed
    entry's counts every label it judged, and their rates and intervals are finite."""
    failures = []
    for row in _rows(sheet):
        if (row["candidate"], row["variation"]) != (aim["candidate"], aim["variation"]):
            failures.append(f"sheet item {row['item']} is of {row['candidate']}/{row['variation']}, not the aim")
        if (aim["scope"] == "turn") != bool(row["turn"]):
            failures.append(f"sheet item {row['item']}: turn {row['turn']!r} at scope {aim['scope']}")
    if aim.get("mode") == "likert":
        return failures + likert_labels_counted(sheet, report, aim)
    ppi = report / "ppi.csv"
    if not ppi.is_file():
        return [*failures, "no ppi.csv with --labels"]
    counted = 0
    for row in _rows(ppi):
        if not int(row["labelled"] or 0):
            continue
        key = (row["judge"], row["candidate"], row["variation"])
        # A label is the truth about an answer: another judge of the same answers may weigh it too, but no other
        # candidate's or variation's answers are on an aimed sheet.
        if key[1:] != (aim["candidate"], aim["variation"]):
            failures.append(f"ppi.csv: labels weighed for {key}, not the aimed {aim}")
        counted += int(row["labelled"]) if key[0] == aim["judge"] else 0
        for field in ("judge_rate", "ppi_rate", "ci_low", "ci_high"):
            if not row[field] or not math.isfinite(float(row[field])):
                failures.append(f"ppi.csv {key}: {field}={row[field]!r}")
    # A label on an answer the judge did not judge (unparsed) has no verdict to correct: it is not weighed.
    unjudged = sum(
        v.get("outcome") != "judged"
        for m, v in _verdicts(report.parent / "out")
        if (m.get("judge"), m.get("model")) == (aim["judge"], aim["candidate"])
    )
    if not labelled - unjudged <= counted <= labelled:
        failures.append(f"ppi.csv weighs {counted} labels of the aimed entry, the sheet holds {labelled}")
    return failures


def human_line_held(report: Path, line: float) -> list[str]:
    """The card's `min_human_accuracy` line in the labelled report (held to its human accuracy, the design-weighted
    one where the sheet wrote its design: `weighted_by_hand` recomputes it): every entry with a human accuracy fails
    it exactly when the accuracy is under the line (judge_card.csv's `failed_checks`)."""
    failures, held = [], 0
    for row in _rows(report / "judge_card.csv"):
        if not row["human_accuracy"]:
            continue
        held += 1
        below, failed = float(row["human_accuracy"]) < line, "min_human_accuracy" in row["failed_checks"]
        if below != failed:
            failures.append(f"judge_card.csv {row['judge']}: human accuracy {row['human_accuracy']}, failed {failed}")
    return failures if held else ["judge_card.csv: no entry has a human accuracy with --labels"]


def _item(meta: dict[str, Any], variation: str, run_folder: str, entry: dict[str, Any]) -> str:
    """The sheet's item id of one verdict file entry (`human_labels.item_id`: spec, candidate, variation, run,
    statement, texts, turn and transcript): a row is matched to the answer it was drawn from, the run included. Matched
    by their texts, one answer text judged in two runs (the independent server answers alike, and judges apart) took
    one verdict for both rows: the hand count read 0.502 where the card, which counts each, read 0.536."""
    from speceval.analysis.reading.rows import ComplianceRow
    from speceval.analysis.tables.human_labels import item_id
    from speceval.inputs.script import ChatMessage

    conversation = entry.get("conversation")
    row = ComplianceRow.model_construct(
        spec=str(meta.get("spec")),
        model=str(meta.get("model")),
        variation=variation,
        run=int(run_folder.removeprefix("run")),
        statement_id=str(meta.get("statement_id")),
        input=entry["input"],
        output=entry["output"],
        turn=entry.get("turn"),
        transcript=[ChatMessage.model_validate(m) for m in conversation] if conversation is not None else None,
    )
    return item_id(row)


def weighted_by_hand(sheet: Path, report: Path, aim: dict[str, str]) -> list[str]:
    """The aimed entry's human accuracy on the card, recomputed by hand from the verdict files and weighed as the
    design the sheet wrote says to: per statement with a label, the labelled answers' share agreeing (a yes/no
    judge's verdict equal to the label; a Likert judge's 4-5 on a yes, 1-2 on a no), weighed by the entry's judged
    verdicts of that statement on the aimed candidate in the aimed variation (the population the sheet drew from)
    over those of the labelled statements. `<sheet>.design.json` must be beside the sheet and draw each labelled
    statement, and the card must say its accuracy is the weighted one."""
    design_file = sheet.with_name(sheet.stem + ".design.json")
    if not design_file.is_file():
        return [f"label-sheet wrote no {design_file.name} beside {sheet.name}"]
    drawn = {(s["spec"], s["statement_id"]): s["drawn"] for s in json.loads(design_file.read_text("utf-8"))["strata"]}
    out = report.parent / "out"
    folder = json.loads((out / "experiment.json").read_text(encoding="utf-8"))["folders"][aim["variation"]]
    likert = aim.get("mode") == "likert"
    verdicts: Counter[str] = Counter()  # the entry's judged verdicts per statement
    aimed: dict[str, int] = {}  # the aimed answers' verdicts, by the sheet's item id
    for path in _verdict_files(out):
        data = json.loads(path.read_text(encoding="utf-8"))
        meta = data.get("metadata", {})
        entry_of = (meta.get("judge"), str(meta.get("scope", "conversation")), str(meta.get("mode", "binary")))
        if entry_of != (aim["judge"], aim["scope"], "likert" if likert else "binary"):
            continue
        here = meta.get("model") == aim["candidate"] and path.relative_to(out / "compliance").parts[1] == folder
        for entry in data.get("results", []):
            value = entry.get("rating") if likert else entry.get("compliant")
            if entry.get("outcome") != "judged" or value is None:
                continue
            if here:
                verdicts[str(meta.get("statement_id"))] += 1
                aimed[_item(meta, aim["variation"], path.relative_to(out / "compliance").parts[2], entry)] = int(value)
    labelled: Counter[str] = Counter()
    agree: Counter[str] = Counter()
    failures = []
    for row in _rows(sheet):
        value = row["human_compliant"].strip().lower()
        verdict = aimed.get(row["item"])
        if not value or verdict is None:
            continue  # unlabelled, or an answer the entry did not judge (unparsed)
        if drawn.get((row["spec"], row["statement_id"]), 0) < 1:
            failures.append(f"sheet item {row['item']}: its statement is not drawn in {design_file.name}")
        labelled[row["statement_id"]] += 1
        if likert:
            agree[row["statement_id"]] += verdict >= 4 if value == "yes" else verdict <= 2
        else:
            agree[row["statement_id"]] += verdict == (value == "yes")
    if not labelled:
        return failures
    total = sum(verdicts[h] for h in labelled)
    by_hand = sum(verdicts[h] * agree[h] / labelled[h] for h in labelled) / total
    cards = [r for r in _rows(report / "judge_card.csv") if r["judge"] == aim["judge"]]
    if len(cards) != 1:
        return [*failures, f"judge_card.csv has {len(cards)} rows of the aimed entry {aim['judge']!r}, not 1"]
    (card,) = cards
    if card["human_accuracy_weighted"] != "True" or not math.isclose(
        float(card["human_accuracy"] or "nan"), by_hand, abs_tol=1e-9
    ):
        failures.append(
            f"judge_card.csv {aim['judge']}: human accuracy {card['human_accuracy']} (weighted "
            f"{card['human_accuracy_weighted']}), by hand weighed by the design {by_hand:.6f} "
            f"({dict(agree)} of {dict(labelled)} over {dict(verdicts)} verdicts)"
        )
    return failures


def likert_labels_counted(sheet: Path, report: Path, aim: dict[str, str]) -> list[str]:
    """A Likert entry aimed at: `human_agreement.csv`'s pooled row of it counts the sheet's labels of answers it
    rated and, by hand here from the verdict files, those it agrees with (4-5 on a yes, 1-2 on a no, a 3 never), its
    accuracy with a finite interval and no kappa; ppi.csv has no row of it (a rating is no rate to correct)."""
    out = report.parent / "out"
    folder = json.loads((out / "experiment.json").read_text(encoding="utf-8"))["folders"][aim["variation"]]
    ratings: dict[tuple[str, str, str, str], set[int]] = {}
    for path in _verdict_files(out):
        data = json.loads(path.read_text(encoding="utf-8"))
        meta = data.get("metadata", {})
        aimed = (meta.get("judge"), meta.get("model")) == (aim["judge"], aim["candidate"])
        if not aimed or path.relative_to(out / "compliance").parts[1] != folder:
            continue
        for entry in data.get("results", []):
            if entry.get("outcome") == "judged" and entry.get("rating") is not None:
                turn = "" if entry.get("turn") is None else str(entry["turn"])
                key = (str(meta.get("statement_id")), entry["input"], entry["output"], turn)
                ratings.setdefault(key, set()).add(int(entry["rating"]))
    labelled = agree = 0
    failures = []
    for row in _rows(sheet):
        value = row["human_compliant"].strip().lower()
        rated = ratings.get((row["statement_id"], row["input"], row["output"], row["turn"]))
        if not value or rated is None:
            continue  # unlabelled, or an answer the judge did not rate (unparsed): nothing to agree with
        if len(rated) != 1:
            failures.append(f"sheet item {row['item']}: runs with the same texts rated {sorted(rated)}")
        labelled += 1
        rating = min(rated)
        agree += rating >= 4 if value == "yes" else rating <= 2
    table = report / "human_agreement.csv"
    rows = [r for r in _rows(table) if (r["judge"], r["candidate"]) == (aim["judge"], "all")] if table.is_file() else []
    if len(rows) != 1:
        return [*failures, f"human_agreement.csv has {len(rows)} pooled rows of the aimed Likert entry, not 1"]
    (found,) = rows
    if (int(found["labelled"]), int(found["agree"])) != (labelled, agree):
        failures.append(f"human_agreement.csv: {found['agree']}/{found['labelled']} agree, by hand {agree}/{labelled}")
    if labelled and not all(_number(found[f]) for f in ("accuracy", "accuracy_ci_low", "accuracy_ci_high")):
        failures.append(f"human_agreement.csv: accuracy {found['accuracy']!r} without a finite interval")
    if found["kappa"]:
        failures.append(f"human_agreement.csv: a Likert judge's kappa {found['kappa']!r}")
    ppi = report / "ppi.csv"
    if ppi.is_file() and any(r["judge"] == aim["judge"] for r in _rows(ppi)):
        failures.append("ppi.csv has a row of the Likert entry")
    return failures


def _number(text: str) -> bool:
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False


def _verdicts(out: Path) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(file metadata, verdict) of every candidate verdict."""
    found = []
    for path in _verdict_files(out):
        data = json.loads(path.read_text(encoding="utf-8"))
        found += [(data.get("metadata", {}), entry) for entry in data.get("results", [])]
    return found


def _finite(value: Any) -> bool:
    return not isinstance(value, float) or math.isfinite(value)


def _exported_rows(path: Path, fmt: str) -> list[dict[str, Any]]:
    if fmt == "parquet":
        import pyarrow.parquet  # the file's own reader, not speceval's

        return list(pyarrow.parquet.read_table(path).to_pylist())
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def export_rows(path: Path, fmt: str, out: Path) -> list[str]:
    """jsonl / parquet: one row per verdict of the verdict files, every score finite, every answer present."""
    rows = [r for r in _exported_rows(path, fmt) if r.get("kind") == "compliance"]
    failures = []
    verdicts = _verdicts(out)
    if len(rows) != len(verdicts):
        failures.append(f"{path.name}: {len(rows)} compliance rows, the verdict files hold {len(verdicts)}")
    for row in rows:
        for field in ("confidence", "rating"):
            if not _finite(row.get(field)):
                failures.append(f"{path.name}: {field}={row.get(field)} ({row.get('source')})")
        if not row.get("output"):  # a verdict file holds judged answers only (a failed generation is not judged)
            failures.append(f"{path.name}: no answer for a {row.get('outcome')} verdict ({row.get('source')})")
    return (failures + frames_round_trip(path, out))[:10]


def frames_round_trip(path: Path, out: Path) -> list[str]:
    """The export read back as data frames (`speceval.read_verdicts`, `read_rankings` of the file) equals the study
    folder's own frames, every column and type, in any row order."""
    import speceval

    failures = []
    for reader in (speceval.read_verdicts, speceval.read_rankings):
        native, back = reader(out), reader(path)
        if list(back.dtypes) != list(native.dtypes):
            failures.append(f"{path.name}: {reader.__name__} reads back other column types")
            continue
        plain = [f.astype(object).where(f.notna(), None) for f in (native, back)]
        rows = [sorted(map(repr, f.itertuples(index=False))) for f in plain]
        if rows[0] != rows[1]:
            differ = [c for c in native.columns if sorted(map(repr, plain[0][c])) != sorted(map(repr, plain[1][c]))]
            failures.append(f"{path.name}: {reader.__name__} reads back other rows (columns {differ[:5]})")
    return failures


def _answers(out: Path) -> set[tuple[str, str, str, str, int]]:
    """(candidate, variation, run, statement, index) of every answer some verdict judged (a conversation once)."""
    keys = set()
    for path in _verdict_files(out):
        parts = path.relative_to(out / "compliance").parts  # spec/variation/runN/spec_x/judge_y/candidate/results
        meta = json.loads(path.read_text(encoding="utf-8")).get("metadata", {})
        for entry in json.loads(path.read_text(encoding="utf-8")).get("results", []):
            keys.add((str(meta["model"]), parts[1], parts[2], path.stem, int(entry["original_index"])))
    return keys


def original_shaped(out: Path) -> bool:
    """Whether any verdict has a shape in the original layout (a whole-answer binary or Likert verdict)."""
    return any(
        m.get("scope", "conversation") != "turn" and m.get("mode", "binary") != "categories" for m, _ in _verdicts(out)
    )


def export_original(folder: Path, out: Path) -> list[str]:
    """original: read back by `speceval.read_verdicts`, its verdicts the whole-answer verdicts of the verdict files
    (per-turn verdicts are left out, said so), each answer present, each compliant as judged."""
    import speceval

    frame = speceval.read_verdicts(folder)
    whole = [(m, v) for m, v in _verdicts(out) if m.get("scope", "conversation") != "turn"]
    failures = []
    if len(frame) != len(whole):
        failures.append(f"original layout read back {len(frame)} verdicts, the verdict files hold {len(whole)}")
    compliant = sum(v.get("compliant") is True for _, v in whole)
    if int((frame["compliant"] == True).sum()) != compliant:  # noqa: E712 (a nullable column)
        failures.append(f"original layout: {int((frame['compliant'] == True).sum())} compliant, not {compliant}")  # noqa: E712
    if frame["output"].isna().any():
        failures.append(f"original layout: {int(frame['output'].isna().sum())} verdicts without their answer")
    return failures


def export_inspect(folder: Path, out: Path) -> list[str]:
    """inspect: the logs read back as a candidate's answers (speceval's Inspect reader) hold every judged answer,
    each with its text; every score and metric in them is finite; each log's rates are its verdict files'."""
    from inspect_ai.log import read_eval_log

    from speceval.pipelines.inspect_logs import inspect_logs_in, inspect_records, inspect_runs

    failures, answers = [], 0
    for run in inspect_runs(folder, inspect_logs_in(folder)):
        for records in inspect_records(run).values():
            answers += len(records)
            failures += [
                f"inspect {where}: no answer"
                for where, r in records
                if r["outcome"] == "succeeded" and not r["output_text"]
            ]
    expected = len(_answers(out))
    if answers != expected:
        failures.append(f"inspect logs read back as {answers} answers, the verdict files judged {expected}")
    for log_path in inspect_logs_in(folder):
        log = read_eval_log(str(log_path))
        for sample in log.samples or []:
            for name, score in (sample.scores or {}).items():
                values = score.value.values() if isinstance(score.value, dict) else [score.value]
                if not all(_finite(v) for v in values):
                    failures.append(f"{log_path.name} sample {sample.id} epoch {sample.epoch}: {name}={score.value}")
        for result in log.results.scores if log.results else []:
            failures += [
                f"{log_path.name} {result.name}.{m}" for m, v in result.metrics.items() if not _finite(v.value)
            ]
        failures += _inspect_rates(log_path.name, log.eval.metadata["speceval"], out)
        failures += inspect_card(log_path.name, log, out / "report" / "judge_card.csv")
    return failures[:10]


def read_first_log(folder: Path) -> Any:
    """The first Inspect log of an export (inspect_ai's reader)."""
    from inspect_ai.log import read_eval_log

    return read_eval_log(str(sorted(folder.glob("*.eval"))[0]))


def inspect_card(name: str, log: Any, card_csv: Path) -> list[str]:
    """Each judge of a log carries the study's own report's judge card row (judge_card.csv, read with `csv`): canary
    judged, accuracy, interval and method, human accuracy, whether it passes and what it failed; its score's
    `canary_accuracy` metric is the card's; a judge that fails is tagged. A judge the card has no row for (a
    categorical one of whole answers) carries none."""
    meta = log.eval.metadata["speceval"]
    rows = {}
    if card_csv.is_file():
        with card_csv.open(encoding="utf-8", newline="") as handle:
            rows = {(r["spec"], r["judge"]): r for r in csv.DictReader(handle)}
    scores = {score.name: score for score in (log.results.scores if log.results else [])}
    failures = []
    for judge in meta["judges"].values():
        row, card = rows.get((meta["spec"], judge)), (meta.get("judge_card") or {}).get(judge)
        if (row is None) != (card is None):
            failures.append(f"{name} {judge}: card in the report {row is not None}, in the log {card is not None}")
            continue
        if row is None or card is None:
            continue
        exported = {
            "canary_judged": str(card["canary_judged"]),
            "canary_accuracy": card["canary"]["value"],
            "canary_ci_low": card["canary"]["ci_low"],
            "canary_ci_high": card["canary"]["ci_high"],
            "canary_ci_method": card["canary"]["ci_method"] or "",
            "human_labelled": str(card["human_labelled"]),
            "human_accuracy": card["human_accuracy"]["value"],
            "passes": {None: "", True: "True", False: "False"}[card["passes"]],
            "failed_checks": json.dumps(card["failed_checks"]),
        }
        for column, value in exported.items():
            shown = row[column]
            if isinstance(value, float) or (value is None and column not in ("canary_ci_method",)):
                same = (value is None and shown == "") or (value is not None and shown != "" and float(shown) == value)
            else:
                same = shown == value
            if not same:
                failures.append(f"{name} {judge}: {column} {value!r} in the log, {shown!r} in judge_card.csv")
        last = meta["turn_judges"].get(judge)
        for score in [judge] if last is None else [f"{judge}_turn{k}" for k in range(1, last + 1)]:
            metric = scores[score].metrics.get("canary_accuracy") if score in scores else None
            shown = float(row["canary_accuracy"]) if row["canary_accuracy"] else None
            if score in scores and (None if metric is None else metric.value) != shown:
                failures.append(f"{name} {score}: score metric canary_accuracy {metric}, the card {shown}")
        if (f"judge_card_failed:{judge}" in log.eval.tags) != (row["passes"] == "False"):
            failures.append(f"{name} {judge}: passes {row['passes']!r} but tags {log.eval.tags}")
    return failures


def _inspect_rates(name: str, meta: dict[str, Any], out: Path) -> list[str]:
    """A log's rates (its metadata's, what Inspect shows as the whole log's) are its verdict files' counts: each
    whole-answer yes/no judge's judged and compliant recomputed from the files of that candidate, variation and run,
    and every rate (a panel's too) inside its own interval."""
    folders = json.loads((out / "experiment.json").read_text(encoding="utf-8"))["folders"]
    where = (folders[meta["variation"]], f"run{meta['run']}")
    judged: Counter[str] = Counter()
    compliant: Counter[str] = Counter()
    for path in _verdict_files(out):
        parts = path.relative_to(out / "compliance").parts  # spec/variation/runN/spec_x/judge_y/candidate/results
        file_meta = json.loads(path.read_text(encoding="utf-8")).get("metadata", {})
        if parts[1:3] != where or file_meta.get("model") != meta["candidate"] or file_meta.get("scope") == "turn":
            continue
        for entry in json.loads(path.read_text(encoding="utf-8")).get("results", []):
            if entry.get("outcome") == "judged" and isinstance(entry.get("compliant"), bool):
                judged[file_meta["judge"]] += 1
                compliant[file_meta["judge"]] += entry["compliant"]
    failures = []
    for judge, rate in meta["rates"].items():
        if judge in meta.get("turn_judges", {}):
            continue  # a per-turn entry's rates are turn_rates.csv's (checks_turns), not a whole answer's
        counted = (rate.get("judged"), rate.get("compliant"))
        if meta["modes"].get(judge) == "binary" and counted != (judged[judge], compliant[judge]):
            failures.append(
                f"{name} {judge}: {counted[1]}/{counted[0]} compliant, the verdict files "
                f"{compliant[judge]}/{judged[judge]}"
            )
        if rate.get("rate") is not None and not rate["ci_low"] <= rate["rate"] <= rate["ci_high"]:
            failures.append(f"{name} {judge}: rate {rate['rate']} outside [{rate['ci_low']}, {rate['ci_high']}]")
    return failures


def same_tables(built: Path, again: Path) -> list[str]:
    """Every table of a study's own report (CSVs, summary.md, variation_statistics.json) that a report built again
    from its folder lacks or writes differently; the page itself differs only by its figures."""
    tables = [p for p in sorted(built.iterdir()) if p.suffix in (".csv", ".md", ".json")]
    if not tables:
        return [f"{built}: no tables"]
    return [
        f"{p.name} differs when `speceval report` builds it again"
        for p in tables
        if not (again / p.name).is_file() or (again / p.name).read_bytes() != p.read_bytes()
    ]
