"""A simulated user's realtime rate limits (`rpm`, `tpm`, `rate_period_seconds`, `max_concurrency`): taken as a
candidate's entry takes them, refused where a candidate's would be, recorded only when set, counted by the tier plan
and honoured by the run (its turns paced as they reach the server)."""

from __future__ import annotations

import json
import math
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from speceval.cli.main import main as speceval_main
from speceval.conversations.simulated_user import SimulatedUser
from speceval.endpoint_keys import EndpointKeys
from speceval.experiments.changes import grid_digest
from speceval.experiments.config import ExperimentConfig
from tests.conftest import TEST_KEY, cli_env, only_run_dir, run_generation, write_spec
from tests.conversations.test_generation_rounds import write_items
from tests.conversations.test_simulated_user import CANDIDATE, USER, args, is_user_request
from tests.experiments.test_tiers import STUDY

OLD = """experiment_name: old
output_dir: out
specs:
  - name: s
    spec_path: spec.jsonl
    inputs_dir: inputs
candidates:
  - model: gpt-4.1-mini-2025-04-14
judges:
  - model: gpt-4.1-2025-04-14
simulated_user:
  model: gpt-4.1-2025-04-14
  instructions: Push back.
  max_turns: 2
variations:
  simulated_user:
    strict: {stop_word: DONE}
    none: null
"""
OLD_DIGEST = "2211c53283c8db8100fa1cc78e329050202cc9c7fe35630a8368e9e2b0a2be1c"
"""`grid_digest` of OLD by main at e6ed20f, before a simulated user had limits: a folder started then resumes."""


@pytest.mark.parametrize(
    ("key", "value"), [("rpm", 0), ("tpm", -1), ("max_concurrency", 0), ("rate_period_seconds", 0)]
)
def test_a_limit_out_of_range_gets_the_entrys_own_message(key: str, value: float) -> None:
    with pytest.raises(ValidationError) as as_user:
        SimulatedUser.model_validate({"model": USER, "instructions": "Hi.", key: value})
    with pytest.raises(ValidationError) as as_entry:
        EndpointKeys.model_validate({key: value})
    assert as_user.value.errors()[0]["msg"] == as_entry.value.errors()[0]["msg"]


def test_limits_are_recorded_only_when_set_so_an_old_experiment_digests_as_it_did() -> None:
    config = ExperimentConfig.model_validate(yaml.safe_load(OLD))
    assert grid_digest(config) == OLD_DIGEST
    assert config.simulated_user_of({}) is None  # the axis replaced the top-level user
    old_keys = {"model", "org", "instructions", "max_turns", "stop_word", "temperature", "max_tokens"}
    assert set(SimulatedUser(model=USER, instructions="Hi.").model_dump()) == old_keys  # a run.json's record
    limited = SimulatedUser(model=USER, instructions="Hi.", tier="standard", rpm=30, max_concurrency=2)
    assert set(limited.model_dump()) == old_keys | {"tier", "rpm", "max_concurrency"}
    assert SimulatedUser.model_validate(limited.model_dump()) == limited  # read back on resume


# A candidate of an org without a batch API with its own `rpm:` first, so the user's line is not the file's first.
LOCAL = "  - model: llama-local\n    org: openai-compatible\n    rpm: 600\n"


@pytest.mark.parametrize(
    ("user", "field", "needle"),
    [
        (
            "simulated_user:\n  model: gpt-4.1-mini-2025-04-14\n  instructions: Hi.\n  rpm: 30\n",
            "simulated_user.rpm",
            "  rpm: 30",
        ),
        (
            "simulated_user:\n  model: gpt-4.1-mini-2025-04-14\n  instructions: Hi.\n"
            "variations:\n  simulated_user:\n    calm: {tier: standard, rpm: 30}\n"
            "    strict: {tier: batch, max_concurrency: 2}\n",
            "variations.simulated_user.strict.max_concurrency",
            "max_concurrency: 2",
        ),
    ],
    ids=["no tier", "a variation at batch"],
)
def test_a_limit_on_a_user_sent_through_a_batch_api_is_refused_with_its_line_before_anything_is_written(
    tmp_path: Path, capsys, user: str, field: str, needle: str
) -> None:
    experiment = tmp_path / "exp.yaml"
    text = STUDY.replace("  - model: o4-mini\n", "  - model: o4-mini\n" + LOCAL) + user
    experiment.write_text(text)
    assert speceval_main(["run", str(experiment), "--offline"]) == 2
    said = " ".join(capsys.readouterr().err.split())
    line = next(n for n, row in enumerate(text.splitlines(), 1) if needle in row)
    assert str(experiment) in said and f"line {line}" in said and field in said, said
    assert "only for models without a batch API" in said and "or at tier flex or standard" in said
    assert sorted(p.name for p in tmp_path.iterdir()) == ["exp.yaml"]


def _user_rows(tmp_path: Path, capsys, limits: str) -> list[dict[str, Any]]:
    experiment = tmp_path / "exp.yaml"
    user = "simulated_user:\n  model: gpt-4.1-mini-2025-04-14\n  tier: standard\n  instructions: Hi.\n  max_turns: 2\n"
    experiment.write_text(STUDY + user + limits + "engine:\n  tier: auto\n  deadline_hours: 13\n")
    assert speceval_main(["run", str(experiment), "--dry-run", "--json"]) == 0, capsys.readouterr().err
    rows = json.loads(capsys.readouterr().out)["tier_plan"]
    return [row for row in rows if row["label"].endswith("(user turns)")]


