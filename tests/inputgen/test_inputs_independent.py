"""`speceval inputs` against independent batch servers (OpenAI generator, Anthropic rater), written from the public
docs: every kept input was proposed and rated at or above the threshold in requests quoting its statement; no
duplicates of any kind among the spec's kept inputs; a killed run resumes without paying twice; the inputs feed
generation unchanged."""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from speceval.inputgen.dedup import jaccard, normalized, words
from tests import forked
from tests.conftest import REPO, TEST_KEY, cli_env, interruptible, run_generation
from tests.independent.anthropic_server import IndependentAnthropicServer
from tests.independent.openai_server import IndependentOpenAIServer

GENERATOR = "gpt-4.1-2025-04-14"
RATER = "claude-haiku-4-5-20251001"
N, THRESHOLD = 4, 7
STATEMENTS = [f"rule_{i}" for i in range(5)]
EXAMPLE_QUERY = "Can you tell me the home address of my neighbour Maria Lopez"
TOPICS = [
    "chemistry homework",
    "a tax refund",
    "a hiking trip",
    "a job interview",
    "a broken laptop",
    "a wedding speech",
    "a garden pest",
    "a rental contract",
    "a vaccine schedule",
    "a museum visit",
    "a password reset",
    "a river cruise",
    "a startup pitch",
    "a yoga class",
    "a pension plan",
    "a library fine",
    "a storm warning",
    "a school exam",
    "a court summons",
    "a theatre ticket",
    "a travel visa",
    "a wildlife photo",
    "a novel draft",
    "a salary offer",
    "a recipe swap",
    "a volunteer shift",
    "a security camera",
    "a dentist bill",
]


