"""`speceval export --format inspect --max-samples-per-log N`: a log larger than N is written as parts, each a log
that inspect_ai reads, which together hold every answer exactly once, and each carrying the whole log's rates (the
report's compliance.csv), not its own."""

from __future__ import annotations

import os
import sys
from collections import Counter, defaultdict

import pytest

from speceval.cli.main import main as speceval_main
from tests.interop.conftest import CANDIDATES, JUDGES
from tests.interop.inspect_reader import list_eval_logs, read_eval_log
from tests.interop.test_inspect_export import report_rates, verdict_files

MAX = 7


@pytest.mark.parametrize("log_format", ["eval", "json"])
def test_parts_hold_every_answer_once_and_each_carries_the_whole_logs_rates(experiment, tmp_path, log_format):
    out = tmp_path / "parts"
    argv = ["export", str(experiment), "--format", "inspect", "--out", str(out), "--log-format", log_format]
    assert speceval_main([*argv, "--max-samples-per-log", str(MAX)]) == 0
    logs = [read_eval_log(info.name) for info in list_eval_logs(str(out))]  # inspect_ai reads every part
    expected = verdict_files(experiment)
    rates = report_rates(experiment)
    by_log: dict[str, list] = defaultdict(list)
    for log in logs:
        by_log[log.eval.metadata["speceval"]["part"]["log"]].append(log)
    assert len(by_log) == len(CANDIDATES)
    for parts in by_log.values():
        candidate = parts[0].eval.model
        answers = expected[candidate]
        assert len(parts) == -(-len(answers) // MAX) > 2  # a small maximum forces several parts
        numbers = sorted(log.eval.metadata["speceval"]["part"]["number"] for log in parts)
        assert numbers == list(range(1, len(parts) + 1))
        seen = Counter((s.metadata["statement_id"], s.metadata["original_index"]) for log in parts for s in log.samples)
        assert seen == Counter(answers.keys())  # every answer in exactly one part
        assert sum(len(log.samples) for log in parts) == len(answers)
        assert len({s.id for log in parts for s in log.samples}) == len(answers)  # ids unique across parts
        statements_in = Counter(st for log in parts for st in {s.metadata["statement_id"] for s in log.samples})
        assert max(statements_in.values()) > 1  # a statement larger than the room left is cut between parts
        for log in parts:
            meta = log.eval.metadata["speceval"]
            assert (
                len(log.samples) <= MAX and log.eval.model == candidate and log.eval.dataset.samples == len(log.samples)
            )
            assert meta["part"]["of"] == len(parts) and meta["part"]["log_samples"] == len(answers)
            for judge in (*JUDGES, "panel"):
                row, rate = rates[(judge, candidate)], meta["rates"][judge]
                assert rate["judged"] == int(row["judged"])
                assert (rate["rate"], rate["ci_low"], rate["ci_high"]) == pytest.approx(
                    (float(row["rate"]), float(row["ci_low"]), float(row["ci_high"]))
                )
                assert rate["ci_method"] == row["ci_method"]
            for sample in log.samples:  # each sample's scores are its verdicts, as in a log of one part
                verdicts = answers[(sample.metadata["statement_id"], sample.metadata["original_index"])]
                judged = {judge for judge, entry in verdicts.items() if entry["outcome"] == "judged"}
                assert set(sample.scores) == judged | ({"panel"} if judged == set(JUDGES) else set())
                for judge, entry in verdicts.items():
                    if entry["outcome"] == "judged":
                        assert sample.scores[judge].value == ("C" if entry["compliant"] else "I")
        assert len({log.eval.eval_id for log in parts}) == len(parts)
        assert len({log.eval.task_id for log in parts}) == len(parts)  # View lists each part, none as a retry
        assert len({log.eval.run_id for log in parts}) == 1


def test_a_log_within_the_maximum_is_one_file_and_a_maximum_below_one_is_refused(experiment, tmp_path, capsys):
    out = tmp_path / "whole"
    argv = ["export", str(experiment), "--format", "inspect", "--out", str(out)]
    assert speceval_main([*argv, "--max-samples-per-log", "1000"]) == 0
    infos = list_eval_logs(str(out))
    assert len(infos) == len(CANDIDATES) and not any("part" in info.name for info in infos)
    assert {read_eval_log(i.name, header_only=True).eval.metadata["speceval"]["part"]["of"] for i in infos} == {1}
    assert speceval_main([*argv[:-1], str(tmp_path / "none"), "--max-samples-per-log", "0"]) == 2
    assert "--max-samples-per-log 0" in capsys.readouterr().err
    assert not (tmp_path / "none").exists()


_OPENED: list[str] | None = None


def _count_opens(event: str, args: tuple) -> None:
    if _OPENED is not None and event == "open" and isinstance(args[0], str | bytes | os.PathLike):
        _OPENED.append(os.fsdecode(args[0]))


def test_each_part_opens_only_its_own_statements_files(experiment, tmp_path):
    """Issue 47: a part read the head of every results file of its log's folders (500 parts x every file at 10^6);
    now it opens only its own statements' files: each verdict file is opened a bounded number of times (the
    survey, the whole-log pass, the parts holding its statement), however many parts the log has."""
    global _OPENED
    sys.addaudithook(_count_opens)  # (a hook cannot be removed: it records only while _OPENED is a list)
    _OPENED = []
    try:
        argv = ["export", str(experiment), "--format", "inspect", "--out", str(tmp_path / "parts")]
        assert speceval_main([*argv, "--max-samples-per-log", "2"]) == 0
        opened = Counter(path for path in _OPENED if "/results/" in path and "/compliance/" in path)
    finally:
        _OPENED = None
    parts = len(list_eval_logs(str(tmp_path / "parts")))
    assert parts >= 20  # 40 answers per log, 2 a part
    assert opened and max(opened.values()) <= 5, opened.most_common(3)
