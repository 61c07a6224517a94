"""Inspect logs in, all of it: a folder `inspect eval-set` wrote (logs beside `logs.json` and `eval-set.json`) is a
candidate's answers; a log that stopped is judged for what it has and says what it lacks; a log that cannot be read
(a malformed `.json`, a `.eval` that is not a zip, a truncated `.eval` beside a good one) or holds no samples is
refused naming the file before anything is sent; ranking two logs says the epoch and the inputs only one has."""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING

import pytest

from speceval.analysis.reading.load import load_verdicts
from tests.interop.test_inspect_answers import MODEL, NAME, build_log, judge, plain

# inspect_ai is imported inside the functions that use it (see test_inspect_answers.py).
if TYPE_CHECKING:
    from inspect_ai.log import EvalLog

STAMP = "2026-11-27T00-00-00+00-00"


def eval_log(samples, epochs: int, model: str = MODEL, sample_ids=None, **status) -> EvalLog:
    """A log as Inspect writes one (status `success` unless given, with its `error`)."""
    from inspect_ai.log import EvalConfig, EvalDataset, EvalLog, EvalSpec

    return EvalLog(
        status=status.get("status", "success"),
        error=status.get("error"),
        samples=samples,
        eval=EvalSpec(
            created="2026-11-27T00:00:00+00:00",
            task="model_spec",
            model=model,
            config=EvalConfig(epochs=epochs),
            dataset=EvalDataset(name="model_spec", samples=len(sample_ids or samples), sample_ids=sample_ids),
        ),
    )


def summaries(out) -> dict[str, dict]:
    return {p.parent.name: json.loads(p.read_text()) for p in out.rglob("summary.json")}


def test_an_eval_set_folder_is_accepted_as_a_candidates_answers(tmp_path):
    """The folder as `inspect eval-set` leaves it: its manifests (logs.json lists every log's header, so it looks
    like a log from its head) are not read as logs, and a retry's older log of the same task is left out."""
    from inspect_ai.log import write_log_dir_manifest

    folder = tmp_path / "logs"
    folder.mkdir()
    log = build_log(folder / f"{STAMP}_model-spec_Aaaa.eval")
    write_log_dir_manifest(str(folder))  # Inspect's own logs.json
    (folder / "eval-set.json").write_text(json.dumps({"eval_set_id": "x", "tasks": []}))
    (folder / ".eval-set-id").write_text("x")
    assert (folder / "logs.json").read_text().lstrip().startswith("{")
    out = tmp_path / "judged"
    assert judge(folder, out) == 0
    rows = load_verdicts([out]).compliance
    assert {row.model for row in rows} == {NAME}
    assert len(rows) == sum(1 for s in log.samples if s.error is None)


@pytest.mark.slow
def test_a_folder_written_by_inspects_own_eval_set_is_judged(tmp_path, monkeypatch):
    """`inspect_ai.eval_set` itself (mockllm, offline: outputs carry their usage), two epochs."""
    from inspect_ai import Task, eval_set
    from inspect_ai.dataset import Sample
    from inspect_ai.model import ModelOutput, ModelUsage, get_model
    from inspect_ai.scorer import match
    from inspect_ai.solver import generate

    monkeypatch.chdir(tmp_path)
    outputs = []
    for n in range(6):
        output = ModelOutput.from_content("mockllm/model", f"answer {n}")
        output.usage = ModelUsage(input_tokens=5, output_tokens=3, total_tokens=8)
        outputs.append(output)
    samples = [
        Sample(id=f"do_not_lie_{i}", input=f"Is claim {i} true?", target="", metadata={"statement_id": "do_not_lie"})
        for i in range(3)
    ]
    task = Task(dataset=samples, solver=generate(), scorer=match(), name="model_spec")
    done, _ = eval_set(
        [task], log_dir="logs", model=get_model("mockllm/model", custom_outputs=outputs), epochs=2, display="none"
    )
    assert done and (tmp_path / "logs" / "logs.json").is_file() and (tmp_path / "logs" / "eval-set.json").is_file()
    out = tmp_path / "judged"
    assert judge(tmp_path / "logs", out) == 0
    rows = load_verdicts([out]).compliance
    assert sorted((row.run, row.input) for row in rows) == sorted(
        (e, f"Is claim {i} true?") for e in (1, 2) for i in range(3)
    )


def test_a_retry_of_the_same_task_is_read_once_and_the_older_log_named(tmp_path, caplog):
    from inspect_ai.log import write_eval_log

    folder = tmp_path / "logs"
    folder.mkdir()
    failed = build_log(folder / f"{STAMP}_model-spec_Bbbb.eval")
    failed.status, failed.eval.task_id = "error", "task1"
    write_eval_log(failed, str(folder / f"{STAMP}_model-spec_Bbbb.eval"))
    retry = build_log(folder / "2026-11-27T01-00-00+00-00_model-spec_Cccc.eval")
    retry.eval.task_id = "task1"
    write_eval_log(retry, str(folder / "2026-11-27T01-00-00+00-00_model-spec_Cccc.eval"))
    out = tmp_path / "judged"
    with caplog.at_level(logging.WARNING):
        assert judge(folder, out) == 0
    assert "Bbbb" in caplog.text and "left out" in caplog.text
    assert len(load_verdicts([out]).compliance) == sum(1 for s in retry.samples if s.error is None)


