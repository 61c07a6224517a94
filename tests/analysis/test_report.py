"""Report statistics against hand-computed values, and a report whose numbers are recomputed from its inputs."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from speceval.analysis.rendering.exports.export import export_verdicts
from speceval.analysis.rendering.report import build_report
from speceval.analysis.statistics.stats import (
    bradley_terry,
    cohen_kappa,
    fleiss_kappa,
    krippendorff_alpha_ordinal,
    wilson_interval,
)


def test_wilson_interval_matches_the_textbook_value():
    low, high = wilson_interval(8, 10, continuity=False)  # type: ignore[misc]
    assert low == pytest.approx(0.4902, abs=1e-4) and high == pytest.approx(0.9433, abs=1e-4)
    # With continuity correction: Newcombe (1998), Table I, method 4.
    for (k, n), expected in {
        (81, 263): (0.2535, 0.3682),
        (15, 148): (0.0598, 0.1644),
        (0, 20): (0.0, 0.2005),
        (1, 29): (0.0018, 0.1963),
    }.items():
        assert wilson_interval(k, n) == pytest.approx(expected, abs=1e-4)
    assert wilson_interval(0, 0) is None
    assert wilson_interval(0, 5)[0] == 0.0  # type: ignore[index]


def test_kappas_on_small_known_cases():
    assert cohen_kappa([1, 1, 0, 0], [1, 0, 0, 0]) == pytest.approx(0.5)
    assert cohen_kappa([1, 1], [1, 1]) is None  # chance agreement is 1: undefined, not 1.0
    assert fleiss_kappa(np.array([[2, 0], [0, 2]])) == pytest.approx(1.0)
    assert fleiss_kappa(np.array([[1, 1], [1, 1]])) == pytest.approx(-1.0)


def test_krippendorff_alpha_on_a_hand_computed_case():
    # Coincidences o11=2, o22=2, o12=o21=1; n1=n2=3; ordinal delta^2 = 9: alpha = 1 - 18 / (162 / 5) = 4/9.
    assert krippendorff_alpha_ordinal([[1, 1], [2, 2], [1, 2]]) == pytest.approx(4 / 9)
    assert krippendorff_alpha_ordinal([[1, 1], [3, 3], [5, 5]]) == pytest.approx(1.0)
    assert krippendorff_alpha_ordinal([[4], [4]]) is None


def test_bradley_terry_recovers_a_known_ratio():
    strengths = bradley_terry(np.array([[0.0, 3.0], [1.0, 0.0]]))
    assert strengths == pytest.approx([0.75, 0.25], abs=1e-6)


def compliance_file(path: Path, model: str, judge: str, verdicts: list[object]) -> None:
    results = []
    for i, verdict in enumerate(verdicts):
        judged = isinstance(verdict, bool)
        results.append(
            {
                "input": f"q{i}",
                "output": "<script>alert(1)</script>" if i == 0 else "a" * (10 + i),
                "compliant": verdict if judged else None,
                "confidence": 0.9 if judged else None,
                "explanation": "x",
                "outcome": "judged" if judged else verdict,
                "raw_judge_response": "…",
                "original_index": i,
            }
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        json.dumps(
            {
                "metadata": {
                    "model": model,
                    "judge": judge,
                    "spec": "openai",
                    "statement_id": "s1",
                    "prompt_version": "compliance_binary_v1",
                    "mode": "binary",
                    "batch_ids": ["b"],
                    "candidate_dir": "x",
                },
                "results": results,
            }
        )
    )


def ranking_file(path: Path, a: str, b: str, ranks: list[int | None]) -> None:
    rankings = [
        {
            "index": i,
            "input": f"q{i}",
            "output_a": "A",
            "output_b": "B",
            "rank": r,
            "outcome": "judged" if r is not None else "unparsed",
            "original_index_a": i,
            "original_index_b": i,
        }
        for i, r in enumerate(ranks)
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        json.dumps(
            {
                "metadata": {
                    "model_a": a,
                    "model_b": b,
                    "judge": "j",
                    "spec": "openai",
                    "statement_id": "s1",
                    "prompt_version": "ranking_v1",
                    "batch_ids": ["b"],
                    "candidate_dir_a": "x",
                    "candidate_dir_b": "y",
                },
                "rankings": rankings,
            }
        )
    )


def test_report_numbers_match_a_recomputation_and_failures_stay_out_of_rates(tmp_path):
    root = tmp_path / "runs"
    # m1: 3 compliant of 4 judged, plus 2 not judged; m2: 1 of 2 judged.
    compliance_file(root / "c/m1/results/s1.json", "m1", "j", [True, True, "unparsed", False, True, "judge_errored"])
    compliance_file(root / "c/m2/results/s1.json", "m2", "j", [True, False])
    # m1 vs m2 in both orders: AxB ranks [1, 1, 0, None] and BxA ranks [-1, 1, 0, -1] (A is m2 there).
    ranking_file(root / "r/m1xm2/results/s1.json", "m1", "m2", [1, 1, 0, None])
    ranking_file(root / "r/m2xm1/results/s1.json", "m2", "m1", [-1, 1, 0, -1])
    summary = build_report([root], tmp_path / "report")
    rates = {r.candidate: r for r in summary.data.compliance}
    assert (rates["m1"].judged, rates["m1"].compliant) == (4, 3) and rates["m1"].rate == pytest.approx(0.75)
    assert rates["m1"].not_judged == {"unparsed": 1, "judge_errored": 1}
    assert (rates["m2"].judged, rates["m2"].rate) == (2, 0.5)
    with (tmp_path / "report" / "compliance.csv").open() as handle:
        rows = {row["candidate"]: row for row in csv.DictReader(handle)}
    assert rows["m1"]["rate"] == "0.75" and rows["m1"]["not_judged_unparsed"] == "1"
    # m1 wins: AxB i0, i1; BxA i0 (rank -1 → m1), i3; m2 wins: BxA i1; ties: i2 twice. Unparsed excluded.
    wins = {w.candidate: w for w in summary.data.win_rates}
    assert (wins["m1"].wins, wins["m1"].losses, wins["m1"].ties, wins["m1"].games) == (4, 1, 2, 7)
    assert wins["m1"].rate == pytest.approx(5 / 7)
    # Position: i0 both m1 (consistent), i1 m1 vs m2 (not), i2 tie/tie (consistent); i3 has one order only.
    assert [(c.judge, c.consistent, c.compared) for c in summary.data.position_consistency] == [("j", 2, 3)]
    strength = {s.candidate: s.strength for s in summary.data.bradley_terry}
    assert strength["m1"] > strength["m2"]
    page = summary.html_path.read_text()
    assert "<script>alert(1)</script>" not in page and page.count("<img") >= 3


def test_export_writes_one_row_per_verdict(tmp_path):
    root = tmp_path / "runs"
    compliance_file(root / "c/m1/results/s1.json", "m1", "j", [True, "unparsed"])
    ranking_file(root / "r/m1xm2/results/s1.json", "m1", "m2", [1])
    count = export_verdicts([root], tmp_path / "v.jsonl", "jsonl")
    rows = [json.loads(line) for line in (tmp_path / "v.jsonl").read_text().splitlines()]
    assert count == 3 == len(rows)
    assert [r["kind"] for r in rows] == ["compliance", "compliance", "ranking"]
    assert rows[1]["compliant"] is None and rows[1]["outcome"] == "unparsed"


def test_verdicts_in_an_experiment_carry_their_variation_name_settings_and_run(tmp_path):
    from speceval.analysis.reading.load import load_verdicts
    from speceval.paths import safe_filename

    name = "temperature_0.7+time_pressure"
    (tmp_path / "experiment.json").write_text(
        json.dumps({"variations": {name: {"temperature": 0.7, "system_prompt": "Hurry."}}})
    )
    folder = tmp_path / "compliance" / "openai" / safe_filename(name) / "run2" / "spec_openai" / "judge_j" / "m1"
    compliance_file(folder / "results" / "s1.json", "m1", "j", [True, False])
    verdicts = load_verdicts([tmp_path])
    assert {(r.variation, r.run) for r in verdicts.compliance} == {(name, 2)}
    assert verdicts.settings == {name: {"temperature": 0.7, "system_prompt": "Hurry."}}
    assert {r.source for r in verdicts.compliance} == {
        f"compliance/openai/{safe_filename(name)}/run2/spec_openai/judge_j/m1/results/s1.json"
    }


def test_report_command_writes_every_file_and_prints_rates_by_variation(tmp_path, capsys, monkeypatch):
    from speceval.cli.main import main as speceval_main

    monkeypatch.delenv("COLUMNS", raising=False)  # a pipe: no table is cut or folded at 80 columns

    root = tmp_path / "runs"
    compliance_file(root / "c/m1/results/s1.json", "m1", "j", [True, True, False])
    # No figures: the files and the printed table are asked here (the command's figures: test_interval_edges.py).
    assert speceval_main(["report", str(root), "--out", str(tmp_path / "report"), "--no-figures"]) == 0
    printed = capsys.readouterr().out
    assert "m1" in printed and "0.667" in printed and "default" in printed
    names = {p.name for p in (tmp_path / "report").iterdir()}
    assert {
        "report.html",
        "summary.md",
        "variation_statistics.json",
        "variation_statistics.csv",
        "compliance_by_type.csv",
        "compliance_by_authority.csv",
        "paired_comparisons.csv",
        "position_consistency.csv",
    } <= names


def test_an_unparsed_verdict_shows_the_judges_raw_answer_and_why_in_the_sample_view(tmp_path):
    from speceval.analysis.rendering.report import build_report

    root = tmp_path / "runs"
    path = root / "c/m1/results/s1.json"
    compliance_file(path, "m1", "j", [True, "unparsed"])
    data = json.loads(path.read_text())
    data["results"][1]["raw_judge_response"] = "I refuse to give a verdict on this one."
    data["results"][1]["parse_error"] = "no JSON object with 'compliant' found"
    data["results"][1]["explanation"] = None
    path.write_text(json.dumps(data))
    # No figures: the sample view is what is read here (the figures: tests/analysis/test_no_figures.py).
    page = build_report([root], tmp_path / "report", figures=False).html_path.read_text(encoding="utf-8")
    samples = json.loads(page.split('id="sample-data">')[1].split("</script>")[0])
    [unparsed] = [s for s in samples if s["verdict"] == "unparsed"]
    assert "no JSON object with 'compliant' found" in unparsed["explanation"]
    assert "I refuse to give a verdict on this one." in unparsed["explanation"]


def test_agreement_kappas_carry_a_bootstrap_interval_that_brackets_them(tmp_path):
    from speceval.analysis.reading.rows import ComplianceRow
    from speceval.analysis.tables.rates import judge_agreement

    rows = []
    for judge, offset in (("a", 0), ("b", 1), ("c", 2)):
        for i in range(60):
            # Judges agree mostly; answers of one input (two candidates) share a cluster.
            for model in ("m1", "m2"):
                verdict = (i * 7 + len(model)) % 5 != 0 if (i + offset) % 6 else (i % 2 == 0)
                rows.append(
                    ComplianceRow(
                        spec="s",
                        judge=judge,
                        model=model,
                        statement_id="st",
                        mode="binary",
                        prompt_version="p",
                        input=f"q{i}",
                        output=f"{model}{i}",
                        outcome="judged",
                        compliant=verdict,
                        confidence=None,
                        rating=None,
                        source="x",
                    )
                )
    found = judge_agreement(rows)
    assert {a.kind for a in found} == {"Cohen", "Fleiss"}
    for agreement in found:
        assert agreement.ci_low is not None and agreement.ci_low <= agreement.kappa <= agreement.ci_high
        assert "bootstrap" in agreement.ci_method
    # The same figure the plain formulas give: the interval's statistic is the kappa itself.
    from speceval.analysis.tables.rates import cohen_from_counts

    assert cohen_from_counts(np.array([40.0, 5.0, 5.0, 50.0])) == pytest.approx(
        ((90 / 100) - (45 * 45 + 55 * 55) / 100**2) / (1 - (45 * 45 + 55 * 55) / 100**2)
    )


def test_ranking_verdicts_are_browsable_with_both_answers_and_win_rates_link_to_them(tmp_path):
    from speceval.analysis.rendering.report import build_report

    root = tmp_path / "runs"
    ranking_file(root / "r/m1xm2/results/s1.json", "m1", "m2", [1, -1, 0])
    page = build_report([root], tmp_path / "report").html_path.read_text(encoding="utf-8")
    data = json.loads(page.split('id="ranking-sample-data">')[1].split("</script>")[0])
    assert len(data) == 3 and {d["winner"] for d in data} == {"A", "B", "tie"}
    assert all(d["output_a"] and d["output_b"] and d["pair"] == "m1 vs m2" for d in data)
    assert 'href="#ranking-samples?judge=' in page and "pair=m1+vs+m2" in page
