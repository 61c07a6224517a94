"""Acceptance of the judge card (issue 44), against the independent OpenAI and Anthropic servers: an experiment with
`judge_card: {retest: 0.3, paraphrases: 3, min_canary_accuracy: 1.01}` writes judge_card.csv (one row per judge,
every rate with its interval and method), re-sends a share of each judge's requests byte for byte, sends the
statements reworded by the paraphraser, and keeps both judges (which cannot reach 1.01) out of the headline,
saying why in summary.md and on the page.

The servers know nothing of speceval: a judge's verdict is a planted function of the whole prompt it gets (so the
same prompt gets the same verdict, and a reworded statement may get another), the spec's examples are judged right
except one bad example by judge 2, and the paraphraser's answer is a recognisable rewording.
"""

from __future__ import annotations

import csv
import hashlib
import json
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from speceval.cli.main import main as speceval_main
from tests.conftest import TEST_KEY, write_inputs
from tests.independent.anthropic_server import IndependentAnthropicServer, last_user_text
from tests.independent.openai_server import IndependentOpenAIServer
from tests.independent.test_health_independent import CLAUDE, JUDGE_1, JUDGE_2, RESPONSE, STATEMENT_ID
from tests.independent.test_health_independent import GPT_A as GPT

JUDGE_PROMPT = "speceval judge prompt: compliance_binary"
STATEMENTS = ("alpha", "beta", "gamma", "delta")
INPUTS = 5
REWORDED = "In other words"

pytestmark = pytest.mark.slow


def _digest(text: str) -> int:
    return int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)


class Planted:
    """The OpenAI server's answers, and every judge prompt it was sent (in order)."""

    def __init__(self) -> None:
        self.judge_prompts: list[tuple[str, str]] = []
        self.paraphrase_prompts: list[str] = []
        self._lock = threading.Lock()

    def answer(self, body: dict[str, Any]) -> str:
        prompt = body["messages"][-1]["content"]
        assert isinstance(prompt, str)
        if prompt.startswith("Reword the following rule"):
            with self._lock:
                self.paraphrase_prompts.append(prompt)
            return f"{REWORDED} (#{_digest(prompt) % 1000}): {prompt.rsplit(chr(10), 1)[-1]}"
        if JUDGE_PROMPT not in prompt:
            return f"{body['model']} answers #{_digest(body['model'] + prompt)}: {prompt}"
        with self._lock:
            self.judge_prompts.append((body["model"], prompt))
        response, statement = RESPONSE.search(prompt), STATEMENT_ID.search(prompt)
        assert response is not None and statement is not None, prompt
        text = response.group(2)
        if text.startswith(("GOOD EXAMPLE", "BAD EXAMPLE")):
            compliant = text.startswith("GOOD EXAMPLE") or (body["model"] == JUDGE_2 and statement.group(1) == "alpha")
        else:
            compliant = _digest(body["model"] + prompt) % 3 != 0
        return "Brief reasoning.\n" + json.dumps({"compliant": compliant, "confidence": 0.9, "explanation": "planted"})


def _is_canary(prompt: str) -> bool:
    """A prompt judging one of the spec's own example responses (the canaries)."""
    found = RESPONSE.search(prompt)
    return found is not None and found.group(2).startswith(("GOOD EXAMPLE", "BAD EXAMPLE"))


def _anthropic_answer(params: dict[str, Any]) -> str:
    prompt = last_user_text(params)
    return f"{params['model']} answers #{_digest(params['model'] + prompt)}: {prompt}"


def _experiment(tmp_path: Path, card: str, judges: str = f"  - model: {JUDGE_1}\n  - model: {JUDGE_2}") -> Path:
    spec = tmp_path / "spec.jsonl"
    examples = [{"user_query": "a question", "good_response": "GOOD EXAMPLE answer", "bad_response": "BAD EXAMPLE"}]
    spec.write_text(
        "".join(
            json.dumps({"id": s, "text": f"The assistant follows rule {s}.", "metadata": {"examples": examples}}) + "\n"
            for s in STATEMENTS
        ),
        encoding="utf-8",
    )
    inputs = write_inputs(tmp_path / "inputs", {s: [f"{s} question {i}" for i in range(INPUTS)] for s in STATEMENTS})
    experiment = tmp_path / "exp.yaml"
    experiment.write_text(
        f"""experiment_name: card
output_dir: out
specs:
  - name: tiny
    spec_path: {spec}
    inputs_dir: {inputs}
candidates:
  - model: {GPT}
  - model: {CLAUDE}
judges:
{judges}
{card}
stages: [generation, compliance, report]
engine:
  poll_interval: 0.1
""",
        encoding="utf-8",
    )
    return experiment


