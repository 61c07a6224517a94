"""A `.eval` log written straight into its zip, in inspect_ai's own layout (inspect_ai 0.3.285,
`inspect_ai/log/_recorders/eval.py`), from samples made as JSON (`inspect_samples.Record`).

inspect_ai's recorder takes an `EvalSample` per sample: building and validating those objects, condensing them
and making each one's summary (whose text thinning runs `textwrap.shorten` on every score's texts) was nearly all
of an export's time (benchmarks/RESULTS.md, "The Inspect export to 10⁶"). Here a sample is serialized once, as
inspect_ai would serialize it, and its summary is made from the same JSON with inspect_ai's own thinning rules.

The layout, as inspect_ai's recorder writes a finished log:

- `_journal/start.json`: the log's version, eval spec and plan (`LogStart`);
- `samples/<id>_epoch_<epoch>.json`: one member per sample;
- `_journal/summaries/<n>.json`: the summaries of each batch of `FLUSH_EVERY` samples (the recorder's journal,
  which a reader of an unfinished log reads);
- `summaries.json`: every sample's summary;
- `header.json`: the whole header (`EvalLog` without samples: eval, plan, results, stats, status).

Every member is compressed as inspect_ai compresses its own (zstd, its `zipfile_compress_kwargs`). What inspect_ai
reads back from a file written here equals what it reads from the file its recorder writes for the same samples:
tests/interop/test_inspect_zip.py. Memory holds one part's summaries (a few KB a sample), never its samples.
"""

from __future__ import annotations

import json
import time
import zipfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from speceval.interop.inspect_samples import Record

if TYPE_CHECKING:
    from inspect_ai.log import EvalLog, EvalSample

FLUSH_EVERY = 50
"""Samples whose summaries one journal member holds (inspect_ai's recorder writes one per flush of its buffer)."""

THIN_WIDTH = 1024
THIN_SCAN = THIN_WIDTH * 8
"""inspect_ai's `thin_text`: a summary's text is `textwrap.shorten(text[:THIN_SCAN], THIN_WIDTH, "...")`."""


def write_eval(
    path: Path, log: EvalLog, samples: Iterable[Record | EvalSample], finish: Callable[[], None] = lambda: None
) -> None:
    """Write `log` (its header: eval, plan, results, stats, status) and its `samples` as a `.eval` file at `path`;
    `finish` is called after the last sample, before the header is written (it fills the header's results from
    the samples seen, `inspect_log._finish`). A sample that is an inspect_ai `EvalSample` (an Inspect source's
    unanswered ones, `inspect_source`) is written by inspect_ai's own serializer."""
    from inspect_ai._util.constants import LOG_SCHEMA_VERSION
    from inspect_ai._util.json import to_json_safe
    from inspect_ai._util.zipfile import zipfile_compress_kwargs  # private, hence the pinned range
    from inspect_ai.log import EvalLog
    from inspect_ai.log._condense import condense_sample
    from inspect_ai.log._recorders.eval import LogStart

    with zipfile.ZipFile(path, "w", **zipfile_compress_kwargs) as zipped:
        members = _Members(zipped)
        start = LogStart(version=LOG_SCHEMA_VERSION, eval=log.eval, plan=log.plan)
        members.write("_journal/start.json", to_json_safe(start, indent=None))
        for sample in samples:
            if isinstance(sample, dict):
                name, member, brief = _member(sample), dump(sample), dump(summary(sample))
            else:
                condensed = condense_sample(sample)  # as inspect_ai's recorder is given it
                name = _member({"id": condensed.id, "epoch": condensed.epoch})
                member, brief = to_json_safe(condensed, indent=None), to_json_safe(condensed.summary(), indent=None)
            members.write(name, member)
            members.summarize(brief)
        members.journal()
        members.write("summaries.json", _array(members.summaries))
        finish()
        header = EvalLog(
            version=LOG_SCHEMA_VERSION,
            invalidated=False,
            eval=log.eval,
            plan=log.plan,
            results=log.results,
            stats=log.stats,
            status=log.status,
            error=log.error,
        )
        members.write("header.json", to_json_safe(header, indent=None))


