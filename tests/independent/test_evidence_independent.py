"""Acceptance, against the independent OpenAI and Anthropic servers (not offline, not speceval's own emulator):
an experiment with a temperature variation reports Claude's never-sent temperature as 'not sent' in `summary.md`
and `report.html`, and with two judges that disagree every panel rate lies within its two judges' rates."""

from __future__ import annotations

import csv
import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pytest

from speceval.cli.main import main as speceval_main
from tests.conftest import TEST_KEY, write_inputs, write_spec
from tests.independent.anthropic_server import IndependentAnthropicServer, last_user_text
from tests.independent.openai_server import IndependentOpenAIServer

GPT = "gpt-4.1-mini-2025-04-14"
CLAUDE = "claude-haiku-4-5-20251001"
JUDGE_1 = "gpt-4.1-2025-04-14"
JUDGE_2 = "gpt-4.1-nano-2025-04-14"
JUDGE_PROMPT = "speceval judge prompt: compliance_binary_v2"
RESPONSE = re.compile(
    r"^<<<BEGIN assistant_response (\S+)>>>\n(.*?)\n<<<END assistant_response \1>>>$", re.MULTILINE | re.DOTALL
)


def _digest(text: str) -> int:
    return int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)


def _candidate_text(model: str, prompt: str, temperature: object) -> str:
    """A deterministic answer that differs per model, input and temperature (so the judges see varied texts)."""
    return f"{model} at temperature {temperature} answers #{_digest(f'{model}|{prompt}|{temperature}')}: {prompt}"


def _judge_compliant(judge: str, response: str) -> bool:
    """Judge 1 finds two thirds of answers compliant, judge 2 half of them: they disagree on a good share."""
    h = _digest(response)
    return h % 3 != 0 if judge == JUDGE_1 else h % 2 == 0


def _openai_answer(body: dict[str, Any]) -> str:
    prompt = body["messages"][-1]["content"]
    assert isinstance(prompt, str)
    if JUDGE_PROMPT not in prompt:
        return _candidate_text(body["model"], prompt, body.get("temperature"))
    match = RESPONSE.search(prompt)
    assert match is not None, prompt
    compliant = _judge_compliant(body["model"], match.group(2))
    verdict = {"compliant": compliant, "confidence": 0.9, "explanation": f"{body['model']} decided {compliant}"}
    return "Brief reasoning.\n" + json.dumps(verdict)


def _anthropic_answer(params: dict[str, Any]) -> str:
    return _candidate_text(params["model"], last_user_text(params), params.get("temperature"))


def _experiment(tmp_path: Path) -> Path:
    spec = write_spec(tmp_path / "spec.jsonl", ["alpha", "beta"])  # no examples: no canaries to judge
    inputs = write_inputs(
        tmp_path / "inputs",
        {"alpha": [f"alpha question {i}" for i in range(4)], "beta": [f"beta question {i}" for i in range(4)]},
    )
    experiment = tmp_path / "exp.yaml"
    experiment.write_text(f"""experiment_name: evidence
output_dir: out
specs:
  - name: tiny
    spec_path: {spec}
    inputs_dir: {inputs}
candidates:
  - model: {GPT}
  - model: {CLAUDE}
judges:
  - model: {JUDGE_1}
  - model: {JUDGE_2}
variations:
  temperature: [0.0, 0.7]
runs_per_variation: 1
stages: [generation, compliance, report]
engine:
  poll_interval: 0.1
""")
    return experiment


def _batch_lines(server: IndependentOpenAIServer) -> list[dict[str, Any]]:
    """Every request line of every batch input file uploaded to the OpenAI server."""
    return [
        json.loads(raw)
        for f in list(server.files.values())
        if f.purpose == "batch"
        for raw in f.data.splitlines()
        if raw.strip()
    ]


