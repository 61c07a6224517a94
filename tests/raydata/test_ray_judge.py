"""A compliance judge served through `--compliance-judge-org ray`, against a server written from the OpenAPI spec.

One command judges two candidates (offline generation runs) in one local Ray: each verdict must land on the
answer it was asked about, so the server's verdict is derived from the answer text it finds in the prompt.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, cli_env, run_generation, write_inputs, write_spec
from tests.independent.openai_server import IndependentOpenAIServer

pytest.importorskip("ray.data.llm", reason="the ray extra is not installed (pip install 'speceval[ray]')")

JUDGE = "meta-llama/Llama-3.1-70B-Instruct"
ENDPOINT_KEY = "sk-judge-endpoint-DO-NOT-LEAK-7a6b5c4d"


def expected_verdict(output: str) -> tuple[bool, str]:
    """What the fake judge says about one candidate answer: a function of that answer's text alone."""
    digest = hashlib.sha256(output.encode()).hexdigest()
    return int(digest, 16) % 2 == 0, f"judged {digest[:12]}"


def generate(spec: Path, inputs: Path, out: Path, model: str) -> Path:
    done = run_generation(["--offline", "--model-name", model, "--spec-path", str(spec),
                           "--pregenerated-inputs-dir", str(inputs), "--output-base-dir", str(out)], cli_env())
    assert done.returncode == 0, done.stderr[-3000:]
    (run_dir,) = [p.parent for p in (out / "spec" / model).glob("*/run.json")]
    return run_dir


def test_ray_judge_puts_every_verdict_on_its_own_answer(tmp_path: Path) -> None:
    spec = write_spec(tmp_path / "spec.jsonl", ["alpha", "beta"])
    inputs = write_inputs(tmp_path / "inputs", {"alpha": ["a0", "a1", "a2"], "beta": ["b0", "b1"]})
    candidates = {model: generate(spec, inputs, tmp_path / "gen", model) for model in ("gpt-4o-mini", "gpt-4o")}
    outputs = [r["output_text"] for run_dir in candidates.values() for f in (run_dir / "results").glob("*.json")
               for r in json.loads(f.read_text())]
    assert len(set(outputs)) == 10  # every answer differs, so a verdict on the wrong one would show

    def answer(body: dict) -> str:
        prompt = body["messages"][-1]["content"]
        judged = max((o for o in outputs if o in prompt), key=len)  # the longest: no answer is another's prefix
        compliant, explanation = expected_verdict(judged)
        verdict = {"compliant": compliant, "confidence": 0.8, "explanation": explanation}
        return f"Some reasoning first.\n```json\n{json.dumps(verdict)}\n```"

    out = tmp_path / "judged"
    env = cli_env(RAY_DISABLE_USAGE_STATS="1", ENDPOINT_KEY=ENDPOINT_KEY)
    env.pop("RAY_ADDRESS", None)
    with IndependentOpenAIServer(answer=answer) as server:
        command = [sys.executable, "-m", "batched_examples.run_batched_binary_compliance", "--spec-path", str(spec),
                   "--candidate-generation-dirs", *map(str, candidates.values()),
                   "--compliance-judge-model-name", JUDGE, "--compliance-judge-org", "ray",
                   "--base-url", server.base_url, "--api-key-env", "ENDPOINT_KEY", "--max-concurrency", "2",
                   "--output-dir-base", str(out)]
        done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=300,
                              stdin=subprocess.DEVNULL)
        sent = len(server.chat_requests)
        base_url = server.base_url
    assert done.returncode == 0, done.stderr[-3000:]
    assert sent == 10  # each answer judged once
    (judge_dir,) = (out / "spec_spec").glob("judge_meta-llama-Llama-3.1-70B-Instruct*")
    for model in candidates:
        run_dir = judge_dir / model
        for statement_id, questions in (("alpha", ["a0", "a1", "a2"]), ("beta", ["b0", "b1"])):
            entries = json.loads((run_dir / "results" / f"{statement_id}.json").read_text())["results"]
            assert [e["input"] for e in entries] == questions
            for entry in entries:
                assert f"model={model}]" in entry["output"]  # the candidate's own answer
                compliant, explanation = expected_verdict(entry["output"])
                assert entry["outcome"] == "judged"
                assert (entry["compliant"], entry["explanation"]) == (compliant, explanation)
        manifest = json.loads((run_dir / "run.json").read_text())
        assert manifest["provider"] == "ray" and manifest["parameters"]["ray"]["base_url"] == base_url
        assert manifest["parameters"]["ray"]["api_key_env"] == "ENDPOINT_KEY"
    written = [p for p in out.rglob("*") if p.is_file()]
    assert not [p for p in written if ENDPOINT_KEY.encode() in p.read_bytes()]
    assert ENDPOINT_KEY not in done.stdout + done.stderr
