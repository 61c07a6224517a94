"""Experiments end to end into `report/variation_statistics.json`: the rates are the verdicts the judge gave, per
variation and per run; repeating identical runs does not narrow an interval; position consistency is counted per
run; the page shows hostile answers as text and names no absolute path.

One grid runs against the independent OpenAI server (tests/independent), whose judge is this test's function: it
knows every verdict it gave. The shipped example runs offline against the emulator.
"""

from __future__ import annotations

import csv
import hashlib
import html
import json
import re
import shutil
import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

import pytest

from speceval.analysis.rendering.data import compute
from speceval.batch.costs import PriceTable
from tests import forked
from tests.conftest import REPO, TEST_KEY, cli_env, write_inputs
from tests.independent.openai_server import IndependentOpenAIServer

JUDGE = "gpt-4.1-2025-04-14"
STRONG, WEAK = "gpt-4.1-mini-2025-04-14", "gpt-4o-mini-2024-07-18"
HOSTILE = "</script><script>window.hostile=1</script><b>bold?</b>"
RUSHED = "You are in a hurry. Answer in one line."
_RESPONSE = re.compile(r"<<<BEGIN assistant_response [^>]*>>>\n(.*?)\n<<<END assistant_response", re.S)
_RESPONSE_A = re.compile(r"<<<BEGIN response_a [^>]*>>>\n(.*?)\n<<<END response_a", re.S)


class PlantedJudge:
    """Answers candidates with unique texts and judges them by a hash; remembers every verdict it gave."""

    def __init__(self) -> None:
        self.verdicts: dict[str, bool | None] = {}  # answer text → verdict (None: an unparsable reply)
        self.counter = 0
        self.lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> str:
        text = "\n".join(str(m.get("content", "")) for m in body["messages"])
        if body["model"] != JUDGE:
            with self.lock:
                self.counter += 1
                serial = self.counter
            system = next((m["content"] for m in body["messages"] if m["role"] == "system"), None)
            extra = HOSTILE if "privacy" in text else ""
            return f"{body['model']} answer {serial} ({'rushed' if system == RUSHED else 'plain'}){extra}"
        if "response_b" in text:  # ranking: the strong model wins in either order (a judge that never flips)
            first = _RESPONSE_A.search(text)
            assert first is not None
            return json.dumps({"winner": "A" if first.group(1).startswith(STRONG) else "B", "explanation": "x"})
        found = _RESPONSE.search(text)
        assert found is not None
        answer = found.group(1)
        digest = int(hashlib.sha256(answer.encode()).hexdigest(), 16)
        verdict: bool | None = None if digest % 9 == 0 else digest % 3 != 0
        with self.lock:
            self.verdicts[answer] = verdict
        if verdict is None:
            return "I cannot decide."
        return f'Reasoning. {{"compliant": {json.dumps(verdict)}, "confidence": 0.8, "explanation": "{HOSTILE}"}}'