def _csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def test_not_sent_temperature_and_panel_within_its_judges_against_independent_servers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    experiment = _experiment(tmp_path)
    with (
        IndependentOpenAIServer(answer=_openai_answer) as openai_server,
        IndependentAnthropicServer(answer=_anthropic_answer) as anthropic_server,
    ):
        monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
        monkeypatch.setenv("OPENAI_BASE_URL", openai_server.base_url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", TEST_KEY)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", anthropic_server.base_url)
        code = speceval_main(["run", str(experiment)])
        openai_lines = _batch_lines(openai_server)
        claude_params = [params for _, _, params in anthropic_server.requests]
    captured = capsys.readouterr()
    assert code == 0, captured.err
    # One warning per cause: Claude's two temperatures are two causes, however many clients were built for them.
    err = " ".join(captured.err.split())  # (the console wraps long lines at its width)
    refused = err.split("is not sent: the Anthropic API version")[:-1]
    assert len(refused) == 2 and {part.rsplit("temperature", 1)[1].strip() for part in refused} == {"0", "0.7"}

    # 1. What was on the wire: Claude never got a temperature; GPT got 0.7 in the 0.7 variation.
    assert len(claude_params) == 16 and all(p["model"] == CLAUDE for p in claude_params)
    assert not any("temperature" in p for p in claude_params)
    generation = [line["body"] for line in openai_lines if line["body"]["model"] == GPT]
    judging = [line["body"] for line in openai_lines if line["body"]["model"] in (JUDGE_1, JUDGE_2)]
    assert len(generation) == 16 and len(judging) == 2 * 2 * 16  # 2 judges x (2 candidates x 2 variations x 8)
    assert sorted(b.get("temperature") for b in generation) == [0.0] * 8 + [0.7] * 8

    out = tmp_path / "out"
    folder = json.loads((out / "experiment.json").read_text(encoding="utf-8"))["folders"]  # variation → its folder
    for variation, on_wire in (
        ("temperature_0.0", {GPT: 0.0, CLAUDE: None}),
        ("temperature_0.7", {GPT: 0.7, CLAUDE: None}),
    ):
        for model, temperature in on_wire.items():  # each answer names the temperature its request carried
            run_dir = out / "generations" / "tiny" / folder[variation] / "run1" / model
            texts = [
                record["output_text"]
                for path in (run_dir / "results").glob("*.json")
                for record in json.loads(path.read_text(encoding="utf-8"))
            ]
            assert len(texts) == 8 and all(t.startswith(f"{model} at temperature {temperature} ") for t in texts)
    report = out / "report"
    summary = (report / "summary.md").read_text(encoding="utf-8")
    page = (report / "report.html").read_text(encoding="utf-8")

    # 2. The reports say Claude's temperature was not sent (a row per variation), and are not marked synthetic.
    assert "SYNTHETIC" not in summary and "SYNTHETIC" not in page
    sent_rows = [line for line in summary.splitlines() if CLAUDE in line and "not sent" in line]
    assert len(sent_rows) == 2 and all("generation" in row for row in sent_rows), sent_rows
    assert {
        variation for variation in ("temperature_0.0", "temperature_0.7") if any(variation in row for row in sent_rows)
    } == {"temperature_0.0", "temperature_0.7"}
    assert not [line for line in summary.splitlines() if GPT in line and "not sent" in line]
    page_rows = [row for row in re.findall(r"<tr>.*?</tr>", page, re.DOTALL) if CLAUDE in row and "not sent" in row]
    assert len(page_rows) == 2 and all("generation" in row for row in page_rows), page_rows

    # 3. Every panel rate lies within its two judges' rates on the same answers, and the judges disagreed.
    statistics = _csv(report / "variation_statistics.csv")
    rates: dict[tuple[str, str, str], dict[str, float]] = {}
    for row in statistics:
        rates.setdefault((row["spec"], row["candidate"], row["variation"]), {})[row["judge"]] = float(row["rate"])
    assert set(rates) == {("tiny", c, v) for c in (GPT, CLAUDE) for v in ("temperature_0.0", "temperature_0.7")}
    for cell, by_judge in rates.items():
        assert set(by_judge) == {JUDGE_1, JUDGE_2, "panel"}, cell
        low, high = sorted((by_judge[JUDGE_1], by_judge[JUDGE_2]))
        assert low - 1e-9 <= by_judge["panel"] <= high + 1e-9, (cell, by_judge)
    assert any(abs(r[JUDGE_1] - r[JUDGE_2]) > 1e-9 for r in rates.values()), rates

    # The judges' rates are their verdicts on exactly the answers speceval saved (all 8 judged by both).
    for (_, candidate, variation), by_judge in rates.items():
        run_dir = out / "generations" / "tiny" / folder[variation] / "run1" / candidate
        answers = [
            record["output_text"]
            for path in sorted((run_dir / "results").glob("*.json"))
            for record in json.loads(path.read_text(encoding="utf-8"))
        ]
        assert len(answers) == 8 and all(answers)
        for judge in (JUDGE_1, JUDGE_2):
            expected = sum(_judge_compliant(judge, a) for a in answers) / len(answers)
            assert by_judge[judge] == pytest.approx(expected), (candidate, variation, judge)

    panel = _csv(report / "panel.csv")
    assert {(p["spec"], p["candidate"], p["variation"]) for p in panel} == set(rates)
    assert sum(int(p["split"]) for p in panel) > 0
    for p in panel:
        assert int(p["answers"]) == 8 and int(p["incomplete"]) == 0
        assert int(p["unanimous"]) + int(p["split"]) == 8
        assert float(p["panel_rate"]) == pytest.approx(rates[(p["spec"], p["candidate"], p["variation"])]["panel"])