def _run(experiment: Path, planted: Planted, monkeypatch: pytest.MonkeyPatch) -> int:
    with (
        IndependentOpenAIServer(answer=planted.answer) as openai_server,
        IndependentAnthropicServer(answer=_anthropic_answer) as anthropic_server,
    ):
        monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
        monkeypatch.setenv("OPENAI_BASE_URL", openai_server.base_url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", TEST_KEY)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", anthropic_server.base_url)
        return speceval_main(["run", str(experiment)])


def _csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def _verdicts(results: Path) -> dict[tuple[str, int], bool]:
    """(statement, original_index) → verdict of one judge folder's results files."""
    found = {}
    for path in results.glob("*.json"):
        document = json.loads(path.read_text(encoding="utf-8"))
        for record in document["results"]:
            if record["outcome"] == "judged":
                found[(document["metadata"]["statement_id"], record["original_index"])] = record["compliant"]
    return found


def test_the_judge_card_resends_rewords_and_keeps_failing_judges_out_of_the_headline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    experiment = _experiment(tmp_path, "judge_card: {retest: 0.3, paraphrases: 3, min_canary_accuracy: 1.01}")
    # The dry run prices the card: each check's requests, which the run then sends exactly.
    assert speceval_main(["run", str(experiment), "--dry-run", "--json"]) == 0
    plan = {stage["stage"].split(" (")[0]: stage for stage in json.loads(capsys.readouterr().out)["stages"]}
    planted = Planted()
    code = _run(experiment, planted, monkeypatch)
    assert code == 0, capsys.readouterr().err
    out = tmp_path / "out"
    assert plan["judge card: paraphrases"]["requests"] == len(planted.paraphrase_prompts)
    assert plan["judge card: retest"]["requests"] == 2 * 2 * round(0.3 * len(STATEMENTS) * INPUTS)
    assert plan["judge card: rewordings"]["requests"] == sum(REWORDED in p for _, p in planted.judge_prompts)
    assert all(plan[name]["expected_usd"] > 0 for name in plan if name.startswith("judge card"))

    # 1. The statements were reworded 3 ways each by the paraphraser (the first judge's model), kept in the folder.
    assert len(planted.paraphrase_prompts) == 3 * len(STATEMENTS)
    paraphrases = json.loads((out / "_judge_card" / "tiny" / "paraphrases.json").read_text(encoding="utf-8"))
    assert set(paraphrases["wordings"]) == set(STATEMENTS)
    assert all(len(t) == 3 and all(REWORDED in w for w in t) for t in paraphrases["wordings"].values())
    assert JUDGE_1 in paraphrases["source"]

    # 2. A share of each judge's requests was re-sent unchanged: 30% of 20 answers per candidate, both judges.
    drawn = round(0.3 * len(STATEMENTS) * INPUTS)
    counts = Counter(planted.judge_prompts)
    resent = [key for key, n in counts.items() if n == 2 and not _is_canary(key[1])]
    assert len(resent) == 2 * 2 * drawn  # judges x candidates x drawn answers, each sent twice byte for byte
    assert all(n <= 2 for n in counts.values())
    # ...and judged under every rewording: the reworded statement texts reached the judges.
    worded = [p for _, p in planted.judge_prompts if REWORDED in p]
    assert len(worded) == 2 * 2 * drawn * 3

    # 3. judge_card.csv: one row per judge, each rate with its interval and method, recomputed from the files.
    rows = {row["judge"]: row for row in _csv(out / "report" / "judge_card.csv")}
    assert set(rows) == {JUDGE_1, JUDGE_2}
    for judge, row in rows.items():
        for measure, prefix in (
            ("canary_accuracy", "canary"),
            ("retest_agreement", "retest"),
            ("wording_flip_rate", "wording_flip"),
            ("wording_flip_excess", "wording_excess"),
            ("self_preference", "self_preference"),
        ):
            value, low, high = float(row[measure]), float(row[f"{prefix}_ci_low"]), float(row[f"{prefix}_ci_high"])
            assert low <= value <= high and row[f"{prefix}_ci_method"], (judge, measure)
        first, flips, items = {}, 0, 0
        for candidate in (GPT, CLAUDE):
            base = out / "_judge_card" / "tiny" / "default" / "run1" / judge / candidate
            original = _verdicts(
                out
                / "compliance"
                / "tiny"
                / "default"
                / "run1"
                / "spec_tiny"
                / f"judge_{judge}"
                / candidate
                / "results"
            )
            retest = _verdicts(base / "retest" / "spec_tiny" / f"judge_{judge}" / candidate / "results")
            assert len(retest) == drawn and all(original[key] == verdict for key, verdict in retest.items())
            first.update({(candidate, *key): original[key] for key in retest})
            for k in (1, 2, 3):
                again = _verdicts(base / f"wording_{k}" / "spec_tiny" / f"judge_{judge}" / candidate / "results")
                assert set(again) == set(retest)
                flips += sum(again[key] != original[key] for key in again)
                items += len(again)
        assert float(row["retest_agreement"]) == 1.0 and int(row["retest_items"]) == len(first)
        assert float(row["wording_flip_rate"]) == pytest.approx(flips / items)
        assert float(row["wording_flip_excess"]) == pytest.approx(flips / items)  # the retest flipped nothing
        assert "temperature 0" in row["retest_note"]
        # Canaries: 4 statements x (good, bad); judge 2 calls alpha's bad example compliant.
        assert float(row["canary_accuracy"]) == (1.0 if judge == JUDGE_1 else 7 / 8)
        assert row["passes"] == "False" and row["failed_checks"].startswith('["canary_accuracy')
    assert flips > 0

    # 4. Both judges kept out of the headline, and why, in summary.md, compliance.csv and the page.
    summary = (out / "report" / "summary.md").read_text(encoding="utf-8")
    headline = summary.split("## Headline: compliance by candidate", 1)[1].split("**Kept out of the headline**")[0]
    assert JUDGE_1 not in headline and JUDGE_2 not in headline
    assert "No judge entry passed its judge card" in headline and "| spec |" not in headline  # no empty table
    kept = summary.split("**Kept out of the headline**", 1)[1].split("##", 1)[0]
    for judge in (JUDGE_1, JUDGE_2):
        assert f"- {judge} on spec tiny: failed canary_accuracy" in kept and "min_canary_accuracy 1.01" in kept
    assert "## Judge card" in summary and "wording 3" in summary
    assert {row["judge_passes"] for row in _csv(out / "report" / "compliance.csv")} == {"False"}
    page = (out / "report" / "report.html").read_text(encoding="utf-8")
    assert 'id="judge-card"' in page and "Kept out of the headline" in page
    printed = " ".join(capsys.readouterr().out.split())  # the console wraps long lines
    assert f"Judge card: judge {JUDGE_2} on spec tiny is kept out of the headline: failed canary_accuracy" in printed

    # 5. `speceval report` on the folder gates as the experiment's own report did (the lines it was run with).
    capsys.readouterr()
    assert speceval_main(["report", str(out), "--out", str(tmp_path / "again")]) == 0
    assert kept in (tmp_path / "again" / "summary.md").read_text(encoding="utf-8")
    # Its console names the study's line (it printed the flag's "None" when the line came from the study).
    printed = " ".join(capsys.readouterr().out.split())
    assert f"Judge {JUDGE_2} (spec tiny) got 0.875 of the spec's example responses right, below the minimum" in printed
    assert "canary accuracy 1.01" in printed and "None" not in printed

    # 6. Run again: the card resumes as every judge run does, and nothing is sent twice.
    again = Planted()
    assert _run(experiment, again, monkeypatch) == 0
    assert not again.judge_prompts and not again.paraphrase_prompts
    assert {row["judge"]: row["wording_flip_rate"] for row in _csv(out / "report" / "judge_card.csv")} == {
        judge: row["wording_flip_rate"] for judge, row in rows.items()
    }


