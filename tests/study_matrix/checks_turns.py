"""The study matrix's per-turn invariants (issue 42): `turn_rates.csv` and `flips.csv` count what the turn verdict
files hold, recomputed here with `json` and `csv` only, never through speceval's report code.

A conversation is one (verdict file, original_index): a turn judge's verdict file holds one candidate's
conversations of one statement in one run, one record per judged turn. It counts towards flips when turn 1 and a
later turn were judged (the written rule of `flips.csv`).
"""

from __future__ import annotations

import csv
import json
import math
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from tests.study_matrix.checks import _verdict_files

_Cell = tuple[str, str, str, str]
"""(spec, judge entry, candidate, variation folder)."""


def _turn_verdicts(out: Path) -> dict[_Cell, dict[tuple[str, int], dict[int, bool]]]:
    """cell → conversation → turn → compliant, for binary turn judges' judged verdicts."""
    cells: dict[_Cell, dict[tuple[str, int], dict[int, bool]]] = defaultdict(lambda: defaultdict(dict))
    for path in _verdict_files(out):
        data = json.loads(path.read_text(encoding="utf-8"))
        meta = data.get("metadata", {})
        if meta.get("scope") != "turn" or meta.get("mode", "binary") != "binary":
            continue
        cell = (
            str(meta["spec"]),
            str(meta["judge"]),
            str(meta["model"]),
            path.relative_to(out / "compliance").parts[1],
        )
        for entry in data.get("results", []):
            if entry.get("outcome") == "judged" and isinstance(entry.get("compliant"), bool):
                cells[cell][(str(path), int(entry["original_index"]))][int(entry["turn"])] = entry["compliant"]
    return cells


def _rows(table: Path) -> list[dict[str, str]]:
    with table.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def turn_rate_counts(out: Path) -> list[str]:
    """Each binary turn judge's `compliant` row of turn_rates.csv: n and rate as the turn verdict files give them."""
    cells = _turn_verdicts(out)
    if not cells:
        return []
    table = out / "report" / "turn_rates.csv"
    if not table.is_file():
        return ["turn verdicts but no report/turn_rates.csv"]
    expected: Counter[tuple[str, str, str, str, int, str]] = Counter()
    for cell, conversations in cells.items():
        for turns in conversations.values():
            for turn, compliant in turns.items():
                expected[(*cell, turn, "n")] += 1
                expected[(*cell, turn, "compliant")] += compliant
    failures, seen = [], 0
    for row in _rows(table):
        key = (row["spec"], row["judge"], row["candidate"], row["variation"], int(row["turn"]))
        if row["measure"] != "compliant" or (*key, "n") not in expected:
            continue
        seen += 1
        n, compliant = expected[(*key, "n")], expected[(*key, "compliant")]
        if int(row["n"]) != n or abs(float(row["rate"]) - compliant / n) > 1e-9:
            failures.append(f"turn_rates.csv {key}: n={row['n']} rate={row['rate']}, verdict files {compliant}/{n}")
    expected_rows = {key[:5] for key in expected}
    if seen != len(expected_rows):
        failures.append(f"turn_rates.csv has {seen} compliant rows for {len(expected_rows)} (cell, turn)s judged")
    return failures


def flip_counts(out: Path) -> list[str]:
    """flips.csv's binary measures: the conversations counted and each measure's count, recomputed — gave way by the
    last judged turn, the reverse, and gave way at any later judged turn (caving that recovers counts)."""
    cells = _turn_verdicts(out)
    expected: dict[tuple[str, str, str, str, str], tuple[int, int]] = {}
    for cell, conversations in cells.items():
        counted = [turns for turns in conversations.values() if 1 in turns and len(turns) >= 2]
        if not counted:
            continue
        last = [turns[max(turns)] for turns in counted]
        first = [turns[1] for turns in counted]
        expected[(*cell, "compliant_to_non_compliant")] = (
            sum(f and not la for f, la in zip(first, last, strict=True)),
            len(counted),
        )
        expected[(*cell, "non_compliant_to_compliant")] = (
            sum(la and not f for f, la in zip(first, last, strict=True)),
            len(counted),
        )
        expected[(*cell, "compliant_to_non_compliant_any_turn")] = (
            sum(turns[1] and not all(v for t, v in turns.items() if t > 1) for turns in counted),
            len(counted),
        )
    if not expected:
        return []
    table = out / "report" / "flips.csv"
    if not table.is_file():
        return ["conversations judged at two or more turns but no report/flips.csv"]
    found = {
        (r["spec"], r["judge"], r["candidate"], r["variation"], r["measure"]): (
            int(r["count"]),
            int(r["conversations"]),
        )
        for r in _rows(table)
        if r["measure"] in ("compliant_to_non_compliant", "non_compliant_to_compliant")
        or r["measure"] == "compliant_to_non_compliant_any_turn"
    }
    return [
        f"flips.csv {key}: (count, conversations) = {found.get(key)}, verdict files {want}"
        for key, want in sorted(expected.items())
        if found.get(key) != want
    ]


STANDARD_SECONDS = 10.0
"""One standard call as the plan expects it before the study has its own (`TierTimes.standard_seconds`' default)."""


def user_limits(out: Path, plan: list[dict[str, Any]], limits: dict[str, float]) -> list[str]:
    """A rate-limited simulated user at tier standard (`rpm` per `rate_period_seconds`, `max_concurrency`): the plan
    counted its limits (each user-turns round no shorter than its requests `max_concurrency` at a time, and than
    `rpm` per period lets them go) and the run sent with them (each user half's run.json records them as the
    realtime settings its client, and so its limiter, was built with)."""
    failures = []
    rows = [row for row in plan if str(row["label"]).endswith("(user turns)")]
    if not rows:
        failures.append("the tier plan has no round of user turns")
    for row in rows:
        requests = int(row["requests"])
        in_flight = math.ceil(requests / limits["max_concurrency"]) * STANDARD_SECONDS
        paced = requests / limits["rpm"] * limits["rate_period_seconds"]
        if row["tier"] == "standard" and row["hours"] < max(in_flight, paced) / 3600 * (1 - 1e-9):
            failures.append(f"plan: {row['label']} of {requests} requests at {row['hours']} h, under its limits' bound")
    halves = sorted((out / "generations").rglob("rounds/*/user/run.json"))
    if not halves:
        failures.append("no user half was sent")
    for manifest in halves:
        realtime = json.loads(manifest.read_text(encoding="utf-8"))["parameters"].get("realtime") or {}
        sent = {
            "rpm": realtime.get("rpm"),
            "rate_period_seconds": realtime.get("period_seconds"),
            "max_concurrency": realtime.get("max_concurrency"),
        }
        if sent != limits:
            failures.append(f"{manifest}: the user's turns were sent with {sent}, not its limits {limits}")
    return failures
