"""Evidence that cannot mislead: the original SpecEval's result folders read as they are, specs never pooled,
synthetic data labelled in every file a reader might quote, and files that hold no verdicts named, not skipped."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest

from speceval.analysis.reading.load import load_verdicts
from speceval.analysis.rendering.data import compute
from speceval.analysis.rendering.exports.export import export_verdicts
from speceval.analysis.rendering.report import build_report
from speceval.batch.costs import PriceTable
from speceval.batch.manifest import RunManifest
from speceval.errors import InputError

SPECS = ("openai", "anthropic", "google")
JUDGES = ("gpt-4.1-2025-04-14", "claude-sonnet-4-6", "gemini-2.0-flash-001")
MODELS = ("gpt-4.1-mini", "claude-haiku-4-5", "gemini-2.0-flash")


def verdict(spec: int, judge: int, model: int, i: int) -> bool | None:
    """A planted verdict: every cell has its own compliant share, and a null now and then (not judged)."""
    if (spec + judge + model + i) % 7 == 0:
        return None
    return (spec * 5 + judge * 3 + model + i) % 4 != 0


def write_original_compliance(
    root: Path, statements: int = 2, inputs: int = 6, specs: tuple[str, ...] = SPECS, judges: tuple[str, ...] = JUDGES
) -> dict[tuple[str, str, str], tuple]:
    """The original's binary-compliance layout (`run_batched_binary_compliance.py`): no judge or spec in the file.
    Returns (spec, judge, model) → (compliant, all records). Fewer `specs` or `judges` (their first ones) where a
    test's claim does not need the whole grid: each spec × judge cell is a figure or more of the report's page."""
    table = {}
    for s, spec in enumerate(specs):
        for j, judge in enumerate(judges):
            for m, model in enumerate(MODELS):
                compliant = total = 0
                for statement in range(statements):
                    results = []
                    for i in range(inputs):
                        value = verdict(s, j, m, i + statement)
                        results.append(
                            {
                                "input": f"q{statement}-{i}",
                                "output": f"{model} answers {i}",
                                "compliant": value,
                                "confidence": 0.9 if value is not None else None,
                                "explanation": "because" if value is not None else "Failed to parse",
                            }
                        )
                        compliant += value is True
                        total += 1
                    path = root / f"spec_{spec}/judge_{judge}/{model}/results/st{statement}.json"
                    path.parent.mkdir(parents=True, exist_ok=True)
                    path.write_text(
                        json.dumps(
                            {
                                "metadata": {
                                    "model": model,
                                    "statement_id": f"st{statement}",
                                    "batch_ids": ["msgbatch_1"],
                                },
                                "results": results,
                            }
                        )
                    )
                table[(spec, judge, model)] = (compliant, total)
    return table


def write_original_ranking(
    root: Path, spec: str, judge: str, a: str, b: str, ranks: list[int], raw: list[str] | None = None
) -> None:
    """The original's ranking layout (`batched_ranking_pipeline.py`), rankings sorted by input."""
    raw = raw or ["Model: A" for _ in ranks]
    path = root / f"spec_{spec}/judge_{judge}/{a}x{b}/results/st0.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    rankings = [
        {
            "input": f"q{i}",
            "output_a": f"{a} {i}",
            "output_b": f"{b} {i}",
            "rank": rank,
            "raw_judge_response": text,
            "judge_custom_id_task": "0" * 32,
        }
        for i, (rank, text) in enumerate(zip(ranks, raw, strict=True))
    ]
    path.write_text(
        json.dumps(
            {
                "metadata": {
                    "ranking_judge_model_info": {"provider": "OpenAI", "model_name": judge},
                    "model_a": a,
                    "model_b": b,
                    "org_spec_name": spec,
                    "statement_id": "st0",
                    "batch_id": "batch_1",
                    "timestamp": "2025-05-01T00:00:00",
                },
                "rankings": rankings,
            }
        )
    )


