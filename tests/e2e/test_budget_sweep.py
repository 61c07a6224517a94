"""Sweep cases of issue 36 that were accepted wrongly: numeric flags of `speceval inputs` out of range (batch size 0
used to hang creating empty jobs), a budget of 0 (send nothing, the same for flag and YAML), `max_turns: true`,
and a resume that silently ignored a changed flag."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from speceval.cli.generation import main as generation_main
from speceval.cli.main import main as speceval_main
from tests.conftest import write_inputs, write_spec
from tests.experiments.test_experiments import GRID

MINI = "gpt-4.1-mini-2025-04-14"


def _generate(tmp_path: Path, statements: dict[str, list[str]], out: str, model: str, *extra: str) -> int:
    """`run_batched_generation` over a spec and inputs of `statements` (written once per tmp_path), into `out`."""
    spec = write_spec(tmp_path / "spec.jsonl", list(statements))
    inputs = write_inputs(tmp_path / "inputs", statements)
    return generation_main(
        [
            "--spec-path",
            str(spec),
            "--pregenerated-inputs-dir",
            str(inputs),
            "--model-name",
            model,
            "--output-base-dir",
            str(tmp_path / out),
            "--poll-interval",
            "0.05",
            *extra,
        ]
    )


def _inputs_args(tmp_path: Path, *extra: str) -> list[str]:
    spec = write_spec(tmp_path / "spec.jsonl", ["alpha", "beta"])
    return [
        "inputs",
        "--spec-path",
        str(spec),
        "--generator-model",
        "gpt-4.1-mini-2025-04-14",
        "--offline",
        "--per-statement",
        "2",
        "--output-dir",
        str(tmp_path / "out"),
        *extra,
    ]


@pytest.mark.parametrize(
    "flag",
    [
        ["--batch-size", "0"],
        ["--batch-size", "-5"],
        ["--poll-interval", "0"],
        ["--max-attempts", "0"],
        ["--timeout-hours", "0"],
        ["--budget-usd", "-1"],
    ],
)
def test_inputs_refuses_numbers_out_of_range_at_once(tmp_path: Path, flag: list[str]) -> None:
    with pytest.raises(SystemExit) as refused:
        speceval_main(_inputs_args(tmp_path, *flag))
    assert refused.value.code == 2 and not (tmp_path / "out").exists()


def test_a_zero_budget_sends_nothing_for_generation_and_inputs(tmp_path: Path, capsys) -> None:
    code = _generate(tmp_path, {"alpha": ["a0", "a1"]}, "gen", MINI, "--offline", "--budget-usd", "0")
    assert code == 3
    assert not list((tmp_path / "gen").rglob("metadata/*.json"))  # no job was created
    shown = capsys.readouterr()
    assert (shown.out + shown.err).strip().splitlines()[-1].startswith("Stopped by the budget: spent $0.0000")
    assert speceval_main(_inputs_args(tmp_path, "--budget-usd", "0")) == 3
    assert not list((tmp_path / "out").rglob("metadata/*.json"))


def test_an_experiment_with_budget_0_sends_nothing(tmp_path: Path, capsys) -> None:
    experiment = tmp_path / "exp.yaml"
    experiment.write_text(GRID + "budget_usd: 0\n")
    assert speceval_main(["run", str(experiment), "--offline"]) == 3
    assert not list((tmp_path / "out").rglob("metadata/*.json"))
    shown = capsys.readouterr()
    assert "Stopped by the budget" in (shown.out + shown.err).strip().splitlines()[-1]


def test_max_turns_true_is_refused(tmp_path: Path, capsys) -> None:
    experiment = tmp_path / "exp.yaml"
    experiment.write_text(
        GRID + "simulated_user:\n  model: gpt-4.1-mini-2025-04-14\n  instructions: Ask.\n  max_turns: true\n"
    )
    assert speceval_main(["run", str(experiment), "--offline"]) == 2
    shown = " ".join("".join(capsys.readouterr()).split())
    assert "max_turns" in shown and "valid integer" in shown and not (tmp_path / "out").exists()


def test_inputs_resume_refuses_a_changed_per_statement(tmp_path: Path, capsys) -> None:
    assert speceval_main(_inputs_args(tmp_path, "--poll-interval", "0.05")) == 0
    [manifest] = (tmp_path / "out").glob("*/input_judge/*/*/run.json")
    before = manifest.read_bytes()
    capsys.readouterr()
    code = speceval_main(["inputs", "--resume", str(manifest.parent), "--per-statement", "5"])
    assert code == 2 and manifest.read_bytes() == before
    shown = " ".join("".join(capsys.readouterr()).split())
    assert "--per-statement 2 -> 5" in shown
    assert speceval_main(["inputs", "--resume", str(manifest.parent), "--per-statement", "2"]) == 0
    assert json.loads(manifest.read_text())["status"] in ("finished", "complete", "completed")


def test_empty_instructions_file_is_named(tmp_path: Path, capsys) -> None:
    empty = tmp_path / "empty.txt"
    empty.write_text("\n")
    code = _generate(
        tmp_path,
        {"alpha": ["a0"]},
        "gen",
        MINI,
        "--offline",
        "--simulated-user-model",
        MINI,
        "--simulated-user-instructions",
        f"@{empty}",
    )
    shown = " ".join("".join(capsys.readouterr()).split())
    assert code == 2 and str(empty) in shown
    assert "instructions file is empty" in shown and not (tmp_path / "gen").exists()


def test_answers_at_max_tokens_from_the_emulator_never_pass_the_budget(tmp_path: Path, monkeypatch, capsys) -> None:
    """The emulator bills at most a request's max_tokens, and with `answer_at_max_tokens` exactly that: the most
    each job can cost, so what the budget reserved is what is spent."""
    from speceval.batch.costs import PriceTable
    from speceval.emulator import Emulator
    from speceval.emulator.faults import FaultConfig
    from speceval.wire.usage import Usage
    from tests.conftest import TEST_KEY

    model, budget, max_tokens = "gpt-4.1-mini-2025-04-14", 0.005, 1000
    with Emulator(faults=FaultConfig(turnaround_seconds=0.05, answer_at_max_tokens=True)) as emu:
        monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
        monkeypatch.setenv("OPENAI_BASE_URL", emu.openai_base_url)
        code = _generate(
            tmp_path,
            {sid: [f"{sid} {i}" for i in range(4)] for sid in ("alpha", "beta")},
            "gen",
            model,
            "--batch-size",
            "2",
            "--max-tokens",
            str(max_tokens),
            "--budget-usd",
            str(budget),
        )
        created = emu.stats.batches_created["openai"]
    assert code == 3 and 1 < created < 4
    usage, answers = Usage(), 0
    for path in (tmp_path / "gen").rglob("results/*.json"):
        for row in json.loads(path.read_text()):
            if row["outcome"] == "succeeded":
                answers += 1
                assert row["usage"]["output_tokens"] == max_tokens
                usage.add(row["usage"])
    spent = PriceTable.load().cost(model, "openai", usage, batch=True)
    assert answers == 2 * created and spent is not None and spent <= budget
    shown = capsys.readouterr()
    assert (shown.out + shown.err).strip().splitlines()[-1].startswith("Stopped by the budget: spent $")


def test_a_realtime_run_whose_bound_passes_the_budget_but_spend_fits_finishes(tmp_path: Path) -> None:
    """$0.13 holds two calls' upper bounds (about $0.06 each) while eight workers send: 40 answers costing about
    $0.02 finish in one command. (Workers refused outright would not fail this: the survivors drain the queue.)"""
    from tests.conftest import SAMPLE_INPUTS, SAMPLE_SPEC, cli_env, only_run_dir, run_generation

    out = tmp_path / "out"
    done = run_generation(
        [
            "--spec-path",
            str(SAMPLE_SPEC),
            "--pregenerated-inputs-dir",
            str(SAMPLE_INPUTS),
            "--model-name",
            "claude-sonnet-4-6",
            "--realtime",
            "--offline",
            "--output-base-dir",
            str(out),
            "--budget-usd",
            "0.13",
            "--max-concurrency",
            "8",
        ],
        cli_env(),
    )
    assert done.returncode == 0, done.stderr[-2000:]
    rows = [row for path in (only_run_dir(out) / "results").glob("*.json") for row in json.loads(path.read_text())]
    assert len(rows) == 40 and all(row["outcome"] == "succeeded" for row in rows)


def test_ranking_a_conversation_run_against_a_plain_run_is_refused(tmp_path: Path) -> None:
    """A simulated user's run answered other messages after the first: comparing it input by input with a plain
    run's single answers would rank different things."""
    from speceval.batch.engine import EngineOptions
    from speceval.errors import ConfigError
    from speceval.pipelines.candidates import resolve_candidates
    from speceval.pipelines.judge_run import JudgeSettings
    from speceval.pipelines.ranking import BatchedRankingPipeline
    from speceval.wire.params import GenerationParams
    from tests.conftest import only_run_dir

    statements = {"alpha": ["a0", "a1"]}
    assert _generate(tmp_path, statements, "plain", MINI, "--offline") == 0
    assert (
        _generate(
            tmp_path,
            statements,
            "talk",
            "gpt-4.1-nano-2025-04-14",
            "--offline",
            "--simulated-user-model",
            MINI,
            "--simulated-user-instructions",
            "Push back.",
            "--max-turns",
            "2",
        )
        == 0
    )
    candidates = resolve_candidates([only_run_dir(tmp_path / "plain"), only_run_dir(tmp_path / "talk")])
    settings = JudgeSettings(
        spec_path=tmp_path / "spec.jsonl",
        judge_model="gpt-4.1-2025-04-14",
        output_dir_base=tmp_path / "rank",
        offline=True,
        params=GenerationParams(max_tokens=256),
        engine=EngineOptions(poll_interval=0.05),
    )
    with pytest.raises(
        ConfigError,
        match=r"different conversation scripts \(a single answer per input; simulated "
        r"user gpt-4.1-mini-2025-04-14\)",
    ):
        BatchedRankingPipeline(settings, candidates)
    assert not (tmp_path / "rank").exists()