def test_the_plan_times_the_users_turns_at_its_own_limits(tmp_path: Path, capsys) -> None:
    free = _user_rows(tmp_path, capsys, "")
    slow = _user_rows(tmp_path, capsys, "  rpm: 2\n")
    held = _user_rows(tmp_path, capsys, "  max_concurrency: 1\n")
    assert [r["requests"] for r in free] == [r["requests"] for r in slow] == [r["requests"] for r in held] == [40]
    # 40 user turns at standard: 32 in flight at 10 s a call is 2 rounds of calls (20 s); at 2 a minute, 20 minutes;
    # one in flight, 40 calls of 10 s.
    assert free[0]["hours"] == pytest.approx(math.ceil(40 / 32) * 10 / 3600)
    assert slow[0]["hours"] == pytest.approx(40 / 2 / 60)
    assert held[0]["hours"] == pytest.approx(40 * 10 / 3600)


def test_a_user_limit_on_a_batch_path_exits_2_before_the_run_folder_exists(tmp_path: Path) -> None:
    spec = write_spec(tmp_path / "spec.jsonl", ["alpha"])
    inputs = write_items(tmp_path / "in", {"alpha": ["Opening?"]})
    done = run_generation([*args(spec, inputs, tmp_path / "out"), "--offline", "--simulated-user-rpm", "30"], cli_env())
    assert done.returncode == 2, done.stderr
    said = " ".join(done.stderr.split())
    assert "rpm apply to its realtime turns" in said and "batch API" in said and "flex or standard" in said
    assert not (tmp_path / "out").exists()


def test_the_users_turns_reach_the_server_no_faster_than_its_rpm(tmp_path: Path) -> None:
    """12 conversations, so 12 user turns in round 2, which unpaced go out at once (32 in flight). At 3 a second
    (`--simulated-user-rpm 3 --simulated-user-rate-period-seconds 1`: one every 1/3 s) no second-long window of
    arrivals holds more than 4 (3, and one of slack for a late arrival beside an early one)."""
    from tests.independent.openai_server import IndependentOpenAIServer

    questions = [f"Opening question {n}?" for n in range(12)]
    spec = write_spec(tmp_path / "spec.jsonl", ["alpha"])
    inputs = write_items(tmp_path / "in", {"alpha": questions})
    arrivals: list[float] = []
    lock = threading.Lock()

    def answer(body: dict[str, Any]) -> str:
        if is_user_request(body):
            with lock:
                arrivals.append(time.monotonic())
            return "Why?"
        return f"answer to {body['messages'][-1]['content'][:20]}"

    limits = ["--simulated-user-tier", "standard", "--simulated-user-rpm", "3"]
    limits += ["--simulated-user-rate-period-seconds", "1", "--simulated-user-max-concurrency", "4"]
    command = [*args(spec, inputs, tmp_path / "out", max_turns=2), "--poll-interval", "0.1", *limits]
    with IndependentOpenAIServer(answer=answer) as server:
        env = cli_env(OPENAI_API_KEY=TEST_KEY, OPENAI_BASE_URL=server.base_url)
        done = run_generation(command, env)
        assert done.returncode == 0, done.stderr
        faster = [*command, "--simulated-user-rpm", "6", "--resume", str(only_run_dir(tmp_path / "out"))]
        again = run_generation(faster, env)  # argparse keeps the last of a repeated flag
    assert again.returncode == 2 and "--simulated-user-rpm was 3, now 6" in again.stderr, again.stderr
    assert len(arrivals) == len(questions)
    busiest = max(sum(1 for t in arrivals if start <= t < start + 1.0) for start in arrivals)
    assert busiest <= 4, sorted(t - arrivals[0] for t in arrivals)
    run_dir = only_run_dir(tmp_path / "out")
    sent = json.loads((run_dir / "rounds" / "2" / "user" / "run.json").read_text())["parameters"]["realtime"]
    assert (sent["rpm"], sent["period_seconds"], sent["max_concurrency"]) == (3, 1, 4)
    recorded = json.loads((run_dir / "run.json").read_text())["parameters"]["simulated_user"]
    assert (recorded["rpm"], recorded["rate_period_seconds"], recorded["max_concurrency"]) == (3, 1, 4)
    assert recorded["model"] == USER and CANDIDATE not in str(recorded)


def test_every_run_of_a_study_sends_its_users_turns_through_one_limiter(tmp_path: Path, monkeypatch) -> None:
    """The plan counts a user's limits over all its turns of a round, across runs: so the runs share its client (and
    the limiter that is the client's), one per user, sampling settings and tier, as the judges do."""
    from speceval.batch.engine import EngineOptions
    from speceval.experiments.config import user_entry
    from speceval.experiments.context import StageContext
    from speceval.realtime.engine import limiter_of
    from speceval.realtime.model import RealtimeModel

    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    text = STUDY + "simulated_user:\n  model: gpt-4.1-mini-2025-04-14\n  tier: standard\n  instructions: Hi.\n"
    config = ExperimentConfig.model_validate(yaml.safe_load(text + "  rpm: 30\n  max_concurrency: 2\n"))
    ctx = StageContext(config, tmp_path / "exp.yaml", tmp_path, tmp_path / "out", EngineOptions(), lambda _: {}, True)
    user = config.simulated_user
    assert user is not None
    # Each run's task asks for its user's client (stages.generation_task): one run's, another's, a per-round one's.
    clients = [ctx.shared_model(user_entry(user), user.params) for _ in range(2)]
    clients.append(ctx.round_models(user_entry(user), user.params, shared=True)(2, None))
    assert all(isinstance(c, RealtimeModel) for c in clients)
    # Held as the runs' engines hold them while they run (a limiter lives while one of its engines does).
    limiters = [limiter_of(c) for c in clients if isinstance(c, RealtimeModel)]
    assert len({id(limiter) for limiter in limiters}) == 1
    assert limiters[0].limits.rpm == 30 and limiters[0].limits.max_concurrency == 2
