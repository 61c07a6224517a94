"""`speceval export --format inspect`: what inspect_ai's own reader sees in the exported logs equals the verdict
files (a sample per answer, a score per judge, unparsed verdicts unscored), Inspect's metrics equal the report's
rates, and the report's intervals ride in the log's metadata."""

from __future__ import annotations

import csv
import json
import math
import os
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from speceval.cli.main import main as speceval_main
from tests.interop.conftest import CANDIDATES, JUDGES
from tests.interop.inspect_reader import list_eval_logs, read_eval_log


def verdict_files(out: Path) -> dict[str, dict[tuple[str, int], dict[str, dict]]]:
    """candidate → (statement, original_index) → judge → the verdict entry, from the compliance results files."""
    found: dict[str, dict[tuple[str, int], dict[str, dict]]] = defaultdict(lambda: defaultdict(dict))
    for file in (out / "compliance").rglob("results/*.json"):
        data = json.loads(file.read_text())
        if "canaries" in data:
            continue
        m = data["metadata"]
        for entry in data["results"]:
            found[m["model"]][(m["statement_id"], entry["original_index"])][m["judge"]] = entry
    return found


def report_rates(out: Path) -> dict[tuple[str, str], dict[str, str]]:
    with (out / "report" / "compliance.csv").open() as handle:
        return {(r["judge"], r["candidate"]): r for r in csv.DictReader(handle) if not r["statement_id"]}


@pytest.mark.parametrize("log_format", ["eval", "json"])
def test_inspect_reads_one_scored_sample_per_answer_with_each_judges_verdict(experiment, tmp_path, log_format):
    out = tmp_path / "logs"
    assert (
        speceval_main(["export", str(experiment), "--format", "inspect", "--out", str(out), "--log-format", log_format])
        == 0
    )
    logs = [read_eval_log(info.name) for info in list_eval_logs(str(out))]
    assert len(logs) == 2 and all(info.name.endswith(f".{log_format}") for info in list_eval_logs(str(out)))
    expected = verdict_files(experiment)
    rates = report_rates(experiment)
    unscored_seen = 0
    for log in logs:
        candidate = log.eval.model
        assert candidate in CANDIDATES and log.status == "success"
        assert log.eval.metadata["speceval"]["synthetic"] is True and "synthetic" in log.eval.tags
        answers = expected[candidate]
        assert len(log.samples) == len(answers)
        for sample in log.samples:
            statement, index = sample.metadata["statement_id"], sample.metadata["original_index"]
            assert sample.id == f"{statement}_{index}"
            verdicts = answers[(statement, index)]
            judged = {judge for judge, entry in verdicts.items() if entry["outcome"] == "judged"}
            assert set(sample.scores) == judged | ({"panel"} if judged == set(JUDGES) else set())
            for judge, entry in verdicts.items():
                if entry["outcome"] == "judged":
                    score = sample.scores[judge]
                    assert score.value == ("C" if entry["compliant"] else "I")
                    assert score.explanation == entry["explanation"]
                    assert score.answer == entry["output"]  # Inspect View's answer column
                else:  # no score (every exported score is finite): the outcome is in the sample's metadata
                    assert sample.metadata["not_judged"][judge]["outcome"] == entry["outcome"]
                    assert sample.metadata["not_judged"]["panel"]["outcome"] == "panel_incomplete"
                    unscored_seen += 1
            assert all(isinstance(s.value, str) or math.isfinite(s.value) for s in sample.scores.values()), (
                sample.scores
            )
            assert sample.total_time is not None and math.isfinite(sample.total_time) and sample.total_time >= 0
            assert sample.output.completion == next(iter(verdicts.values()))["output"]
            assert sample.messages[-1].content == sample.output.completion
            assert sample.target  # the statement's text
            assert sample.model_usage[candidate].output_tokens > 0
        by_name = {score.name: score for score in log.results.scores}
        for judge in JUDGES:
            row = rates[(judge, candidate)]
            judged = sum(1 for v in answers.values() if v[judge]["outcome"] == "judged")
            assert by_name[judge].scored_samples == judged == int(row["judged"])
            assert by_name[judge].unscored_samples == 0  # not-judged verdicts have no score (counted in the rates)
            assert sum(log.eval.metadata["speceval"]["rates"][judge]["not_judged"].values()) == len(answers) - judged
            assert by_name[judge].metrics["accuracy"].value == pytest.approx(float(row["rate"]))
            interval = log.eval.metadata["speceval"]["rates"][judge]
            assert (interval["ci_low"], interval["ci_high"]) == pytest.approx(
                (float(row["ci_low"]), float(row["ci_high"]))
            )
            assert interval["ci_method"] == row["ci_method"]
        panel = rates[("panel", candidate)]
        assert by_name["panel"].metrics["mean"].value == pytest.approx(float(panel["rate"]))
        assert by_name["panel"].scored_samples == int(panel["judged"])
    assert unscored_seen > 0  # the emulator leaves some verdicts unparsed: they must come through unscored


def test_export_refuses_a_folder_that_is_not_empty_and_one_without_verdicts(experiment, tmp_path, capsys):
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "keep.txt").write_text("mine")
    assert speceval_main(["export", str(experiment), "--format", "inspect", "--out", str(busy)]) == 2
    assert "not empty" in capsys.readouterr().err
    empty = tmp_path / "nothing"
    empty.mkdir()
    assert speceval_main(["export", str(empty), "--format", "inspect", "--out", str(tmp_path / "logs")]) == 2
    assert "no compliance results" in capsys.readouterr().err
    assert not (tmp_path / "logs").exists()