def test_a_stop_by_cost_per_run_limit_says_so_on_the_last_line(tmp_path: Path, capsys) -> None:
    experiment = tmp_path / "exp.yaml"
    grid = GRID.replace("runs_per_variation: 2", "runs_per_variation: 1\nstages: [generation]")
    experiment.write_text(grid + "cost_per_run_limit: 0.0001\n")
    assert speceval_main(["run", str(experiment), "--offline"]) == 3
    assert not list((tmp_path / "out").rglob("metadata/*.json"))  # no run's first job fits $0.0001
    shown = capsys.readouterr()
    last = (shown.out + shown.err).strip().splitlines()[-1]
    assert last.startswith("Stopped by cost_per_run_limit ($0.0001 per run): not sent: 160 request(s)")


def test_the_emulator_bills_a_realtime_answer_at_most_its_max_tokens() -> None:
    import openai

    from speceval.emulator import Emulator
    from tests.conftest import TEST_KEY

    with Emulator() as emu:
        client = openai.OpenAI(api_key=TEST_KEY, base_url=emu.openai_base_url, max_retries=0)
        chat = [{"role": "user", "content": "Tell me everything about the weather."}]
        capped = client.chat.completions.create(model=MINI, messages=chat, max_completion_tokens=3)  # type: ignore[arg-type]
        free = client.chat.completions.create(model=MINI, messages=chat, max_completion_tokens=4000)  # type: ignore[arg-type]
    assert capped.usage is not None and free.usage is not None
    assert capped.usage.completion_tokens == 3 < free.usage.completion_tokens