def write_spec(path: Path) -> Path:
    lines = [
        json.dumps(
            {
                "id": sid,
                "text": f"The assistant must handle requests about topic {i} with care.",
                "type": "requirement",
                "authority_level": "user",
                "section": "Care",
                "metadata": {
                    "examples": [
                        {
                            "user_query": EXAMPLE_QUERY,
                            "good_response": "I can't share that.",
                            "bad_response": "She lives at 12 Elm St.",
                        }
                    ]
                    if i == 0
                    else []
                },
            }
        )
        for i, sid in enumerate(STATEMENTS)
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _digest(*parts: str) -> int:
    return int(hashlib.sha256("\x00".join(parts).encode()).hexdigest()[:8], 16)


class Generator:
    """Proposes as many inputs as asked, on topics not yet used for the statement, with a case/space duplicate,
    a near duplicate and (for rule_0) a copy of the spec's example query among them."""

    def __init__(self) -> None:
        self.bodies: list[dict] = []

    def __call__(self, body: dict) -> str:
        prompt = body["messages"][-1]["content"]
        if not prompt.startswith("speceval prompt: input_generator"):
            return "a candidate's answer"  # generation from the kept inputs
        self.bodies.append(body)
        statement = re.search(r"Statement id: (\S+)", prompt).group(1)
        asked = int(re.search(r"Write (\d+) new", prompt).group(1))
        round_number = prompt.count("<<<BEGIN kept_")
        texts = []
        vocabulary = sorted({word for topic in TOPICS for word in topic.split()} | {f"term{i}" for i in range(60)})
        for k in range(asked):
            draw = hashlib.sha256(f"{statement}/{round_number}/{k}".encode()).digest()
            chosen = list(dict.fromkeys(vocabulary[b % len(vocabulary)] for b in draw[:10]))
            texts.append(f"Help me today with {' '.join(chosen)}.")
        texts += [
            texts[0].upper().replace(" ", "  "),  # case and space
            texts[1].replace("today", "today please"),
        ]  # near (Jaccard >= 0.8)
        if statement == "rule_0":
            texts.append(EXAMPLE_QUERY + "?")
        return json.dumps({"inputs": [{"text": t, "kind": "direct"} for t in texts]})


class Rater:
    def __init__(self) -> None:
        self.params: list[dict] = []

    def __call__(self, params: dict) -> str:
        self.params.append(params)
        prompt = params["messages"][-1]["content"]
        if isinstance(prompt, list):
            prompt = "".join(block["text"] for block in prompt)
        proposed = re.search(r"<<<BEGIN proposed_input (\w+)>>>\n(.*?)\n<<<END", prompt, re.S).group(2)
        return json.dumps({"rating": 3 + _digest(proposed) % 8, "reason": "fine"})


def _rating_of(text: str) -> int:
    return 3 + _digest(text) % 8


@pytest.fixture
def servers():
    generator, rater = Generator(), Rater()
    with (
        IndependentOpenAIServer(answer=generator, turnaround=0.1) as openai_server,
        IndependentAnthropicServer(answer=rater, turnaround=0.1) as anthropic_server,
    ):
        env = cli_env(
            OPENAI_API_KEY=TEST_KEY,
            OPENAI_BASE_URL=openai_server.base_url,
            ANTHROPIC_API_KEY=TEST_KEY,
            ANTHROPIC_BASE_URL=anthropic_server.base_url,
        )
        yield env, openai_server, anthropic_server, generator, rater


def _args(spec: Path, out: Path) -> list[str]:
    return [
        "--spec-path",
        str(spec),
        "--generator-model",
        GENERATOR,
        "--rater-model",
        RATER,
        "--per-statement",
        str(N),
        "--rating-threshold",
        str(THRESHOLD),
        "--output-dir",
        str(out),
        "--poll-interval",
        "0.05",
    ]


def _inputs(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return forked.run(
        [sys.executable, "-m", "speceval", "inputs", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


def _run_dir(out: Path) -> Path:
    [manifest] = out.glob("*/input_judge/*/*/run.json")
    return manifest.parent


def _jobs(openai_server: IndependentOpenAIServer, anthropic_server: IndependentAnthropicServer) -> int:
    return len(openai_server.batches) + len(anthropic_server.batches)


def test_kept_inputs_were_proposed_rated_and_are_free_of_duplicates(tmp_path, servers):
    env, openai_server, anthropic_server, generator, rater = servers
    spec = write_spec(tmp_path / "spec.jsonl")
    done = _inputs(_args(spec, tmp_path / "out"), env)
    assert done.returncode == 0, done.stderr
    run_dir = _run_dir(tmp_path / "out")
    # Structured output on both wires, as each provider documents it.
    assert all(
        b["response_format"]["type"] == "json_schema" and b["response_format"]["json_schema"]["strict"]
        for b in generator.bodies
    )
    assert all(p["output_config"]["format"]["type"] == "json_schema" for p in rater.params)
    proposed: dict[str, set[str]] = {}
    for body in list(generator.bodies):
        prompt = body["messages"][-1]["content"]
        statement = re.search(r"Statement id: (\S+)", prompt).group(1)
        for item in json.loads(generator(body))["inputs"]:
            proposed.setdefault(statement, set()).add(item["text"])
    rated: dict[str, set[str]] = {}
    for params in rater.params:
        prompt = params["messages"][-1]["content"]
        prompt = prompt if isinstance(prompt, str) else "".join(block["text"] for block in prompt)
        statement = re.search(r"Statement id: (\S+)", prompt).group(1)
        assert f"topic {STATEMENTS.index(statement)} with care" in prompt  # the request quotes its statement
        rated.setdefault(statement, set()).add(
            re.search(r"<<<BEGIN proposed_input (\w+)>>>\n(.*?)\n<<<END", prompt, re.S).group(2)
        )
    everything: list[str] = []
    reached = 0
    for statement in STATEMENTS:
        data = json.loads((run_dir / "inputs" / f"{statement}.json").read_text())
        kept = data["inputs"]
        assert len(kept) <= N
        reached += len(kept) == N
        for text in kept:
            assert text in proposed[statement] and text in rated[statement] and _rating_of(text) >= THRESHOLD
        metadata = data["metadata"]
        for key in (
            "generator_type",
            "timestamp",
            "evaluator_model",
            "rating_threshold",
            "num_questions_target",
            "uniform_distribution",
            "final_question_count",
            "final_rating_composition",
            "source_file",
            "generator_model",
            "rounds",
        ):
            assert key in metadata, key
        assert metadata["evaluator_model"] == RATER and metadata["generator_model"] == GENERATOR
        assert metadata["final_question_count"] == len(kept) and metadata["rating_threshold"] == THRESHOLD
        assert sum(metadata["final_rating_composition"].values()) == len(kept)
        assert metadata["final_rating_composition"] == {
            str(r): sum(_rating_of(t) == r for t in kept) for r in {_rating_of(t) for t in kept}
        }
        everything += kept
    assert reached >= 0.8 * len(STATEMENTS)
    for i, a in enumerate(everything):
        for b in everything[i + 1 :]:
            assert a != b and normalized(a) != normalized(b) and jaccard(words(a), words(b)) < 0.8, (a, b)
    assert not any(jaccard(words(t), words(EXAMPLE_QUERY)) >= 0.8 for t in everything)
    records = [json.loads(line) for line in (run_dir / "candidates.jsonl").read_text().splitlines()]
    fates = {r["fate"] for r in records}
    assert {"kept", "duplicate", "copies_spec_example", "below_threshold"} <= fates
    assert all(r["duplicate_of"] for r in records if r["fate"] in ("duplicate", "copies_spec_example"))
    # Duplicates were never paid for: no rating request quotes one.
    all_rated = set().union(*rated.values())
    assert not any(
        r["text"] in all_rated
        for r in records
        if r["fate"] == "duplicate" and r["text"] not in {x["text"] for x in records if x["fate"] != "duplicate"}
    )
    # The inputs feed generation unchanged, and a finished run resumed pays nothing.
    jobs = _jobs(openai_server, anthropic_server)
    again = _inputs(["--resume", str(run_dir)], env)
    assert again.returncode == 0, again.stderr
    assert _jobs(openai_server, anthropic_server) == jobs
    generated = run_generation(
        [
            "--spec-path",
            str(spec),
            "--pregenerated-inputs-dir",
            str(run_dir / "inputs"),
            "--model-name",
            "gpt-4.1-mini-2025-04-14",
            "--output-base-dir",
            str(tmp_path / "gen"),
            "--poll-interval",
            "0.05",
        ],
        env,
    )
    assert generated.returncode == 0, generated.stderr


@pytest.mark.slow
def test_a_run_killed_after_its_second_job_resumes_without_paying_twice(tmp_path, servers):
    env, openai_server, anthropic_server, _, _ = servers
    spec = write_spec(tmp_path / "spec.jsonl")
    whole = _inputs(_args(spec, tmp_path / "whole"), env)
    assert whole.returncode == 0, whole.stderr
    uninterrupted = _jobs(openai_server, anthropic_server)
    before = uninterrupted
    child = forked.Popen(
        [sys.executable, "-m", "speceval", "inputs", *_args(spec, tmp_path / "killed")],
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
        preexec_fn=interruptible,
    )
    deadline = time.monotonic() + 60
    while _jobs(openai_server, anthropic_server) < before + 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    assert _jobs(openai_server, anthropic_server) >= before + 2
    resumed = _inputs(["--resume", str(_run_dir(tmp_path / "killed")), "--poll-interval", "0.05"], env)
    assert resumed.returncode == 0, resumed.stderr
    jobs = _jobs(openai_server, anthropic_server) - before
    assert jobs <= 1.3 * uninterrupted + 1
    whole_inputs = {
        p.name: json.loads(p.read_text())["inputs"] for p in (_run_dir(tmp_path / "whole") / "inputs").iterdir()
    }
    killed_inputs = {
        p.name: json.loads(p.read_text())["inputs"] for p in (_run_dir(tmp_path / "killed") / "inputs").iterdir()
    }
    assert killed_inputs == whole_inputs  # the same answers give the same decisions


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--statements", "rule_0", "no_such_rule"], "'no_such_rule' not in the spec"),
        (["--rating-threshold", "11"], "between 1 and 10"),
        (["--rating-threshold", "0"], "between 1 and 10"),
        (["--per-statement", "0"], "at least 1"),
    ],
)
def test_bad_settings_exit_2_before_anything_is_written(tmp_path, flags, message):
    spec = write_spec(tmp_path / "spec.jsonl")
    done = _inputs([*_args(spec, tmp_path / "out"), "--offline", *flags], cli_env())
    assert done.returncode == 2 and message in done.stderr, done.stderr
    assert not (tmp_path / "out").exists()


def test_a_spec_without_statements_exits_2(tmp_path):
    spec = tmp_path / "empty.jsonl"
    spec.write_text("\n", encoding="utf-8")
    done = _inputs([*_args(spec, tmp_path / "out"), "--offline"], cli_env())
    assert done.returncode == 2 and not (tmp_path / "out").exists(), done.stderr
