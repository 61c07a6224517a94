"""The original SpecEval's shipped judge configs run unedited, from a tree laid out as they expect.

Candidates are named as their `…/results` paths say (runs of ours by their run.json), answers in every original
format load, and the failures the original wrote as text are counted by outcome and never judged.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from speceval.cli.judge import compliance_main, ranking_main
from tests.conftest import TEST_KEY
from tests.independent.openai_server import IndependentOpenAIServer
from tests.pipelines.original_tree import CONFIGS, INPUTS, STATEMENTS, build_tree, candidate_format, expected_skips


def model_of(path: str) -> str:
    return Path(path).parent.parent.name


def summaries(output: Path) -> dict[str, dict[str, Any]]:
    found = [json.loads(p.read_text()) for p in output.glob("*/summary.json")]
    return {summary["model"]: summary for summary in found}


def judge_dir(data: dict[str, Any], kind: str) -> Path:
    return Path(data["output_dir_base"]) / f"spec_{data['spec_name']}" / f"judge_{data[f'{kind}_judge_model_name']}"


@pytest.mark.parametrize(
    "name", ["binary_configs/openai_spec_anthropic_judge.yaml", "binary_configs_google/openai_spec_google_judge.yaml"]
)
def test_shipped_compliance_config_runs_unedited_offline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    monkeypatch.chdir(tmp_path)
    data = build_tree(tmp_path, CONFIGS / name)
    assert compliance_main(["--config-file", str(CONFIGS / name), "--offline"]) == 0
    found = summaries(judge_dir(data, "compliance"))
    directories = data["candidate_generation_dirs"]
    assert sorted(found) == sorted(model_of(d) for d in directories)
    for directory in directories:
        summary = found[model_of(directory)]
        skipped = expected_skips(candidate_format(directory))
        assert summary["skipped_answers"] == skipped, directory
        # Every answer not skipped reached the judge; the emulator's synthetic judge leaves a few of them without a
        # verdict on purpose (`unparsed`, drawn from the judge's name and the answer), never a skipped one.
        outcomes = summary["outcomes"]
        assert outcomes["judged"] + outcomes.get("unparsed", 0) == len(STATEMENTS) * INPUTS - sum(skipped.values())
    # A failure text is never shown to the judge as an answer.
    outputs = [
        r["output"]
        for f in judge_dir(data, "compliance").glob("*/results/*.json")
        for r in json.loads(f.read_text())["results"]
    ]
    assert outputs and not any(o.startswith(("ERROR", "EXPIRED", "Response blocked", "Error during")) for o in outputs)


def test_shipped_ranking_config_runs_unedited_offline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    name = "configs/sample_anthropic_ranking_config.yaml"
    monkeypatch.chdir(tmp_path)
    data = build_tree(tmp_path, CONFIGS / name)
    assert [candidate_format(d) for d in data["candidate_generation_dirs"]] == ["batched", "ours"]
    assert ranking_main(["--config-file", str(CONFIGS / name), "--offline"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "not compared (their generation did not succeed): claude-3-7-sonnet-20250219: 1 expired, 1 missing" in out
    pair = judge_dir(data, "ranking") / "claude-3-7-sonnet-20250219xgpt-4.1-2025-04-14"
    content = json.loads((pair / "results" / "be_honest.json").read_text())
    assert (content["metadata"]["model_a"], content["metadata"]["model_b"]) == (
        "claude-3-7-sonnet-20250219",
        "gpt-4.1-2025-04-14",
    )
    # The legacy candidate's failed input (index 1) is not compared; the other one is, with each side's own text.
    assert [r["output_a"] for r in content["rankings"]] == ["claude-3-7-sonnet-20250219 answers input 0 of be_honest"]
    assert all(r["output_b"].startswith("gpt-4.1-2025-04-14 answers") for r in content["rankings"])


def verdict(body: dict[str, Any]) -> str:
    return json.dumps({"compliant": True, "confidence": 0.9, "explanation": "independent judge"})


@contextmanager
def independent_judge(monkeypatch: pytest.MonkeyPatch, *, key: bool = True) -> Iterator[IndependentOpenAIServer]:
    """The independent OpenAI-wire server as the judge's provider (with OPENAI_API_KEY set unless `key` is False)."""
    with IndependentOpenAIServer(answer=verdict) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("SPECEVAL_POLL_INTERVAL", "0.05")
        if key:
            monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
        yield server


def test_shipped_openai_judge_config_against_an_independent_batch_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    name = "binary_configs/openai_spec_openai_judge.yaml"
    monkeypatch.chdir(tmp_path)
    data = build_tree(tmp_path, CONFIGS / name)
    with independent_judge(monkeypatch) as server:
        assert compliance_main(["--config-file", str(CONFIGS / name)]) == 0, capsys.readouterr().err
        created = server.batches
    assert len(created) == 16 + 1  # one job per candidate (batch_size 50000) + the canaries', none sent twice
    assert all(b["status"] == "completed" and b["endpoint"] == "/v1/chat/completions" for b in created)
    found = summaries(judge_dir(data, "compliance"))
    for directory in data["candidate_generation_dirs"]:
        summary = found[model_of(directory)]
        answered = len(STATEMENTS) * INPUTS - sum(expected_skips(candidate_format(directory)).values())
        assert (summary["outcomes"]["judged"], summary["compliant"]) == (answered, answered), directory


SMALL = CONFIGS / "binary_configs" / "openai_compliance_anthropic_spec.yaml"  # two original folders, GPT-4.1 judge


def request_files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.glob("data/batched_compliance/**/*.jsonl"))}