def write_spec_with_classes(path: Path) -> Path:
    lines = [
        {"id": "be_honest", "text": "Be honest.", "type": "requirement", "authority_level": "platform"},
        {"id": "protect_privacy", "text": "Protect privacy.", "type": "prohibition", "authority_level": "user"},
        {"id": "be_kind", "text": "Be kind.", "type": "guideline", "authority_level": "guideline"},
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


GRID = """experiment_name: named_prompts
output_dir: out
specs:
  - name: openai
    spec_path: spec.jsonl
    inputs_dir: inputs
candidates:
  - model: {strong}
  - model: {weak}
judges:
  - model: {judge}
variations:
  system_prompt:
    baseline: null
    time_pressure: "{rushed}"
runs_per_variation: 2
engine:
  poll_interval: 0.1
"""


def variations_by_folder(out: Path) -> dict[str, str]:
    """Variation folder → variation name, as the experiment recorded it (a folder name is never parsed)."""
    folders = json.loads((out / "experiment.json").read_text())["folders"]
    return {folder: name for name, folder in folders.items()}


def folder_of(out: Path, variation: str) -> str:
    return str(json.loads((out / "experiment.json").read_text())["folders"][variation])


def expected_tally(out: Path, judge: PlantedJudge) -> dict[tuple[str, str, int], Counter[str]]:
    """(candidate, variation, run) → counts of the verdicts the judge gave on that run's answers."""
    tally: dict[tuple[str, str, int], Counter[str]] = {}
    variation_of = variations_by_folder(out)
    for results in out.glob("generations/openai/*/run*/*/results/*.json"):
        variation, run = variation_of[results.parts[-5]], int(results.parts[-4][3:])
        for record in json.loads(results.read_text()):
            model = record["output_text"].split(" answer ")[0]
            verdict = judge.verdicts[record["output_text"]]
            key = (model, variation, run)
            tally.setdefault(key, Counter())["unparsed" if verdict is None else str(verdict)] += 1
    return tally


@pytest.fixture(scope="module")
def grid(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, PlantedJudge]:
    root = tmp_path_factory.mktemp("grid")
    write_spec_with_classes(root / "spec.jsonl")
    write_inputs(
        root / "inputs",
        {s: [f"{s} question {i}" for i in range(6)] for s in ("be_honest", "protect_privacy", "be_kind")},
    )
    (root / "exp.yaml").write_text(GRID.format(strong=STRONG, weak=WEAK, judge=JUDGE, rushed=RUSHED))
    judge = PlantedJudge()
    with IndependentOpenAIServer(answer=judge) as server:
        env = cli_env(OPENAI_API_KEY=TEST_KEY, OPENAI_BASE_URL=server.base_url)
        done = forked.run(
            [sys.executable, "-m", "speceval", "run", str(root / "exp.yaml")],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            stdin=subprocess.DEVNULL,
        )
    assert done.returncode == 0, done.stdout + done.stderr
    return root / "out", judge


def test_rates_are_the_verdicts_the_judge_gave_per_variation_and_run(grid: tuple[Path, PlantedJudge]) -> None:
    out, judge = grid
    tally = expected_tally(out, judge)
    stats = json.loads((out / "report" / "variation_statistics.json").read_text())
    assert {(s["candidate"], s["variation"]) for s in stats} == {
        (m, v) for m in (STRONG, WEAK) for v in ("baseline", "time_pressure")
    }
    for s in stats:
        assert s["settings"] == {"system_prompt": None if s["variation"] == "baseline" else RUSHED}
        per_run = {r["run"]: r for r in s["runs"]}
        assert sorted(per_run) == [1, 2]
        for run, r in per_run.items():
            counts = tally[(s["candidate"], s["variation"], run)]
            assert (r["judged"], r["compliant"]) == (counts["True"] + counts["False"], counts["True"])
            assert r["rate"] == pytest.approx(counts["True"] / (counts["True"] + counts["False"]))
        both = sum((tally[(s["candidate"], s["variation"], k)] for k in (1, 2)), Counter())
        assert (s["judged"], s["compliant"]) == (both["True"] + both["False"], both["True"])
        assert s["not_judged"] == ({"unparsed": both["unparsed"]} if both["unparsed"] else {})
        rates = [r["rate"] for r in s["runs"]]
        assert (s["run_min"], s["run_max"]) == (min(rates), max(rates))
        assert s["ci_low"] <= s["rate"] <= s["ci_high"] and "clusters = inputs" in s["ci_method"]
    # Every answer of the rushed variation was generated with its system prompt.
    rushed = folder_of(out, "time_pressure")
    answers = [json.loads(p.read_text()) for p in out.glob(f"generations/openai/{rushed}/*/*/results/*.json")]
    assert all("(rushed)" in r["output_text"] for records in answers for r in records)


def test_position_consistency_is_counted_per_run_and_is_one_for_a_judge_that_never_flips(
    grid: tuple[Path, PlantedJudge],
) -> None:
    out, _ = grid
    with (out / "report" / "position_consistency.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert list(rows[0])[:5] == ["spec", "judge", "variation", "run", "data"]  # keyed as every table
    # A row per run, then the variation's pooled row (run empty) counting both runs.
    assert [(r["variation"], r["run"], r["runs"]) for r in rows] == [
        (v, k, n) for v in ("baseline", "time_pressure") for k, n in (("1", "1"), ("2", "1"), ("", "2"))
    ]
    assert all(r["compared"] == ("36" if r["run"] == "" else "18") and float(r["rate"]) == 1.0 for r in rows)
    assert all("clusters = inputs" in r["ci_method"] for r in rows if r["run"] == "")
    # The report's strengths as build_report computes them (`compute`, its first step; no second page drawn, and
    # nothing written into the shared experiment's folder).
    strengths = json.loads(json.dumps([s.model_dump() for s in compute([out], PriceTable.load()).bradley_terry]))
    strong = [s for s in strengths if s["candidate"] == STRONG]
    # The strong candidate wins every comparison: no finite Bradley–Terry estimate, so no (point) interval, a reason.
    assert all(s["strength"] > 0.99 and s["ci_low"] is None and "Ford" in s["note"] for s in strong)


def test_identical_runs_repeated_do_not_narrow_the_interval(grid: tuple[Path, PlantedJudge], tmp_path: Path) -> None:
    out, _ = grid
    copy = tmp_path / "copy"
    copy.mkdir()
    shutil.copy(out / "experiment.json", copy / "experiment.json")
    for stage in ("compliance", "ranking"):
        shutil.copytree(out / stage / "openai" / "baseline" / "run1", copy / stage / "openai" / "baseline" / "run1")

    def widths() -> dict[str, float]:
        stats = compute([copy], PriceTable.load()).variations  # build_report's numbers, without drawing 4 pages
        return {s.candidate: s.ci_high - s.ci_low for s in stats if s.ci_low is not None and s.ci_high is not None}

    one = widths()
    repeated: list[dict[str, float]] = []
    for k in (2, 3, 4):  # runs identical to run 1
        for stage in ("compliance", "ranking"):
            source = copy / stage / "openai" / "baseline"
            shutil.copytree(source / "run1", source / f"run{k}")
        repeated.append(widths())
    assert set(one) == {STRONG, WEAK}
    for model, width in one.items():
        # Clustered by input, repeats add no clusters: no narrower than one run's Wilson interval, and equal
        # from two identical runs on.
        assert all(r[model] >= width - 1e-12 for r in repeated), (model, width, repeated)
        assert repeated[1][model] == pytest.approx(repeated[0][model])
        assert repeated[2][model] == pytest.approx(repeated[0][model])


def test_the_page_shows_hostile_text_as_text_and_names_no_absolute_path(grid: tuple[Path, PlantedJudge]) -> None:
    out, _ = grid
    page = (out / "report" / "report.html").read_text()
    assert HOSTILE not in page and "<script>window.hostile" not in page
    data = re.search(r'<script type="application/json" id="sample-data">(.*?)</script>', page, re.S)
    assert data is not None
    samples = json.loads(data.group(1))
    assert any(HOSTILE in s["output"] for s in samples) and any(HOSTILE in s["explanation"] for s in samples)
    assert str(out) not in page and str(REPO) not in page
    assert page.index('id="summary"') < page.index("Variation baseline") < page.index('id="samples"')
    with (out / "report" / "compliance_by_type.csv").open() as handle:
        groups = {row["group"] for row in csv.DictReader(handle)}
    assert groups == {"requirement", "prohibition", "guideline"}
    with (out / "report" / "compliance_by_authority.csv").open() as handle:
        assert {row["group"] for row in csv.DictReader(handle)} == {"platform", "user", "guideline"}
    summary = (out / "report" / "summary.md").read_text()
    assert "time_pressure" in summary and "Adding Error Bars to Evals" in summary


def test_every_rate_link_opens_samples_of_its_own_cell_paired_comparisons_too(grid: tuple[Path, PlantedJudge]) -> None:
    out, _ = grid
    page = (out / "report" / "report.html").read_text()
    data = re.search(r'<script type="application/json" id="sample-data">(.*?)</script>', page, re.S)
    assert data is not None
    samples = json.loads(data.group(1))
    links = [dict(parse_qsl(html.unescape(query))) for query in re.findall(r'href="#samples\?([^"]*)"', page)]
    assert links and all(any(all(s[k] == v for k, v in link.items()) for s in samples) for link in links)
    paired = page[page.index("Paired comparisons") :]
    paired = paired[: paired.index("</table>")]
    rows = paired.count("<tr>") - 1
    assert rows > 0 and paired.count('href="#samples?') == 2 * rows  # both sides of every comparison


def test_the_shipped_example_reports_each_variation_and_run(tmp_path: Path) -> None:
    shipped = (REPO / "batched_examples" / "configs" / "experiment_example.yaml").read_text()
    config = shipped.replace("../../demo/experiment", str(tmp_path / "out")).replace("../../data", str(REPO / "data"))
    (tmp_path / "exp.yaml").write_text(config)
    done = forked.run(
        [sys.executable, "-m", "speceval", "run", str(tmp_path / "exp.yaml"), "--offline"],
        cwd=REPO,
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    out = tmp_path / "out"
    tally: dict[tuple[str, str, int], Counter[str]] = {}
    variation_of = variations_by_folder(out)
    for results in out.glob("compliance/openai/*/run*/*/*/*/results/*.json"):
        data = json.loads(results.read_text())
        key = (data["metadata"]["model"], variation_of[results.parts[-7]], int(results.parts[-6][3:]))
        for entry in data["results"]:
            tally.setdefault(key, Counter())[str(entry["compliant"]) if entry["outcome"] == "judged" else "other"] += 1
    stats = json.loads((out / "report" / "variation_statistics.json").read_text())
    assert {s["variation"] for s in stats} == {"temperature_0.0", "temperature_0.7"} and len(stats) == 4
    for s in stats:
        for r in s["runs"]:
            counts = tally[(s["candidate"], s["variation"], r["run"])]
            assert (r["judged"], r["compliant"]) == (counts["True"] + counts["False"], counts["True"])
        assert s["judged"] == sum(r["judged"] for r in s["runs"]) and len(s["runs"]) == 2
    with (out / "report" / "position_consistency.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert len([r for r in rows if r["run"]]) == 4  # one row per variation and run, none lost
    assert len([r for r in rows if not r["run"]]) == 2  # and each variation's pooled row
