"""`speceval run --dry-run`: sends and writes nothing, and its request counts are what the run then sends."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from speceval.cli.main import main as speceval_main
from tests.conftest import write_spec
from tests.experiments.test_experiments import GRID

STAGE_OF_FOLDER = {"generations": "generation", "compliance": "compliance", "ranking": "ranking"}


def _sent(out: Path) -> Counter[str]:
    """Requests of every provider job the run recorded, per stage (the top folder of its run directory)."""
    sent: Counter[str] = Counter()
    for record in out.rglob("metadata/*.json"):
        sent[STAGE_OF_FOLDER[record.relative_to(out).parts[0]]] += json.loads(record.read_text())["request_count"]
    return sent


def test_dry_run_writes_nothing_and_counts_what_the_run_sends(tmp_path: Path, capsys) -> None:
    experiment = tmp_path / "exp.yaml"
    experiment.write_text(GRID + "budget_usd: 50\n")
    assert speceval_main(["run", str(experiment), "--offline", "--dry-run", "--json", "--assume-rate", "0.9"]) == 0
    planned = json.loads(capsys.readouterr().out)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["exp.yaml"]  # no output_dir, no log
    requests = {stage["stage"]: stage["requests"] for stage in planned["stages"]}
    assert planned["assumptions"]["rate"] == 0.9 and planned["budget_usd"] == 50
    assert all(s["expected_usd"] < s["upper_bound_usd"] for s in planned["stages"])
    comparisons = Counter(p["compared"] for p in planned["precision"])
    assert comparisons == {"candidates": 2, "variations": 2}  # per variation, per candidate
    assert {(p["inputs"], p["runs"]) for p in planned["precision"]} == {(40, 2)}

    assert speceval_main(["run", str(experiment), "--offline"]) == 0
    assert _sent(tmp_path / "out") == requests


def test_dry_run_table_names_requests_cost_and_precision(tmp_path: Path, capsys) -> None:
    experiment = tmp_path / "exp.yaml"
    experiment.write_text(GRID)
    assert speceval_main(["run", str(experiment), "--dry-run", "--assume-icc", "0"]) == 0  # no key needed
    shown = " ".join(capsys.readouterr().out.split())
    assert "nothing sent, nothing written" in shown
    assert "MDD: the smallest difference" in shown and "intra-input correlation 0 (--assume-icc)" in shown
    # 40 inputs x 2 runs, ICC 0, rate 0.8: the report's own interval needs 0.217 for 80% power (issue 47; the
    # normal test at the assumed rate for both sides promised 0.177, where the report's interval had 0.64-0.71).
    assert "│ 0.217 │" in shown
    assert not (tmp_path / "out").exists()


def test_assumptions_and_json_are_range_checked(tmp_path: Path, capsys) -> None:
    experiment = tmp_path / "exp.yaml"
    experiment.write_text(GRID)
    refused = (
        ["--dry-run", "--assume-rate", "1.5"],
        ["--dry-run", "--assume-icc", "-0.1"],
        ["--json"],
        # Issue 42: a rate of 1 crashed the plan (a ValidationError), and the assumptions without --dry-run ran the
        # experiment (paid) instead of planning it.
        ["--dry-run", "--assume-rate", "1"],
        ["--offline", "--assume-rate", "0.9"],
        ["--offline", "--assume-icc", "0.1"],
    )
    for flags in refused:
        try:
            code = speceval_main(["run", str(experiment), *flags])
        except SystemExit as exit_:  # argparse refuses a value out of range
            code = exit_.code
        assert code == 2, flags
    assert not (tmp_path / "out").exists()


def test_the_plans_power_is_the_reports_own_at_its_minimum_detectable_difference() -> None:
    # Exact for one run: the report's interval excludes 0 with at least 80% probability at the MDD, in both
    # directions from the assumed rate, and with less just below it (the MDD is the smallest such difference).
    from speceval.experiments.precision import minimum_detectable_difference, report_power

    for rate, inputs in ((0.8, 50), (0.5, 30), (0.9, 100)):
        mdd = minimum_detectable_difference(rate, inputs, 1, 0.3)
        assert mdd is not None
        powers = [report_power(rate, rate - mdd, inputs, 1, 0.3)]
        powers += [report_power(rate + mdd, rate, inputs, 1, 0.3)] if rate + mdd < 1 else []
        assert min(powers) >= 0.80, (rate, inputs, mdd, powers)
        assert report_power(rate, rate - mdd + 0.002, inputs, 1, 0.3) < 0.80 or rate + mdd < 1


def test_a_conversation_variation_plans_its_last_turn_and_flips_over_conversations_that_reach_them(
    tmp_path: Path, capsys
) -> None:
    # Issue 42: the plan covered the first turn only. Two follow-ups make 3 turns; at the default 0.9 of
    # conversations going on to each next turn, turn 3 is planned over 40 x 0.81 = 32 inputs, flips over 36.
    experiment = tmp_path / "exp.yaml"
    grid = GRID.replace("  temperature: [0.0, 0.7]\n", "  follow_ups: {none: [], push: ['Sure?', 'Really?']}\n")
    experiment.write_text(grid)
    assert speceval_main(["run", str(experiment), "--dry-run", "--json"]) == 0
    planned = json.loads(capsys.readouterr().out)
    rows = {(p["compared"], p["within"]): p for p in planned["precision"]}
    assert rows[("turn 3 rate", "push")]["inputs"] == 32 and rows[("flips", "push")]["inputs"] == 36
    assert not any(within == "none" and compared in ("flips", "turn 3 rate") for compared, within in rows)
    assert (
        rows[("turn 3 rate", "push")]["minimum_detectable_difference"]
        > rows[("candidates", "push")]["minimum_detectable_difference"]
    )


def test_a_conversation_studys_plan_counts_every_judge_request_it_then_sends(tmp_path: Path, capsys) -> None:
    """Issue 42 (a planned study spent more than planned): a turn judge sends one request per assistant turn, the
    card re-judges each drawn conversation's turns, and one model at two scopes judges the spec's examples once.
    The plan counted one request a conversation for every judge and the examples once per entry."""
    experiment = tmp_path / "exp.yaml"
    grid = GRID.replace("  temperature: [0.0, 0.7]\n", "  follow_ups: {push: ['Sure?', 'Really?']}\n").replace(
        "  - model: gpt-4.1-2025-04-14\n",
        "  - model: gpt-4.1-2025-04-14\n    scope: turn\n  - model: gpt-4.1-2025-04-14\n    scope: conversation\n",
    )
    experiment.write_text(grid + "stages: [generation, compliance]\njudge_card: {retest: 0.2}\n")
    assert speceval_main(["run", str(experiment), "--offline", "--dry-run", "--json"]) == 0
    planned: Counter[str] = Counter()
    for stage in json.loads(capsys.readouterr().out)["stages"]:
        planned[stage["stage"].split(" ")[0].removesuffix(":")] += stage["requests"]
    assert speceval_main(["run", str(experiment), "--offline"]) == 0
    sent: Counter[str] = Counter()
    for record in (tmp_path / "out").rglob("metadata/*.json"):
        top = record.relative_to(tmp_path / "out").parts[0]
        stage = "judge" if top == "_judge_card" else STAGE_OF_FOLDER[top]
        sent[stage] += json.loads(record.read_text())["request_count"]
    assert sent["compliance"] > 40 * 2 * 2 * 2  # more than one request a conversation and judge entry
    assert planned == sent


def test_the_one_run_power_is_the_reports_interval_over_every_possible_set_of_verdicts() -> None:
    # Issue 47: the power from the counts alone (the report's correlation taken at -1/sqrt(n)) said 0.80 where the
    # report's interval gave 0.845. Here every pair of verdict vectors on 6 shared inputs (4,096) is run through the
    # report's own paired interval and weighted by its probability: the plan's power is that number.
    import itertools
    import math

    from speceval.analysis.statistics.paired import paired_difference
    from speceval.experiments.precision import report_power

    n, high, low = 6, 0.9, 0.3
    exact = 0.0
    for a in itertools.product((0, 1), repeat=n):
        for b in itertools.product((0, 1), repeat=n):
            found = paired_difference(list(enumerate(map(float, a))), list(enumerate(map(float, b))))
            assert found is not None and found.ci_low is not None and found.ci_high is not None
            if found.ci_low > 0 or found.ci_high < 0:
                exact += high ** sum(a) * (1 - high) ** (n - sum(a)) * low ** sum(b) * (1 - low) ** (n - sum(b))
    assert math.isclose(report_power(high, low, n, 1, 0.3), exact, abs_tol=1e-9), (
        report_power(high, low, n, 1, 0.3),
        exact,
    )


GENERATED = """experiment_name: generated
output_dir: out
specs:
  - name: s
    spec_path: SPEC
