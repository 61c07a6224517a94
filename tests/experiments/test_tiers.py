"""Tiers in an experiment file: an entry's `tier`, `engine.tier` as the study's default, `tier: auto` planned over
the whole study in the dry run (nothing sent), and flex refused before anything is sent where it is not offered."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from speceval.cli.main import main as speceval_main
from tests.experiments.test_experiments import SAMPLE_INPUTS, SAMPLE_SPEC

STUDY = f"""experiment_name: tiers
output_dir: out
specs:
  - name: openai
    spec_path: {SAMPLE_SPEC}
    inputs_dir: {SAMPLE_INPUTS}
candidates:
  - model: o4-mini
judges:
  - model: gpt-4.1-2025-04-14
stages: [generation, compliance, report]
"""


def test_auto_with_a_deadline_prints_a_plan_naming_tiers_and_hours_and_sends_nothing(tmp_path: Path, capsys) -> None:
    experiment = tmp_path / "exp.yaml"
    experiment.write_text(STUDY + "engine:\n  tier: auto\n  deadline_hours: 4\n")
    assert speceval_main(["run", str(experiment), "--dry-run"]) == 0  # no key needed: nothing is sent
    shown = " ".join(capsys.readouterr().out.replace("│", " ").split())
    assert not (tmp_path / "out").exists()
    # Two batch round trips (6 h each at OpenAI) miss 4 h: the candidate, served at flex, goes to flex; the judge's
    # model is not on the flex list, so it goes to standard.
    assert "tier auto: the cheapest plan expected within 4 h" in shown
    # The judge's round holds every request its stage sends: one per answer and the spec's 52 examples (canaries).
    assert "answers candidates[0] o4-mini flex 40" in shown
    assert "judging judges[0] gpt-4.1-2025-04-14 standard 92" in shown
    assert "all-batch" in shown and "12.00 h (misses the deadline)" in shown and "all-standard" in shown
    assert speceval_main(["run", str(experiment), "--dry-run", "--json"]) == 0
    planned = json.loads(capsys.readouterr().out)
    assert [(r["model"], r["tier"]) for r in planned["tier_plan"]] == [
        ("o4-mini", "flex"),
        ("gpt-4.1-2025-04-14", "standard"),
    ]
    stages = {stage["stage"]: stage["requests"] for stage in planned["stages"]}
    assert [r["requests"] for r in planned["tier_plan"]] == [stages["generation"], stages["compliance"]]


@pytest.mark.slow
def test_a_flex_candidate_runs_at_flex_and_records_the_tier_served(tmp_path: Path) -> None:
    experiment = tmp_path / "exp.yaml"
    experiment.write_text(STUDY.replace("  - model: o4-mini\n", "  - model: o4-mini\n    tier: flex\n"))
    assert speceval_main(["run", str(experiment), "--offline"]) == 0
    [run] = [p.parent for p in (tmp_path / "out" / "generations").rglob("run.json")]
    manifest = json.loads((run / "run.json").read_text())
    assert manifest["parameters"]["realtime"]["service_tier"] == "flex"
    assert manifest["totals"]["tiers"]["flex"]["requests"] == 40
    records = [r for p in (run / "results").glob("*.json") for r in json.loads(p.read_text())]
    assert len(records) == 40 and {r["service_tier"] for r in records} == {"flex"}
    assert not list(run.glob("metadata/*.json"))  # no batch job was made for it
    [report] = list((tmp_path / "out").rglob("report.html"))
    page = " ".join(report.read_text().split())
    assert "Per service tier" in page and "<td>flex</td><td>40</td>" in page.replace(" <td>", "<td>")


def test_flex_for_a_model_without_it_is_refused_naming_the_entry_before_anything_is_sent(tmp_path: Path, capsys):
    experiment = tmp_path / "exp.yaml"
    experiment.write_text(STUDY + "engine:\n  tier: flex\n")  # the judge's model is not served at flex
    assert speceval_main(["run", str(experiment), "--offline"]) != 0
    said = capsys.readouterr().err
    assert "judges[0]" in said and "does not serve gpt-4.1-2025-04-14 at flex" in said
    assert not list((tmp_path / "out").rglob("results/*.json")) if (tmp_path / "out").exists() else True


@pytest.mark.slow
def test_a_simulated_user_at_flex_keeps_a_flex_conversation_study_off_the_batch_api(tmp_path: Path) -> None:
    experiment = tmp_path / "exp.yaml"
    user = "simulated_user:\n  model: gpt-5-mini\n  tier: flex\n  instructions: Push back.\n  max_turns: 2\n"
    experiment.write_text(STUDY.replace("  - model: o4-mini\n", "  - model: o4-mini\n    tier: flex\n") + user)
    assert speceval_main(["run", str(experiment), "--offline"]) == 0
    generations = tmp_path / "out" / "generations"
    assert not list(generations.rglob("metadata/*.json"))  # neither the candidate's rounds nor the user's turns
    user_turns = [r for p in generations.rglob("rounds/*/user/results/*.json") for r in json.loads(p.read_text())]
    assert user_turns and {r["service_tier"] for r in user_turns} == {"flex"}


def test_tiers_the_provider_does_not_serve_are_refused_naming_the_entry(tmp_path: Path, capsys) -> None:
    experiment = tmp_path / "exp.yaml"
    experiment.write_text(STUDY + "simulated_user:\n  model: claude-haiku-4-5\n  tier: flex\n  instructions: Hi.\n")
    assert speceval_main(["run", str(experiment), "--offline"]) != 0
    said = capsys.readouterr().err
    assert "claude-haiku-4-5" in said and "org anthropic has no flex tier" in said
    assert not list((tmp_path / "out").rglob("results/*.json")) if (tmp_path / "out").exists() else True


def test_auto_plans_the_simulated_users_turns_as_rounds_of_their_own(tmp_path: Path, capsys) -> None:
    experiment = tmp_path / "exp.yaml"
    user = "simulated_user:\n  model: gpt-4.1-mini-2025-04-14\n  instructions: Push back.\n  max_turns: 2\n"
    experiment.write_text(STUDY + user + "engine:\n  tier: auto\n  deadline_hours: 8\n")
    assert speceval_main(["run", str(experiment), "--dry-run", "--json"]) == 0
    planned = json.loads(capsys.readouterr().out)
    rows = [(r["label"], r["model"], r["tier"]) for r in planned["tier_plan"]]
    # All-batch is four round trips (24 h): the candidate's two rounds go to flex, then the user's turns (not served
    # at flex) to standard; the judge's one round trip (6 h) fits what is left of 8 h.
    assert rows == [
        ("round 1", "o4-mini", "flex"),
        ("round 2", "o4-mini", "flex"),
        ("round 2 (user turns)", "gpt-4.1-mini-2025-04-14", "standard"),
        ("judging", "gpt-4.1-2025-04-14", "batch"),
    ]


def test_the_dry_run_prices_each_entry_at_its_tier(tmp_path: Path, capsys) -> None:
    experiment = tmp_path / "exp.yaml"
    costs = {}
    for tier in ("batch", "standard"):
        experiment.write_text(STUDY + f"engine:\n  tier: {tier}\n")
        assert speceval_main(["run", str(experiment), "--dry-run", "--json"]) == 0
        planned = json.loads(capsys.readouterr().out)
        costs[tier] = {s["stage"]: s["upper_bound_usd"] for s in planned["stages"]}
    assert costs["batch"]["generation"] > 0
    for stage, batch in costs["batch"].items():
        assert costs["standard"][stage] == pytest.approx(2 * batch)  # OpenAI's Batch API: half of standard


def test_one_candidate_at_auto_with_the_studys_deadline_keeps_its_judge_on_the_batch_api(tmp_path: Path, capsys):
    """`tier: auto` on one candidate alone (the judge at its org's own path) with `engine.deadline_hours`: planned,
    the judge staying at batch. It was refused ("deadline_hours goes with tier: auto") unless engine.tier was auto."""
    experiment = tmp_path / "exp.yaml"
    study = STUDY.replace("  - model: o4-mini\n", "  - model: o4-mini\n    tier: auto\n")
    experiment.write_text(study + "engine:\n  deadline_hours: 7\n")
    assert speceval_main(["run", str(experiment), "--dry-run", "--json"]) == 0
    planned = json.loads(capsys.readouterr().out)["tier_plan"]
    # The judge's batch round trip (6 h, fixed) leaves 1 h: the candidate goes to flex.
    assert [(r["model"], r["tier"]) for r in planned] == [("o4-mini", "flex"), ("gpt-4.1-2025-04-14", "batch")]


@pytest.mark.parametrize(
    ("extra", "where"),
    [
        ("engine:\n  deadline_hours: 7\n", "line 13, field 'engine.deadline_hours'"),  # a deadline nothing reads
        ("", "line 9, field 'candidates[0].tier'"),  # an auto entry with no deadline
    ],
)
def test_auto_and_the_deadline_go_together_refused_naming_the_line(tmp_path: Path, capsys, extra, where) -> None:
    experiment = tmp_path / "exp.yaml"
    study = STUDY if extra else STUDY.replace("  - model: o4-mini\n", "  - model: o4-mini\n    tier: auto\n")
    experiment.write_text(study + extra)
    assert speceval_main(["run", str(experiment), "--dry-run"]) == 2
    assert where in " ".join(capsys.readouterr().err.split())
    assert not (tmp_path / "out").exists()


def test_the_plans_expectations_are_settable_and_a_misspelt_one_is_refused(tmp_path: Path, capsys) -> None:
    """`engine.tier_times`: with batches expected in 3 h (not 6), a 7-hour deadline fits both batch round trips,
    so the candidate stays on the Batch API; a provider key that is not one is refused naming its line."""
    experiment = tmp_path / "exp.yaml"
    study = STUDY.replace("  - model: o4-mini\n", "  - model: o4-mini\n    tier: auto\n")
    times = "engine:\n  deadline_hours: 7\n  tier_times:\n    batch_turnaround_hours: {openai: 3}\n"
    experiment.write_text(study + times)
    assert speceval_main(["run", str(experiment), "--dry-run", "--json"]) == 0
    planned = json.loads(capsys.readouterr().out)["tier_plan"]
    assert [(r["tier"], r["hours"]) for r in planned] == [("batch", 3.0), ("batch", 3.0)]
    experiment.write_text(study + times.replace("openai: 3", "opnai: 3"))
    assert speceval_main(["run", str(experiment), "--dry-run"]) == 2
    shown = " ".join(capsys.readouterr().err.split())
    assert "line 16, field 'engine.tier_times.batch_turnaround_hours'" in shown and "opnai" in shown


def test_a_judges_round_holds_every_request_the_dry_run_counts_for_it(tmp_path: Path, capsys) -> None:
    """The tier plan's judging rounds counted one plain request per answer: not a turn judge's turns, a ranking's
    pairs in both orders, the spec's examples nor the judge card's retests and rewordings, so a judge's round at
    flex or standard was planned at a fraction of its hours (and the plan's cost under the dry run's own bound)."""
    experiment = tmp_path / "exp.yaml"
    study = STUDY.replace("  - model: o4-mini\n", "  - model: o4-mini\n  - model: gpt-5-mini\n")
    study = study.replace("  - model: gpt-4.1-2025-04-14\n", "  - model: gpt-4.1-2025-04-14\n    scope: turn\n")
    study = study.replace("stages: [generation, compliance, report]", "stages: [generation, compliance, ranking]")
    experiment.write_text(
        study
        + "variations:\n  follow_ups:\n    - ['Are you sure?']\n"
        + "judge_card: {retest: 0.25, paraphrases: 2, paraphrases_file: null}\n"
        + "engine:\n  tier: auto\n  deadline_hours: 30\n"
    )
    assert speceval_main(["run", str(experiment), "--dry-run", "--json"]) == 0, capsys.readouterr().err
    planned = json.loads(capsys.readouterr().out)
    sent = {stage["stage"]: stage["requests"] for stage in planned["stages"]}
    [judging] = [r for r in planned["tier_plan"] if r["label"] == "judging"]
    card = [n for stage, n in sent.items() if stage.startswith("judge card:") and "paraphrases (" not in stage]
    assert len(card) == 2  # the retest and the rewordings (the paraphrases are the paraphraser's, not the judge's)
    assert judging["requests"] == sent["compliance"] + sent["ranking"] + sum(card)
    # 2 candidates x 40 inputs x 2 turns, 52 examples; 1 pair x 40 x 2 orders: more than one request an answer
    assert sent["compliance"] == 2 * 40 * 2 + 52 and sent["ranking"] == 80


def test_a_conversation_studys_later_rounds_are_planned_as_the_dry_run_bounds_them(tmp_path: Path, capsys) -> None:
    """The tier plan's rounds 2.. were a coarser copy of the dry run's bound (a user's turns at its max_tokens times
    the round, the candidates' without the user's turns): in a study with a simulated user its rounds cost half as
    much again as the dry run's own upper bound. And that bound left out what every later request carries besides
    the conversation: the variation's system prompt and the request's framing, so round 2, which holds everything
    round 1 sent, was bounded below round 1."""
    experiment = tmp_path / "exp.yaml"
    user = "simulated_user:\n  model: gpt-4.1-mini-2025-04-14\n  instructions: Push back.\n  max_turns: 3\n"
    # Short answers and user turns, a long system prompt: what round 2 adds to round 1 is small beside it.
    user += "  max_tokens: 16\n"
    system = (
        "variations:\n  max_tokens: [16]\n  system_prompt: ['" + "Answer as a careful assistant would. " * 60 + "']\n"
    )
    experiment.write_text(STUDY + user + system + "engine:\n  tier: auto\n  deadline_hours: 40\n")
    assert speceval_main(["run", str(experiment), "--dry-run", "--json"]) == 0, capsys.readouterr().err
    planned = json.loads(capsys.readouterr().out)
    stages = {s["stage"]: s for s in planned["stages"]}
    for number in (2, 3):
        rows = [r for r in planned["tier_plan"] if r["label"].startswith(f"round {number}")]
        assert {r["label"] for r in rows} == {f"round {number}", f"round {number} (user turns)"}
        bound = stages[f"generation round {number}"]
        assert sum(r["requests"] for r in rows) == bound["requests"]
        assert sum(r["cost_usd"] for r in rows) == pytest.approx(bound["upper_bound_usd"], rel=1e-9)
    answers = {r["label"]: r["cost_usd"] / r["requests"] for r in planned["tier_plan"] if r["model"] == "o4-mini"}
    assert answers["round 2"] > answers["round 1"]  # each answer of round 2 re-sends everything round 1's did
    judging = sum(r["cost_usd"] for r in planned["tier_plan"] if r["label"] == "judging")
    total = sum(r["cost_usd"] for r in planned["tier_plan"])
    assert total - judging == pytest.approx(sum(s["upper_bound_usd"] for k, s in stages.items() if k.startswith("gen")))


def test_a_model_listed_at_two_scopes_is_counted_ranking_once_as_the_runner_ranks(tmp_path: Path, capsys) -> None:
    """The runner ranks once per judge model (its first entry; `config.first_of_model`); the dry run counted a
    ranking for every entry, so a model at two scopes was planned (and its second entry's round timed) with
    rankings it never sends."""
    experiment = tmp_path / "exp.yaml"
    study = STUDY.replace("  - model: o4-mini\n", "  - model: o4-mini\n  - model: gpt-5-mini\n")
    judges = "  - model: gpt-4.1-2025-04-14\n    scope: turn\n  - model: gpt-4.1-2025-04-14\n    mode: likert\n"
    study = study.replace("  - model: gpt-4.1-2025-04-14\n", judges + "  - model: claude-sonnet-4-5-20250929\n")
    study = study.replace("stages: [generation, compliance, report]", "stages: [generation, compliance, ranking]")
    experiment.write_text(study + "variations:\n  follow_ups:\n    - ['Are you sure?']\n")
    experiment.write_text(experiment.read_text() + "engine:\n  tier: auto\n  deadline_hours: 30\n")
    assert speceval_main(["run", str(experiment), "--dry-run", "--json"]) == 0, capsys.readouterr().err
    planned = json.loads(capsys.readouterr().out)
    sent = {stage["stage"]: stage["requests"] for stage in planned["stages"]}
    assert sent["ranking"] == 2 * 40 * 2  # two judge models, 40 inputs, one pair in both orders
    judging = {r["entry"]: r["requests"] for r in planned["tier_plan"] if r["label"] == "judging"}
    # The likert entry: its 80 answers, and the spec's 52 examples (its mode's first entry); no ranking.
    assert judging["judges[1]"] == 2 * 40 + 52
    assert sum(judging.values()) == sent["compliance"] + sent["ranking"]


def test_a_study_of_generated_inputs_plans_the_inputs_stages_hours_first(tmp_path: Path, capsys) -> None:
    """The inputs stage's rounds (its generator's job, then its rater's, per round) run before anything the plan
    moves, at the stage's own tier: the plan left them out, so a study of generated inputs "met" a deadline its
    inputs alone took longer than."""
    experiment = tmp_path / "exp.yaml"
    study = STUDY.replace(f"    inputs_dir: {SAMPLE_INPUTS}\n", "").replace(
        "stages: [generation, compliance, report]", "stages: [inputs, generation, compliance, report]"
    )
    study += "inputs:\n  generator: gpt-4.1-mini-2025-04-14\n  per_statement: 2\n  max_rounds: 2\n"
    experiment.write_text(study + "engine:\n  tier: auto\n  deadline_hours: 21\n")
    assert speceval_main(["run", str(experiment), "--dry-run", "--json", "--offline"]) == 0, capsys.readouterr().err
    planned = json.loads(capsys.readouterr().out)
    rows = planned["tier_plan"]
    first = [(r["label"], r["tier"], r["hours"]) for r in rows[:4]]
    # two rounds of the generator's OpenAI job (6 h) and the rater's Anthropic one (1 h), at batch, before round 1
    assert first == [
        ("inputs round 1 (generator)", "batch", 6.0),
        ("inputs round 1 (rater)", "batch", 1.0),
        ("inputs round 2 (generator)", "batch", 6.0),
        ("inputs round 2 (rater)", "batch", 1.0),
    ]
    assert all(r["stage"] < min(s["stage"] for s in rows[4:]) for r in rows[:4])
    # 14 h of inputs and 6 h of judging leave none for the candidate's batch round trip: it goes to flex
    assert [(r["entry"], r["tier"]) for r in rows[4:]] == [("candidates[0]", "flex"), ("judges[0]", "batch")]
    stages = {s["stage"]: s for s in planned["stages"]}
    inputs_bound = sum(s["upper_bound_usd"] for k, s in stages.items() if k.startswith("inputs:"))
    assert sum(r["cost_usd"] for r in rows[:4]) == pytest.approx(inputs_bound)
    experiment.write_text(study + "engine:\n  tier: auto\n  deadline_hours: 13\n")
    assert speceval_main(["run", str(experiment), "--dry-run", "--offline"]) == 2
    shown = " ".join(capsys.readouterr().err.split())
    assert "inputs round 1 (generator) batch (its entry's own tier)" in shown and "`inputs: tier: flex`" in shown


def test_a_judge_moved_by_another_judges_re_plan_says_so_when_it_starts(tmp_path: Path) -> None:
    """A re-plan moves every round still to start. The first judge's re-plan (its inputs done, the deadline's hours
    all left) moved the second judge from standard back to the Batch API, and that judge, finding its tier already
    moved, said nothing: it went through the Batch API where the plan said standard, and experiment.json had no
    re-plan of it."""
    from datetime import UTC, datetime

    from speceval.defaults import Tier
    from speceval.experiments.runner import plan, preflight
    from speceval.experiments.tier_study import StudyTiers

    study = STUDY.replace(f"    inputs_dir: {SAMPLE_INPUTS}\n", "").replace(
        "stages: [generation, compliance, report]", "stages: [inputs, generation, compliance, report]"
    )
    study = study.replace("  - model: gpt-4.1-2025-04-14\n", "  - model: gpt-5\n  - model: gpt-4.1-2025-04-14\n")
    study += "inputs:\n  generator: gpt-4.1-mini-2025-04-14\n  per_statement: 2\n  max_rounds: 2\n"
    experiment = tmp_path / "exp.yaml"
    experiment.write_text(study + "engine:\n  tier: auto\n  deadline_hours: 20\n")
    config, output_dir, _ = preflight(experiment, offline=True, dry_run=True)
    _, groups = plan(config, output_dir)
    tiers = StudyTiers(config, tmp_path, groups, output_dir=output_dir, offline=True)
    assert tiers.plan is not None
    assert {r.entry: r.tier for r in tiers.plan.rounds if r.label == "judging"} == {
        "judges[0]": Tier.FLEX,
        "judges[1]": Tier.STANDARD,  # not served at flex; 14 h of inputs leave no batch round trip
    }
    tiers.started_at, said = datetime.now(UTC), []
    tiers.say = said.append
    # The inputs took no time (as offline): at judging, 20 h are left and both judges fit the Batch API.
    assert tiers.judging_tier("judges[0]", config.judges[0], None) is Tier.FLEX  # planned flex: stays (same price)
    assert tiers.judging_tier("judges[1]", config.judges[1], None) is Tier.BATCH
    assert [(r.entry, r.planned, r.sent) for r in tiers.replans] == [("judges[1]", Tier.STANDARD, Tier.BATCH)]
    assert len(said) == 1 and "judges[1] judging at batch (planned standard)" in said[0]


@pytest.mark.slow  # a whole (small) experiment
def test_a_started_studys_plan_is_shown_beside_all_batch_on_the_same_expectations(tmp_path: Path, capsys) -> None:
    """A study that has sent goes on from the plan it started with (the configured 6 h a batch round trip); the
    all-batch and all-standard lines beside it were computed from the jobs it had finished (offline, 0.05 s: all-batch
    read 0.00 h beside the plan's 6 h)."""
    experiment = tmp_path / "exp.yaml"
    study = STUDY.replace("stages: [generation, compliance, report]", "stages: [generation]")
    experiment.write_text(study + "engine:\n  tier: auto\n  deadline_hours: 13\n  poll_interval: 0.05\n")
    assert speceval_main(["run", str(experiment), "--offline"]) == 0, capsys.readouterr().err
    capsys.readouterr()
    assert speceval_main(["run", str(experiment), "--offline", "--dry-run"]) == 0
    shown = " ".join(capsys.readouterr().out.split())
    assert "this plan: $" in shown and "6.00 h (meets the deadline)" in shown.split("this plan:")[1].split("all-")[0]
    assert "6.00 h (meets the deadline)" in shown.split("all-batch:")[1].split("all-standard")[0], shown


def test_an_endpoint_candidates_rounds_are_planned_at_its_own_rate_limit(tmp_path: Path, capsys) -> None:
    """A candidate on your own server at 1 request a minute: its 40 answers take 40 minutes, not 0.01 h."""
    experiment = tmp_path / "exp.yaml"
    own = (
        "  - model: meta-llama/Llama-3.1-8B-Instruct\n    org: openai-compatible\n"
        "    base_url: http://127.0.0.1:9/v1\n    rpm: 1\n"
    )
    experiment.write_text(
        STUDY.replace("  - model: o4-mini\n", own + "  - model: o4-mini\n")
        + "engine:\n  tier: auto\n  deadline_hours: 8\n"
    )
    assert speceval_main(["run", str(experiment), "--dry-run", "--json"]) == 0, capsys.readouterr().err
    rows = {(r["entry"], r["label"]): r for r in json.loads(capsys.readouterr().out)["tier_plan"]}
    assert rows[("candidates[0]", "answers")]["tier"] == "standard"
    assert rows[("candidates[0]", "answers")]["hours"] == pytest.approx(40 / 60)