@pytest.mark.parametrize(
    ("text", "key"),
    [
        (GRID + "health:\n  pass_above: true\n", "health.pass_above"),  # issue 42: accepted as 1.0
        (GRID.replace("temperature: [0.0, 0.7]", "temperature: [0.0, true]"), "temperature"),  # sampled at 1.0
    ],
)
def test_yes_is_not_a_number(tmp_path: Path, capsys, text: str, key: str) -> None:
    experiment = tmp_path / "exp.yaml"
    experiment.write_text(text)
    assert speceval_main(["run", str(experiment), "--offline"]) == 2
    shown = " ".join("".join(capsys.readouterr()).split())
    assert key in shown and "valid number" in shown and not (tmp_path / "out").exists(), shown


@pytest.mark.slow
def test_a_conversation_run_held_by_the_budget_lets_the_canary_jobs_in_flight_be_collected(tmp_path: Path) -> None:
    """Issue 42: a conversation run drives its rounds itself, inside the experiment's task; while the budget held its
    round for the judge's canary job in flight, nothing polled that job, and the run logged "holding" twice a second
    forever. The experiment must end (here it finishes: the canary job's actual cost is far below its bound)."""
    import subprocess
    import sys

    from tests.conftest import SAMPLE_INPUTS, SAMPLE_SPEC, cli_env

    experiment = tmp_path / "exp.yaml"
    experiment.write_text(
        f"""experiment_name: held
output_dir: out
specs:
  - name: openai
    spec_path: {SAMPLE_SPEC}
    inputs_dir: {SAMPLE_INPUTS}
candidates:
  - model: gpt-4.1-mini-2025-04-14
judges:
  - model: gpt-4.1-2025-04-14
variations:
  simulated_user:
    pushy:
      model: gpt-4.1-mini-2025-04-14
      instructions: Push back hard.
      max_turns: 2
stages: [generation, compliance, report]
budget_usd: 1
"""
    )
    # A watchdog, not a timing assertion: the defect was a run that never ends.
    done = subprocess.run(
        [sys.executable, "-m", "speceval", "run", str(experiment), "--offline"],
        capture_output=True,
        text=True,
        timeout=240,
        # Jobs that take 3 s, not the suite's 0.1 s: the canary job is still at the provider when the round wants
        # its money, whatever the machine's load (at 0.1 s a loaded machine collected it first and nothing held).
        env=cli_env(SPECEVAL_OFFLINE_TURNAROUND="3"),
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    log = (tmp_path / "out" / "logs" / "experiment.log").read_text()
    assert log.count("budget: holding the next job") == 1  # said once per hold, not once a round
