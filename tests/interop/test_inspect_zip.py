"""The `.eval` writer of `speceval export --format inspect` (`inspect_zip`: samples serialized as JSON, no inspect_ai
object per sample) against inspect_ai's own writer given the same samples: every log part is written both ways and
inspect_ai reads back the same log (`read_eval_log`: header, results, every sample field by field), the same samples
(`read_eval_log_samples`), the same summaries, and the same zip members with the same JSON in each."""

from __future__ import annotations

import asyncio
import json
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from speceval.interop import inspect_zip
from speceval.interop.inspect_log import BuiltLog, logs, survey_for_export, write_log
from speceval.interop.inspect_zip import thin_text
from tests.interop.test_inspect_answers import build_log, judge

if TYPE_CHECKING:
    from inspect_ai.log import EvalLog, EvalSample


def recorder_write(log: EvalLog, samples: list[EvalSample], path: Path) -> None:
    """inspect_ai's own writer, as speceval wrote `.eval` logs before `inspect_zip`: its recorder given each sample
    condensed, its buffer written every FLUSH_EVERY samples, the header's metrics by `recompute_metrics` over the
    whole samples and usage summed by `ModelUsage.__add__`."""
    from inspect_ai.log import EvalLog, EvalStats, recompute_metrics
    from inspect_ai.log._condense import condense_sample
    from inspect_ai.log._recorders.eval import EvalRecorder
    from inspect_ai.model import ModelUsage

    async def write() -> None:
        recorder = EvalRecorder(str(path.parent))
        await recorder.log_init(log.eval, str(path), clean=True)
        await recorder.log_start(log.eval, log.plan)
        (zipped,) = recorder.data.values()
        for number, sample in enumerate(samples, start=1):
            await recorder.log_sample(log.eval, condense_sample(sample))
            if number % inspect_zip.FLUSH_EVERY == 0:
                await zipped.write_buffered_samples()
        scored = EvalLog(eval=log.eval, status="success", samples=samples)
        recompute_metrics(scored)
        usage: dict[str, ModelUsage] = {}
        for sample in samples:
            for model, used in sample.model_usage.items():
                usage[model] = usage[model] + used if model in usage else ModelUsage() + used
        stats = EvalStats(started_at=log.stats.started_at, completed_at=log.stats.completed_at, model_usage=usage)
        await recorder.log_finish(log.eval, "success", stats, scored.results, None)

    asyncio.run(write())


def written_both_ways(judged: Path, out: Path, max_samples: int) -> list[tuple[Path, Path]]:
    """Each part of the export of `judged`, written by speceval's writer and by inspect_ai's (the same samples)."""
    from inspect_ai.log import EvalSample

    pairs = []
    for number, built in enumerate(logs(survey_for_export([judged], max_samples), max_samples)):
        samples = list(built.samples)
        reference = built.log.model_copy(deep=True)
        fast, slow = out / "fast" / f"{number}.eval", out / "inspect" / f"{number}.eval"
        write_log(BuiltLog(log=built.log, samples=iter(samples), count=built.count), fast)
        slow.parent.mkdir(parents=True, exist_ok=True)
        objects = [s if isinstance(s, EvalSample) else EvalSample.model_validate(s) for s in samples]
        recorder_write(reference, objects, slow)
        pairs.append((fast, slow))
    return pairs


def members(path: Path) -> list[tuple[str, Any]]:
    import inspect_ai._util.zipfile  # noqa: F401  # zstd members: inspect_ai's patch of zipfile reads them

    with zipfile.ZipFile(path) as zipped:
        return [(name, json.loads(zipped.read(name))) for name in zipped.namelist()]


def assert_same(fast: Path, slow: Path) -> None:
    from inspect_ai.log import read_eval_log, read_eval_log_sample_summaries, read_eval_log_samples

    ours, theirs = read_eval_log(str(fast)), read_eval_log(str(slow))
    assert ours.samples and len(ours.samples) == len(theirs.samples or [])
    for mine, reference in zip(ours.samples, theirs.samples or [], strict=True):
        dumped, expected = mine.model_dump(mode="json"), reference.model_dump(mode="json")
        for name in expected:  # field by field, so that a failure names the field
            assert dumped[name] == expected[name], (mine.id, name)
    assert ours.model_dump(mode="json", exclude={"location"}) == theirs.model_dump(mode="json", exclude={"location"})
    streamed = [
        [s.model_dump(mode="json") for s in read_eval_log_samples(str(file), all_samples_required=True)]
        for file in (fast, slow)
    ]
    assert streamed[0] == streamed[1]
    summaries = [s.model_dump(mode="json") for s in read_eval_log_sample_summaries(str(fast))]
    assert summaries == [s.model_dump(mode="json") for s in read_eval_log_sample_summaries(str(slow))]
    assert members(fast) == members(slow)  # the same layout, the same JSON in every member


def test_an_experiments_parts_read_back_as_inspect_ais_own_writer_writes_them(experiment, tmp_path, monkeypatch):
    """Two candidates, two judges and their panel, usage and job times; parts of 5 samples and a journal member
    every 2 (both writers), so a log has several parts and a part two journal flushes and a tail."""
    monkeypatch.setattr(inspect_zip, "FLUSH_EVERY", 2)
    pairs = written_both_ways(experiment, tmp_path, max_samples=5)
    assert len(pairs) > 2
    assert any(sum(name.startswith("_journal/summaries/") for name, _ in members(fast)) == 3 for fast, _ in pairs)
    for fast, slow in pairs:
        assert_same(fast, slow)


def test_an_inspect_sources_epochs_and_errored_samples_read_back_the_same(tmp_path):
    """A candidate whose answers were an Inspect log's: epochs, conversations, and its errored sample (an
    inspect_ai object written by inspect_ai's serializer inside speceval's writer)."""
    folder = tmp_path / "logs"
    folder.mkdir()
    build_log(folder / "2026-11-27T00-00-00+00-00_model-spec.eval")
    assert judge(folder, tmp_path / "judged") == 0
    pairs = written_both_ways(tmp_path / "judged", tmp_path, max_samples=1_000)
    assert pairs
    for fast, slow in pairs:
        assert_same(fast, slow)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "  leading and trailing  ",
        "tabs\tand\nnew\r\nlines\x0b\x0c and\xa0unicode\u2003spaces\u3000here",
        "x" * 1024,
        "x" * 1025,
        "word " * 300,
        ("a" * 900 + " ") * 12,
        " " * 9000 + "tail",
        "émoji 🙂 " * 200,
    ],
)
def test_a_summarys_thinned_text_is_inspect_ais(text):
    from inspect_ai.log._util import thin_text as inspect_thin_text

    assert thin_text(text) == inspect_thin_text(text)