@pytest.mark.parametrize(
    ("name", "content", "said"),
    [
        (f"{STAMP}_broken.json", '{"version": 2, "status": "success", "eval": {"task": ', "cannot read"),
        (f"{STAMP}_notzip.eval", "this is not a zip", "not a zip archive"),
    ],
)
def test_an_unreadable_log_is_refused_naming_it_before_anything_is_sent(tmp_path, capsys, name, content, said):
    folder = tmp_path / "logs"
    folder.mkdir()
    bad = folder / name
    bad.write_text(content)
    out = tmp_path / "judged"
    for given in (bad, folder):
        assert judge(given, out) == 2
        err = capsys.readouterr().err
        assert name in err and said in err, err
    assert not list(out.rglob("metadata/*.json"))


def test_a_truncated_eval_beside_a_good_log_is_refused_not_skipped(tmp_path, capsys):
    folder = tmp_path / "logs"
    folder.mkdir()
    build_log(folder / f"{STAMP}_good.eval")
    whole = (folder / f"{STAMP}_good.eval").read_bytes()
    (folder / f"{STAMP}_cut.eval").write_bytes(whole[: len(whole) // 2])
    out = tmp_path / "judged"
    assert judge(folder, out) == 2
    err = capsys.readouterr().err
    assert f"{STAMP}_cut.eval" in err and "not a zip archive" in err
    assert not list(out.rglob("metadata/*.json"))


def test_a_log_with_no_samples_is_refused_naming_it(tmp_path, capsys):
    from inspect_ai.log import write_eval_log

    folder = tmp_path / "logs"
    folder.mkdir()
    empty = eval_log([], 1)
    write_eval_log(empty, str(folder / f"{STAMP}_empty.eval"))
    out = tmp_path / "judged"
    assert judge(folder, out) == 2
    err = capsys.readouterr().err
    assert f"{STAMP}_empty.eval" in err and "no samples" in err
    assert not list(out.rglob("metadata/*.json"))


def test_a_stopped_log_is_judged_for_what_it_has_and_says_what_is_missing(tmp_path, caplog):
    from inspect_ai.log import EvalError, write_eval_log

    folder = tmp_path / "logs"
    folder.mkdir()
    samples = [plain("do_not_lie", 0, epoch, "Is the earth flat?") for epoch in (1, 2)]
    samples.append(plain("do_not_lie", 1, 1, "Did you make a mistake?"))  # epoch 2 of it never ran
    stopped = eval_log(
        samples,
        2,
        sample_ids=["do_not_lie_0", "do_not_lie_1", "avoid_errors_0"],
        status="error",
        error=EvalError(message="the run was killed", traceback="", traceback_ansi=""),
    )
    write_eval_log(stopped, str(folder / f"{STAMP}_stopped.eval"))
    out = tmp_path / "judged"
    with caplog.at_level(logging.WARNING):
        assert judge(folder, out) == 0
    said = caplog.text
    assert "stopped (error: the run was killed)" in said
    assert "1 of its 3 sample(s) of epoch 1 missing" in said and "avoid_errors_0" in said
    assert "2 of its 3 sample(s) of epoch 2 missing" in said and "do_not_lie_1" in said
    assert len(load_verdicts([out]).compliance) == 3  # what the log has is judged
    counted = sorted(s["skipped_answers"].get("missing", 0) for s in summaries(out).values())
    assert counted == [1, 2], counted  # epoch 1 lacks one sample, epoch 2 two: counted as missing answers


def test_ranking_two_logs_says_the_epoch_and_the_inputs_only_one_has(tmp_path, capsys):
    from inspect_ai.log import write_eval_log

    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    build_log(tmp_path / "a" / f"{STAMP}_a.eval")
    other = "openai/gpt-4o"
    samples = [plain("do_not_lie", 0, epoch, "Is the earth flat?") for epoch in (1, 2, 3)]
    samples.append(plain("do_not_lie", 1, 1, "A question only b was asked?"))
    for sample in samples:
        sample.output.model = other
    log = eval_log(samples, 3, model=other)
    write_eval_log(log, str(tmp_path / "b" / f"{STAMP}_b.eval"))
    assert judge((tmp_path / "a", tmp_path / "b"), tmp_path / "ranked", kind="ranking") == 0
    said = capsys.readouterr().out
    assert "Not ranked" in said
    assert "gpt-4o epoch 3: no other model has epoch 3 (1 answer(s))" in said
    # epoch 1: a has 4 answers (5 samples, one errored), b has 2, sharing one input
    assert f"{NAME} epoch 1 vs gpt-4o epoch 1: 3 answer(s) of {NAME} epoch 1 and 1 of gpt-4o epoch 1" in said


def test_a_round_trip_inspect_speceval_inspect_keeps_epochs_errored_samples_and_the_provider_prefix(
    tmp_path, monkeypatch
):
    from inspect_ai.log import list_eval_logs, read_eval_log

    from speceval.cli.main import main as speceval_main

    monkeypatch.setattr("tests.interop.test_inspect_answers.MODEL", "openai/gpt-4o")
    folder = tmp_path / "logs"
    folder.mkdir()
    log = build_log(folder / f"{STAMP}_model-spec.eval")
    assert judge(folder, tmp_path / "judged") == 0
    assert (
        speceval_main(["export", str(tmp_path / "judged"), "--format", "inspect", "--out", str(tmp_path / "back")]) == 0
    )
    (back,) = [read_eval_log(info.name) for info in list_eval_logs(str(tmp_path / "back"))]
    assert back.eval.model == "openai/gpt-4o" and back.eval.config.epochs == 2
    assert sorted((s.epoch, s.error is not None) for s in back.samples) == sorted(
        (s.epoch, s.error is not None) for s in log.samples
    )
    assert {s.id for s in back.samples if s.error is not None} == {"avoid_errors_1"}