inputs:
  generator: gpt-4.1-2025-04-14
  rater: claude-sonnet-4-6
  per_statement: 4
candidates:
  - model: gpt-4.1-mini-2025-04-14
judges:
  - model: gpt-4.1-2025-04-14
variations:
  follow_ups:
    pushback: ['Are you sure?']
runs_per_variation: 2
engine:
  poll_interval: 0.05
stages: [inputs, generation, compliance, report]
"""


def _generated_plan(tmp_path: Path, capsys) -> tuple[Path, dict[str, int]]:
    spec = write_spec(tmp_path / "spec.jsonl", ["be_honest", "be_kind", "be_brief"])
    experiment = tmp_path / "exp.yaml"
    experiment.write_text(GENERATED.replace("SPEC", str(spec)))
    assert speceval_main(["run", str(experiment), "--offline", "--dry-run", "--json"]) == 0
    stages = json.loads(capsys.readouterr().out)["stages"]
    assert all(s["jobs"] == s["runs"] == 3 for s in stages if s["stage"].startswith("inputs"))  # a job a round
    return experiment, {stage["stage"]: stage["requests"] for stage in stages}


def test_generated_inputs_are_costed_and_follow_ups_plan_every_round(tmp_path: Path, capsys) -> None:
    """The inputs stage's generator and rater are planned (every round at most: 3 rounds of a request per statement,
    and of a rating per proposal asked for, 2 per input needed); the inputs it will generate are planned at its
    target count, and a follow-up makes each a conversation as it does any input: round 2 is planned too. Both were
    missing: the stage not costed at all, round 2 left out (half the generation requests and their bound)."""
    _, requests = _generated_plan(tmp_path, capsys)
    assert requests["inputs: generator gpt-4.1-2025-04-14 (3 rounds at most)"] == 3 * 3
    assert requests["inputs: rater claude-sonnet-4-6 (3 rounds at most)"] == 3 * 3 * 2 * 4
    assert requests["generation"] == requests["generation round 2"] == 3 * 4 * 2  # statements x per_statement x runs
    assert list(requests)[:3] == [*list(requests)[:2], "generation"]  # the inputs stage first, as it is sent


@pytest.mark.slow  # the study run offline
def test_a_study_of_generated_inputs_sends_no_more_than_its_plan(tmp_path: Path, capsys) -> None:
    experiment, requests = _generated_plan(tmp_path, capsys)
    assert speceval_main(["run", str(experiment), "--offline"]) == 0
    sent: Counter[str] = Counter()
    for record in (tmp_path / "out").rglob("metadata/*.json"):
        parts = record.relative_to(tmp_path / "out").parts
        stage = parts[0] if parts[0] == "inputs" else STAGE_OF_FOLDER[parts[0]]
        role = ("rater" if "rate" in parts else "generator") if stage == "inputs" else None
        sent[f"{stage}:{role}" if role else stage] += json.loads(record.read_text())["request_count"]
    planned = {
        "inputs:generator": requests["inputs: generator gpt-4.1-2025-04-14 (3 rounds at most)"],
        "inputs:rater": requests["inputs: rater claude-sonnet-4-6 (3 rounds at most)"],
        "generation": requests["generation"] + requests["generation round 2"],
        "compliance": requests["compliance"],
    }
    assert set(sent) == set(planned) and all(0 < sent[k] <= planned[k] for k in planned), (sent, planned)
    # The report's setup names each stage for what it sent: the inputs' rounds (their stage's own folder sends
    # nothing, and read "0 request(s) (none yet)"), the conversations' folders apart from the rounds that sent them.
    setup = [line for line in (tmp_path / "out" / "report" / "summary.md").read_text().splitlines() if "run(s)" in line]
    assert not any("none yet" in line or "input_generation" in line for line in setup), setup
    [inputs] = [line for line in setup if line.startswith("- inputs (")]
    assert f"{sent['inputs:generator'] + sent['inputs:rater']} request(s)" in inputs