def test_the_originals_compliance_folders_give_its_published_all_records_rates(tmp_path):
    table = write_original_compliance(tmp_path / "batched_compliance")
    summary = build_report([tmp_path / "batched_compliance"], tmp_path / "report")
    with (tmp_path / "report" / "variation_statistics.csv").open(encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == len(SPECS) * len(JUDGES) * len(MODELS) + len(SPECS) * len(MODELS)  # + a panel per cell
    for row in rows:
        if row["judge"] == "panel":
            continue
        compliant, total = table[(row["spec"], row["judge"], row["candidate"])]
        not_judged = int(row.get("not_judged_not_judged") or 0)
        # The original's table divided by every record; ours by the judged ones, with not_judged beside it.
        assert float(row["compliant"]) / (int(row["judged"]) + not_judged) == pytest.approx(compliant / total)
        assert int(row["judged"]) + not_judged == total
    assert summary.data.data_kind == "provider" and summary.data.data_banner is None


def test_original_rankings_keep_specs_apart_and_error_answers_are_missing_not_ties(tmp_path):
    root = tmp_path / "batched_rankings"
    # The same judge prefers A under one spec and B under the other: pooled, every win rate would read 0.5.
    write_original_ranking(root, "openai", "gpt-4.1", "m1", "m2", [1, 1, 1, 0, 0])
    write_original_ranking(
        root,
        "openai",
        "gpt-4.1",
        "m2",
        "m1",
        [-1, -1, -1, 0, 0],
        raw=["B", "B", "B", "ERROR: Result missing in batch output.", "tie"],
    )
    write_original_ranking(root, "anthropic", "gpt-4.1", "m1", "m2", [-1, -1, -1, -1, -1])
    write_original_ranking(root, "anthropic", "gpt-4.1", "m2", "m1", [1, 1, 1, 1, 1])
    verdicts = load_verdicts([root])
    outcomes = {(r.spec, r.model_a, r.index): (r.outcome, r.rank) for r in verdicts.rankings}
    assert outcomes[("openai", "m2", 3)] == ("missing", None)  # rank 0 with an ERROR: answer
    assert outcomes[("openai", "m2", 4)] == ("judged", 0) and outcomes[("openai", "m1", 3)] == ("judged", 0)
    build_report([root], tmp_path / "report")
    for name in ("win_rates.csv", "bradley_terry.csv", "position_consistency.csv"):
        with (tmp_path / "report" / name).open(encoding="utf-8") as handle:
            assert "spec" in next(csv.reader(handle)), name
    with (tmp_path / "report" / "win_rates.csv").open(encoding="utf-8") as handle:
        rates = {(r["spec"], r["candidate"]): r for r in csv.DictReader(handle)}
    # Recomputed from the files: openai m1 won 3 + 3, tied 2 + 1 (one error left out) of 9 games.
    assert float(rates[("openai", "m1")]["rate"]) == pytest.approx((6 + 0.5 * 3) / 9)
    assert int(rates[("openai", "m1")]["games"]) == 9
    assert float(rates[("anthropic", "m1")]["rate"]) == 0.0 and float(rates[("anthropic", "m2")]["rate"]) == 1.0


def test_a_file_that_is_neither_ours_nor_the_originals_names_itself_and_why(tmp_path):
    path = tmp_path / "spec_s/judge_j/m/results/st0.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"metadata": {"model": "m"}, "results": [{"input": "q", "compliant": "yes"}]}))
    with pytest.raises(InputError, match=r"compliant must be true, false or null") as caught:
        load_verdicts([tmp_path])
    assert "st0.json" in str(caught.value)


@pytest.mark.parametrize("content", [[1, 2], {}, {"results": []}])
def test_files_without_verdicts_are_named_in_a_warning_and_in_the_summary(tmp_path, content, caplog):
    # One spec and one judge beside the stray file (all nine cells until 2026-11-29: 4 s of CPU a case, for the
    # stray file's name): what is asserted is that file, named.
    write_original_compliance(tmp_path / "c", statements=1, inputs=2, specs=SPECS[:1], judges=JUDGES[:1])
    stray = tmp_path / "c" / "stray" / "results" / "x.json"
    stray.parent.mkdir(parents=True)
    stray.write_text(json.dumps(content))
    summary = build_report([tmp_path / "c"], tmp_path / "report")
    assert summary.data.skipped and "stray/results/x.json" in summary.data.skipped[0]
    assert "stray/results/x.json" in caplog.text
    assert "Skipped 1 file(s)" in (tmp_path / "report" / "summary.md").read_text(encoding="utf-8")


def test_export_of_a_folder_without_verdicts_refuses_and_writes_nothing(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="nothing to export"):
        export_verdicts([tmp_path / "empty"], tmp_path / "out.jsonl", "jsonl")
    assert not (tmp_path / "out.jsonl").exists()


def manifest(offline: bool) -> str:
    """A judge run's run.json (only `offline` matters here)."""
    return RunManifest(
        kind="compliance",
        command=["speceval"],
        spec_name="s",
        spec_path="s.jsonl",
        spec_sha256="0",
        inputs_path="in",
        inputs_sha256="0",
        model_name="j",
        provider="openai",
        offline=offline,
    ).model_dump_json()


def mark_offline(root: Path, offline: bool) -> None:
    """A run.json beside every results folder, as a judge run writes it."""
    for results in root.rglob("results"):
        (results.parent / "run.json").write_text(manifest(offline))


def test_offline_verdicts_say_synthetic_in_summary_page_csv_and_export(tmp_path):
    # One spec of two judges: the report writes the same 16 tables as over the whole 3x3 grid (checked 2026-11-29),
    # at a third of the figures.
    write_original_compliance(tmp_path / "c", statements=1, inputs=3, specs=SPECS[:1], judges=JUDGES[:2])
    mark_offline(tmp_path / "c", True)
    summary = build_report([tmp_path / "c"], tmp_path / "report")
    first_line = (tmp_path / "report" / "summary.md").read_text(encoding="utf-8").splitlines()[0]
    assert "SYNTHETIC" in first_line
    page = (tmp_path / "report" / "report.html").read_text(encoding="utf-8")
    assert 'class="banner"' in page and "SYNTHETIC" in page
    for path in summary.csv_paths:
        with path.open(encoding="utf-8") as handle:
            rows = list(csv.DictReader(handle))
        assert all(r["data"] == "synthetic" for r in rows), path.name
    export_verdicts([tmp_path / "c"], tmp_path / "v.jsonl", "jsonl")
    exported = [json.loads(line) for line in (tmp_path / "v.jsonl").read_text(encoding="utf-8").splitlines()]
    assert exported and all(r["synthetic"] is True for r in exported)


def test_a_report_over_offline_and_provider_folders_says_mixed_at_the_top(tmp_path):
    # Two specs (one offline, one not) of one judge: the mix is what is asserted, not the grid's size.
    write_original_compliance(tmp_path / "c", statements=1, inputs=3, specs=SPECS[:2], judges=JUDGES[:1])
    mark_offline(tmp_path / "c", False)
    for results in (tmp_path / "c" / "spec_openai").rglob("results"):
        (results.parent / "run.json").write_text(manifest(True))
    build_report([tmp_path / "c"], tmp_path / "report")
    assert "MIXED DATA" in (tmp_path / "report" / "summary.md").read_text(encoding="utf-8").splitlines()[0]


def test_the_page_stays_small_however_long_the_answers(tmp_path):
    from speceval.analysis.rendering.samples.samples import TEXT_LIMIT

    root = tmp_path / "runs"
    results = [
        {
            "input": f"q{i}",
            "output": f"{i} " + "x" * 50_000,
            "compliant": i % 2 == 0,
            "confidence": 0.9,
            "explanation": "e" * 10_000,
            "outcome": "judged",
            "original_index": i,
        }
        for i in range(60)
    ]
    path = root / "c/m/results/st.json"
    path.parent.mkdir(parents=True)
    path.write_text(
        json.dumps(
            {
                "metadata": {
                    "model": "m",
                    "judge": "j",
                    "spec": "s",
                    "statement_id": "st",
                    "prompt_version": "p",
                    "mode": "binary",
                    "batch_ids": ["b"],
                    "candidate_dir": "x",
                },
                "results": results,
            }
        )
    )
    build_report([root], tmp_path / "report")
    page = (tmp_path / "report" / "report.html").read_text(encoding="utf-8")
    assert len(page) < 60 * 3 * (TEXT_LIMIT + 200) + 2_000_000  # not 60 x 60,000 characters
    assert "more characters: speceval export has them all" in page
    export_verdicts([root], tmp_path / "v.jsonl", "jsonl")
    assert all(len(json.loads(line)["output"]) > 50_000 for line in (tmp_path / "v.jsonl").read_text().splitlines())


def test_the_export_has_what_a_reviewer_needs_to_rebuild_a_table(tmp_path):
    root = tmp_path / "runs"
    results = [
        {
            "input": "q0",
            "output": "a0",
            "compliant": None,
            "confidence": None,
            "explanation": None,
            "outcome": "unparsed",
            "raw_judge_response": "I think it is fine",
            "parse_error": "no JSON object",
            "original_index": 7,
        }
    ]
    path = root / "c/m/results/st.json"
    path.parent.mkdir(parents=True)
    path.write_text(
        json.dumps(
            {
                "metadata": {
                    "model": "m",
                    "judge": "j",
                    "spec": "s",
                    "statement_id": "st",
                    "prompt_version": "p",
                    "mode": "binary",
                    "batch_ids": ["b"],
                    "candidate_dir": "x",
                },
                "results": results,
            }
        )
    )
    write_original_ranking(root / "r", "s", "j", "m1", "m2", [1, 0])
    export_verdicts([root], tmp_path / "v.jsonl", "jsonl")
    rows = [json.loads(line) for line in (tmp_path / "v.jsonl").read_text(encoding="utf-8").splitlines()]
    compliance = next(r for r in rows if r["kind"] == "compliance")
    assert compliance["original_index"] == 7 and compliance["raw_judge_response"] == "I think it is fine"
    assert compliance["parse_error"] == "no JSON object" and compliance["variation"] == "default"
    assert compliance["run"] == 1 and compliance["settings"] == "{}"
    ranking = next(r for r in rows if r["kind"] == "ranking")
    assert ranking["output_a"] == "m1 0" and ranking["output_b"] == "m2 0" and ranking["rank"] == 1


def test_a_ranking_only_summary_names_its_models_and_shows_no_empty_compliance_table(tmp_path):
    root = tmp_path / "batched_rankings"
    write_original_ranking(root, "openai", "gpt-4.1", "m1", "m2", [1, 1, -1])
    write_original_ranking(root, "openai", "gpt-4.1", "m2", "m1", [-1, -1, 1])
    build_report([root], tmp_path / "report")
    text = (tmp_path / "report" / "summary.md").read_text(encoding="utf-8")
    assert "- Candidates: m1, m2" in text and "- Judges: gpt-4.1" in text
    assert "## Compliance by variation" not in text and "## Win rates" in text


def test_every_section_of_the_page_has_an_anchor(tmp_path):
    import re

    # One spec of two judges: the page has the same 14 sections as over the whole 3x3 grid (checked 2026-11-29), at a
    # third of the figures.
    write_original_compliance(tmp_path / "c", statements=1, inputs=3, specs=SPECS[:1], judges=JUDGES[:2])
    write_original_ranking(tmp_path / "r", "openai", "j", "m1", "m2", [1, -1, 0])
    build_report([tmp_path], tmp_path / "report")
    page = (tmp_path / "report" / "report.html").read_text(encoding="utf-8")
    headings = re.findall(r"<h2[^>]*>", page)
    assert len(headings) > 5 and all('id="' in h for h in headings)
    ids = re.findall(r'<h2 id="([^"]+)"', page)
    assert len(ids) == len(set(ids))


def test_the_original_layout_export_is_read_back_to_the_same_rates_and_the_originals_scripts_rules(tmp_path):
    """speceval export --format original: compliance and ranking folders in the original's shapes; not-judged
    compliance as `compliant: null`, not-judged rankings as `rank: 0` with an ERROR: answer; read back, every
    rate equals the source's."""
    from speceval.cli.main import main as speceval_main

    source = tmp_path / "source"
    write_original_compliance(source / "batched_compliance")
    write_original_ranking(
        source / "batched_rankings",
        "openai",
        "gpt-4.1",
        "m1",
        "m2",
        [1, -1, 0, 0],
        raw=["A", "B", "tie", "ERROR: Result missing in batch output."],
    )
    write_original_ranking(source / "batched_rankings", "openai", "gpt-4.1", "m2", "m1", [1, 1, -1, -1])
    assert speceval_main(["export", str(source), "--format", "original", "--out", str(tmp_path / "out")]) == 0
    ranking_files = list((tmp_path / "out").rglob("m1xm2/results/*.json"))
    assert len(ranking_files) == 1
    ranks = [r["rank"] for r in json.loads(ranking_files[0].read_text())["rankings"]]
    assert None not in ranks and ranks == [1, -1, 0, 0]  # not judged: 0, as the original wrote (null stops it)
    # The report's rates, computed as build_report computes them (`compute`, its first step) without drawing the two
    # pages, whose 27 cells' figures were 8 s of CPU that nothing here reads.
    before = compute([source], PriceTable.load())
    after = compute([tmp_path / "out"], PriceTable.load())

    def rates(s: Any) -> dict[tuple[str, str, str], tuple[Any, ...]]:
        return {(v.spec, v.judge, v.candidate): (v.judged, v.compliant, dict(v.not_judged)) for v in s.variations}

    assert rates(after) == rates(before)
    wins = lambda s: {(w.spec, w.candidate, w.opponent): (w.games, w.rate) for w in s.win_rates}  # noqa: E731
    assert wins(after) == wins(before)
    # The original's own rule, compliant ÷ every record, from the exported files alone:
    for path in (tmp_path / "out").rglob("results/*.json"):
        data = json.loads(path.read_text())
        if "results" in data:
            assert all(set(r) >= {"input", "output", "compliant", "confidence", "explanation"} for r in data["results"])