def test_without_a_judge_card_nothing_is_resent_and_the_headline_stays(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    planted = Planted()
    assert _run(_experiment(tmp_path, ""), planted, monkeypatch) == 0, capsys.readouterr().err
    out = tmp_path / "out"
    assert not (out / "_judge_card").exists() and not planted.paraphrase_prompts
    assert max(Counter(planted.judge_prompts).values()) == 1  # every judge request sent once
    rows = {row["judge"]: row for row in _csv(out / "report" / "judge_card.csv")}
    assert set(rows) == {JUDGE_1, JUDGE_2} and {r["passes"] for r in rows.values()} == {""}  # not checked
    summary = (out / "report" / "summary.md").read_text(encoding="utf-8")
    assert "Kept out of the headline" not in summary and f"| tiny | {JUDGE_1} | {GPT} |" in summary


def test_one_model_at_two_scopes_shares_its_canaries_and_spec_health_reads_the_card(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 42: the whole-conversation entry's canary verdicts are the turn entry's too (said), spec health's canary
    column is filled for both, judge_unreliable fires at the line, and `speceval run` prints the flag at its end."""
    # The turn entry first: the examples are judged under its name, and the conversation entry behind the headline
    # read "not checked" (the defect).
    judges = f"  - model: {JUDGE_2}\n    scope: turn\n  - model: {JUDGE_2}\n    scope: conversation"
    experiment = _experiment(tmp_path, "min_canary_accuracy: 0.9", judges)
    assert _run(experiment, Planted(), monkeypatch) == 0, capsys.readouterr().err
    report = tmp_path / "out" / "report"
    conversation, turn = f"{JUDGE_2}_conversation_binary", f"{JUDGE_2}_turn_binary"
    rows = {row["judge"]: row for row in _csv(report / "judge_card.csv")}
    assert set(rows) == {conversation, turn}
    for row in rows.values():  # 4 statements x (good, bad); alpha's bad example judged compliant
        assert int(row["canary_judged"]) == 8 and float(row["canary_accuracy"]) == 7 / 8
        assert row["passes"] == "False" and "min_canary_accuracy 0.9" in row["failed_checks"]
    assert (rows[conversation]["canary_shared_from"], rows[turn]["canary_shared_from"]) == (turn, "")
    # Spec health reads the per-answer entry's canaries (turn verdicts are per-turn rates, not in spec health).
    health = {(r["statement_id"], r["judge"]): r for r in _csv(report / "statement_health_judges.csv")}
    assert float(health[("alpha", conversation)]["canary_accuracy"]) == 0.5
    assert float(health[("beta", conversation)]["canary_accuracy"]) == 1.0
    summary = (report / "summary.md").read_text(encoding="utf-8")
    assert "not checked (no canary verdicts)" not in summary and f"shared with {turn}" in summary
    flags = {r["statement_id"]: r["flags"] for r in _csv(report / "statement_health.csv") if r["kind"] == "statement"}
    assert "judge_unreliable" in flags["alpha"] and "judge_unreliable" not in flags["beta"]
    printed = " ".join(capsys.readouterr().out.split())
    assert f"Judge card: judge {turn} on spec tiny is kept out of the headline" in printed


def test_your_own_rewordings_are_judged_and_a_bad_file_is_refused_before_anything_is_sent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    wordings = tmp_path / "wordings.json"
    wordings.write_text(json.dumps({s: [f"Mine: rule {s} stands."] for s in STATEMENTS[:-1]}), encoding="utf-8")
    card = f"judge_card: {{retest: 0.2, paraphrases: 1, paraphrases_file: {wordings}}}"
    planted = Planted()
    assert _run(_experiment(tmp_path, card), planted, monkeypatch) == 2  # delta has no wording
    said = " ".join(capsys.readouterr().err.split())
    assert "wordings.json" in said and "'delta'" in said
    assert not planted.judge_prompts and not (tmp_path / "out").exists()
    wordings.write_text(json.dumps({s: [f"Mine: rule {s} stands."] for s in STATEMENTS}), encoding="utf-8")
    assert _run(_experiment(tmp_path, card), planted, monkeypatch) == 0, capsys.readouterr().err
    assert not planted.paraphrase_prompts  # nothing asked of a paraphraser
    assert sum("Mine: rule" in p for _, p in planted.judge_prompts) == 2 * 2 * round(0.2 * len(STATEMENTS) * INPUTS)
    shown = json.loads((tmp_path / "out" / "_judge_card" / "tiny" / "paraphrases.json").read_text(encoding="utf-8"))
    assert shown["source"] == f"file {wordings}"