class _Members:
    """Writes members as `ZipFile.writestr` does (same header, time stamp and mode), each compressed by one
    single-threaded zstd compressor at inspect_ai's level. inspect_ai's patched zipfile makes a compressor of 12
    threads per member, whose thread pool starts at the member's first write: 3 ms a member, 0.02 ms without
    (a sample's member is a few KB). The compressor is swapped in on the member's write handle (the stdlib's
    `_ZipWriteFile._compressor`, CPython 3.11-3.13) before any byte is written; its frames are what inspect_ai's
    `_MultiFrameZstdCompressObj` makes (one frame per 200 MiB of input), which any zstd reader reads."""

    def __init__(self, zipped: zipfile.ZipFile):
        import zstandard

        self.zipped = zipped
        self.compressor = zstandard.ZstdCompressor(level=3)
        self.summaries: list[bytes] = []  # every sample's summary, for summaries.json
        self.unjournaled = 0
        self.journaled = 0

    def summarize(self, summary: bytes) -> None:
        """A sample's summary; every FLUSH_EVERY of them are written as a journal member."""
        self.summaries.append(summary)
        self.unjournaled += 1
        if self.unjournaled == FLUSH_EVERY:
            self.journal()

    def journal(self) -> None:
        """The summaries not yet in the journal, as its next member (none when there are none)."""
        if self.unjournaled:
            self.journaled += 1
            self.write(f"_journal/summaries/{self.journaled}.json", _array(self.summaries[-self.unjournaled :]))
            self.unjournaled = 0

    def write(self, name: str, data: bytes) -> None:
        from inspect_ai._util.zipfile import _MultiFrameZstdCompressObj  # private, hence the pinned range

        info = zipfile.ZipInfo(filename=name, date_time=time.localtime(time.time())[:6])
        info.compress_type = self.zipped.compression
        info.external_attr = 0o600 << 16
        info.file_size = len(data)
        with self.zipped.open(info, mode="w") as member:
            member._compressor = _MultiFrameZstdCompressObj(self.compressor.compressobj)  # type: ignore[attr-defined]
            member.write(data)


def dump(value: dict[str, Any]) -> bytes:
    """JSON as inspect_ai's `to_json_safe` writes it (compact, UTF-8). A value this cannot write as inspect_ai
    would (a NaN, which inspect_ai writes as null; a lone surrogate, which it escapes) goes through inspect_ai."""
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")
    except (ValueError, UnicodeEncodeError):
        from inspect_ai._util.json import to_json_safe

        return to_json_safe(value, indent=None)


def _member(sample: dict[str, Any]) -> str:
    return f"samples/{sample['id']}_epoch_{sample['epoch']}.json"


def _array(members: list[bytes]) -> bytes:
    return b"[" + b",".join(members) + b"]"


def summary(sample: Record) -> dict[str, Any]:
    """The sample's `EvalSampleSummary` as inspect_ai stores it (`EvalSample.summary()`: the input and target cut
    at 5,120 characters, metadata and score texts thinned, no messages but their count)."""
    from inspect_ai.log._util import truncate_text

    made: dict[str, Any] = {"id": sample["id"], "epoch": sample["epoch"]}
    made["input"] = truncate_text(sample["input"])
    made["target"] = truncate_text(sample["target"])
    made["metadata"] = thin_metadata(sample.get("metadata", {}))
    if "scores" in sample:
        made["scores"] = {name: _thin_score(score) for name, score in sample["scores"].items()}
    for name in ("model_usage", "role_usage", "started_at", "completed_at", "total_time"):
        if name in sample:
            made[name] = sample[name]
    made["completed"] = True
    made["message_count"] = len(sample.get("messages", []))
    return made


def _thin_score(score: dict[str, Any]) -> dict[str, Any]:
    """A score as a summary holds it (`EvalSampleSummary.thin_data`: its texts thinned, its edit history not kept)."""
    thinned: dict[str, Any] = {"value": score["value"]}
    for name in ("answer", "explanation"):
        if name in score:
            thinned[name] = thin_text(score[name])
    if "metadata" in score:
        thinned["metadata"] = thin_metadata(score["metadata"])
    thinned["history"] = []
    return thinned


def thin_text(text: str) -> str:
    """inspect_ai's `thin_text`. `textwrap.shorten` first joins the words with single spaces and returns that
    when it fits the width: done here without it, which is most texts (a longer one goes through inspect_ai's)."""
    joined = " ".join(text[:THIN_SCAN].split())
    if len(joined) <= THIN_WIDTH:
        return joined
    from inspect_ai.log._util import thin_text as inspect_thin_text

    return inspect_thin_text(text)


def thin_metadata(metadata: dict[str, Any]) -> dict[str, Any]:
    """inspect_ai's `thin_metadata` on JSON values: numbers and booleans kept, texts thinned, any other value kept
    when its JSON is at most 1 KB (its size measured as inspect_ai measures it where it is near 1 KB)."""
    thinned: dict[str, Any] = {}
    for key, value in metadata.items():
        if isinstance(value, int | float | bool):
            thinned[key] = value
        elif isinstance(value, str):
            thinned[key] = thin_text(value)
        else:
            thinned[key] = value if _json_size(value) <= THIN_WIDTH else "Key removed from summary (> 1k)"
    return thinned


def _json_size(value: Any) -> int:
    """Characters of the value's compact JSON; near the 1 KB limit, inspect_ai's own count (its float and escape
    forms can differ from Python's by a few characters)."""
    size = len(json.dumps(value, ensure_ascii=False, separators=(",", ":")))
    if abs(size - THIN_WIDTH) > 64:
        return size
    from inspect_ai._util.json import to_json_str_safe

    return len(to_json_str_safe(value))