def test_a_log_of_more_samples_than_one_flush_holds_every_one(tmp_path, monkeypatch):
    """The .eval writer flushes every FLUSH_EVERY samples: a log of 2.2 flushes keeps every sample and verdict."""
    from speceval.interop import inspect_zip

    # Flushes of 10 samples, not 50: the same two flushes and a tail in 22 samples instead of 110.
    monkeypatch.setattr(inspect_zip, "FLUSH_EVERY", 10)
    count = inspect_zip.FLUSH_EVERY * 2 + inspect_zip.FLUSH_EVERY // 5
    results = tmp_path / "judged" / "spec_s" / "judge_j" / "m" / "results"
    results.mkdir(parents=True)
    entries = [
        {
            "input": f"q{i}",
            "output": f"a{i}",
            "compliant": i % 3 != 0,
            "confidence": 0.9,
            "explanation": "e",
            "outcome": "judged",
            "original_index": i,
        }
        for i in range(count)
    ]
    (results / "s1.json").write_text(
        json.dumps(
            {
                "schema_version": 1,
                "metadata": {
                    "model": "m",
                    "judge": "j",
                    "spec": "s",
                    "statement_id": "s1",
                    "prompt_version": "v",
                    "mode": "binary",
                    "batch_ids": [],
                    "candidate_dir": str(tmp_path / "gone"),
                },
                "results": entries,
            }
        )
    )
    assert speceval_main(["export", str(tmp_path / "judged"), "--format", "inspect", "--out", str(tmp_path / "l")]) == 0
    (info,) = list_eval_logs(str(tmp_path / "l"))
    log = read_eval_log(info.name)
    assert [s.id for s in log.samples] == sorted(f"s1_{i}" for i in range(count))
    assert {s.id: s.scores["j"].value for s in log.samples} == {
        f"s1_{i}": "C" if i % 3 != 0 else "I" for i in range(count)
    }


def test_without_inspect_ai_both_directions_say_how_to_install_it(experiment, tmp_path, monkeypatch, capsys):
    """A Python where `import inspect_ai` fails (sys.modules entries None): exit 2 with the install command, nothing
    written, in both directions. In this process (each command's `main`), not in a fresh interpreter: the bridge
    asks for inspect_ai with `import inspect_ai` first (speceval/pipelines/inspect_logs.py's `require_inspect`), and
    every inspect_ai module this process imported is None here too; a fresh interpreter cost two SDK imports."""
    from speceval.cli.judge import compliance_main
    from tests.conftest import SAMPLE_SPEC
    from tests.interop.test_inspect_answers import build_log

    (tmp_path / "logs").mkdir()
    log = tmp_path / "logs" / "2026-11-27T00-00-00+00-00_x.eval"
    build_log(log)  # built here, where inspect_ai imports; the commands below run where it does not
    for module in [name for name in sys.modules if name.split(".")[0] == "inspect_ai"] or ["inspect_ai"]:
        monkeypatch.setitem(sys.modules, module, None)  # its submodules too: this process imported them
    commands = {
        "export": lambda: speceval_main(
            ["export", str(experiment), "--format", "inspect", "--out", str(tmp_path / "out")]
        ),
        "judge": lambda: compliance_main(
            [
                "--spec-path",
                str(SAMPLE_SPEC),
                "--candidate-generation-dirs",
                str(log),
                "--compliance-judge-model-name",
                "gpt-4.1-2025-04-14",
                "--output-dir-base",
                str(tmp_path / "judged"),
                "--offline",
            ]
        ),
    }
    for name, command in commands.items():
        code = command()
        stderr = capsys.readouterr().err
        assert code == 2, (name, stderr[-2000:])
        assert "pip install 'speceval[inspect]'" in stderr, (name, stderr[-2000:])
    assert not (tmp_path / "out").exists() and not (tmp_path / "judged").exists()


def test_an_experiments_inspect_export_has_one_task_id_per_log_and_a_finite_duration_per_sample(experiment, tmp_path):
    """Inspect View hides logs that share a task id as retries of one task, and `inspect log list` reads the task and
    task id out of the file name (`<created>_<task>_<id>`): each log its own, named as Inspect names its logs. Every
    sample's duration is the time its answer took as the run recorded it (a batch job's, a realtime request's)."""
    out = tmp_path / "logs"
    assert speceval_main(["export", str(experiment), "--format", "inspect", "--out", str(out)]) == 0
    infos = list_eval_logs(str(out))
    logs = [read_eval_log(info.name) for info in infos]
    assert len(logs) == len(CANDIDATES)
    assert len({log.eval.task_id for log in logs}) == len(logs)
    assert len({log.eval.task for log in logs}) == len(logs)
    for info, log in zip(infos, logs, strict=True):
        assert info.task_id == log.eval.task_id and info.task_id.isalnum()
        assert info.task == log.eval.task.split("/", 1)[1].replace("_", "-")  # Inspect's own cleaning of the name
        assert all(s.total_time is not None and math.isfinite(s.total_time) for s in log.samples)
        assert all(s.total_time >= 0 for s in log.samples)


def test_a_forked_export_gives_its_messages_ids_of_its_own() -> None:
    """Exports forked from one process (a multiprocessing pool on Linux forks) draw message ids from a generator
    seeded again in the child, not the parent's next ones: two logs would otherwise hold the same message ids."""
    from speceval.interop import inspect_samples

    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its next id, then out without the parent's exit handlers
        os.write(write, inspect_samples._message("user", "x")["id"].encode())
        os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    with os.fdopen(read) as pipe:
        child = pipe.read()
    assert len(child) == 22 and child != inspect_samples._message("user", "x")["id"]