def test_dry_run_submits_nothing_and_the_real_run_sends_exactly_its_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    build_tree(tmp_path, SMALL)
    with independent_judge(monkeypatch) as server:
        assert compliance_main(["--config-file", str(SMALL), "--dry-run"]) == 0
        out = capsys.readouterr().out
        assert server.batch_create_attempts == 0 and server.files == {}
        planned = request_files(tmp_path)
        # A job per candidate and one for the spec's example responses (the canaries).
        assert len(planned) == 3 and "dry run: 3 job(s), nothing submitted" in out and "$" in out
        assert compliance_main(["--config-file", str(SMALL)]) == 0
        assert len(server.batches) == 3
        uploaded = [f.data for f in server.files.values() if f.purpose == "batch"]
        assert sorted(uploaded) == sorted(planned.values())


def test_budget_stops_before_the_first_job_and_a_higher_budget_resumes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    build_tree(tmp_path, SMALL)
    with independent_judge(monkeypatch) as server:
        assert compliance_main(["--config-file", str(SMALL), "--budget-usd", "0.000001"]) == 3
        assert server.batch_create_attempts == 0
        assert "--budget-usd <a higher limit>" in capsys.readouterr().err.replace("\n", "")
        assert compliance_main(["--config-file", str(SMALL), "--budget-usd", "5"]) == 0
        assert len(server.batches) == 2 + 1  # two candidates and the canaries


def test_api_key_written_in_the_yaml_is_used_and_written_nowhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    build_tree(tmp_path, SMALL)
    config = tmp_path / "with_key.yaml"
    original = SMALL.read_text()
    config.write_text(original.replace("# openai_api_key: YOUR_OPENAI_API_KEY_HERE", f"openai_api_key: {TEST_KEY}"))
    line = original.splitlines().index("# openai_api_key: YOUR_OPENAI_API_KEY_HERE") + 1
    with independent_judge(monkeypatch, key=False) as server:
        assert compliance_main(["--config-file", str(SMALL)]) == 2  # no key anywhere: refused
        assert "OPENAI_API_KEY" in capsys.readouterr().err
        assert compliance_main(["--config-file", str(config), "--verbose"]) == 0
        assert len(server.batches) == 2 + 1  # two candidates and the canaries
    out, err = capsys.readouterr()
    assert "holds an API key (openai_api_key)" in " ".join(err.split())
    log = (tmp_path / "data/batched_compliance/spec_anthropic/judge_gpt-4.1-2025-04-14/logs/compliance.log").read_text()
    assert f"{config}, line {line} holds an API key (openai_api_key)" in log
    assert TEST_KEY not in out + err
    leaks = [p for p in tmp_path.rglob("*") if p.is_file() and p != config and TEST_KEY.encode() in p.read_bytes()]
    assert leaks == []


def test_google_sample_ranking_config_judges_on_vertex_ai(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`ranking_judge_org: google` with buckets is Vertex AI batch prediction (emulated, with a Cloud Storage fake).

    Nothing in it is edited: its buckets (`gs://levanter-data/model_spec/`, a bucket and a folder) are used as
    written, against the emulator's Cloud Storage stand-in.
    """
    import responses
    from google.oauth2.credentials import Credentials

    from speceval.cli.judge import build_parser
    from speceval.cli.judge_command import resolve_settings
    from speceval.emulator import Emulator, FaultConfig
    from speceval.pipelines.ranking import BatchedRankingPipeline
    from tests.providers.test_vertex_batch import FakeGcs

    monkeypatch.chdir(tmp_path)
    sample = CONFIGS / "configs" / "sample_google_ranking_config.yaml"
    data = build_tree(tmp_path, sample)
    config = tmp_path / "sample_google_ranking_config.yaml"
    config.write_text(sample.read_text())
    args = build_parser("ranking").parse_args(
        ["--config-file", str(config), "--project", "p", "--location", "us-central1", "--poll-interval", "0.05"]
    )
    settings, candidates, _ = resolve_settings(args, "ranking")
    pipeline = BatchedRankingPipeline(settings, candidates)
    assert pipeline.provider == "vertex"
    with (
        Emulator(faults=FaultConfig(turnaround_seconds=0.1)) as emu,
        responses.RequestsMock(assert_all_requests_are_fired=False) as mock,
    ):
        FakeGcs(emu.vertex_objects).register(mock)
        with pipeline.connect(None, base_url=emu.vertex_base_url, credentials=Credentials(token="t")) as model:
            summaries, pairs, _ = pipeline.run(model)
        assert emu.stats.batches_created["vertex"] == 2  # one job per ordered pair
        inputs = emu.vertex_objects.list("levanter-data", "model_spec/speceval/")
        outputs = emu.vertex_objects.list("levanter-data", "model_spec/ranking_outputs/speceval/")
        assert len([name for name in inputs if name.endswith(".jsonl")]) == 2 and outputs
    assert all(s.finished for s in summaries)
    assert sorted((p.model_a, p.model_b) for p in pairs) == [
        ("claude-3-5-sonnet-20240620", "gpt-4.1-2025-04-14"),
        ("gpt-4.1-2025-04-14", "claude-3-5-sonnet-20240620"),
    ]
    assert all(p.outcomes["judged"] == 2 for p in pairs)  # the legacy folder's failed input is not compared
    manifests = [json.loads(p.read_text()) for p in judge_dir(data, "ranking").glob("*/run.json")]
    assert [m["parameters"]["vertex"] for m in manifests] == [
        {
            "project": "p",
            "location": "us-central1",
            "input_bucket": "gs://levanter-data/model_spec/",
            "output_bucket": "gs://levanter-data/model_spec/ranking_outputs",
        }
    ] * 2
    assert all(m["provider"] == "vertex" for m in manifests)
