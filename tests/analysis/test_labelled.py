"""`speceval report --labels` matches human labels to verdicts as the files are read (issue 25): the same agreement
and PPI as from rows, no row or text per verdict held, and a bad label still named by its line."""

from __future__ import annotations

import csv
import json
import tracemalloc
from pathlib import Path

import pytest

from speceval.analysis.reading.load import load_verdicts
from speceval.analysis.tables.human_labels import item_id, read_labels
from speceval.analysis.tables.judge_quality import LabelTally, human_agreement
from speceval.analysis.tables.labelled import labelled_tally
from speceval.analysis.tables.ppi_table import ppi_rates
from speceval.errors import InputError


def write_run(
    root: Path, name: str, model: str, temperature: float, verdicts: list[bool | None], width: int = 10
) -> None:
    """A judge run over one candidate run made at `temperature` (outside an experiment: variation default)."""
    candidate = root / "candidates" / name
    candidate.mkdir(parents=True)
    (candidate / "run.json").write_text(json.dumps({"parameters": {"params": {"temperature": temperature}}}))
    results = [
        {
            "input": f"q{i} " + "q" * width,
            "output": f"{model} {i} " + "a" * width,
            "compliant": v,
            "confidence": 0.9,
            "explanation": "x",
            "outcome": "judged" if v is not None else "unparsed",
            "original_index": i,
        }
        for i, v in enumerate(verdicts)
    ]
    for statement in ("st0", "st1"):
        path = root / f"judge_j/{name}/results/{statement}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(
            json.dumps(
                {
                    "metadata": {
                        "model": model,
                        "judge": "j",
                        "spec": "s",
                        "statement_id": statement,
                        "prompt_version": "p",
                        "mode": "binary",
                        "batch_ids": ["b"],
                        "candidate_dir": str(candidate),
                    },
                    "results": results,
                }
            )
        )


def write_sheet(path: Path, labels: list[tuple[str, str]]) -> None:
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["item", "human_compliant"])
        writer.writerows(labels)


def test_labels_matched_as_the_files_are_read_give_what_the_rows_give(tmp_path: Path) -> None:
    root = tmp_path / "runs"
    # m1 run twice with different temperatures: reported apart, as variations named by the settings, so its
    # labels name items under those variations; m2 once (variation default).
    write_run(root, "m1-cold", "m1", 0.0, [i % 3 != 0 for i in range(12)])
    write_run(root, "m1-hot", "m1", 1.0, [i % 2 == 0 if i != 5 else None for i in range(12)])
    write_run(root, "m2", "m2", 0.0, [i % 4 != 0 for i in range(12)])
    rows = load_verdicts([root]).compliance
    assert {r.variation for r in rows if r.model == "m1"} == {
        "temperature=0.0,max_tokens=None",
        "temperature=1.0,max_tokens=None",
    }
    sheet = tmp_path / "labels.csv"
    write_sheet(sheet, [(item_id(r), "yes" if i % 3 else "no") for i, r in enumerate(rows) if i % 2 == 1])
    labels = read_labels(sheet, rows)
    assert len(labels) == 36
    streamed = labelled_tally([root], sheet)
    assert not streamed.designed  # no design beside the sheet: human accuracy is the sample's share
    assert human_agreement(streamed) == human_agreement(rows, labels)
    assert ppi_rates(streamed) == ppi_rates(rows, labels)
    by_rows = LabelTally.of_rows(rows, labels)
    assert [(k, f.tolist(), y.tolist()) for k, f, y in streamed.arrays()] == [
        (k, f.tolist(), y.tolist()) for k, f, y in by_rows.arrays()
    ]
    assert sum((y >= 0).sum() for _, _, y in streamed.arrays()) == 34  # two labelled answers were unparsed
    # A label naming m1's answer under variation default (the variation it would have without the split) is no
    # answer the report shows: named by its line.
    stale = next(r for r in rows if r.model == "m1").model_copy(update={"variation": "default"})
    write_sheet(sheet, [(item_id(rows[0]), "yes"), (item_id(stale), "no")])
    with pytest.raises(InputError, match="matches no answer") as caught:
        labelled_tally([root], sheet)
    assert caught.value.line == 3


def test_matching_labels_holds_no_row_or_text_per_verdict(tmp_path: Path) -> None:
    root = tmp_path / "runs"
    write_run(root, "m1", "m1", 0.0, [i % 3 != 0 for i in range(1000)], width=1000)  # 2,000 verdicts, 4 MB
    rows = load_verdicts([root]).compliance
    sheet = tmp_path / "labels.csv"
    write_sheet(sheet, [(item_id(r), "yes") for r in rows[:50]])
    del rows
    labelled_tally([root], sheet)  # imports and caches first
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        tally = labelled_tally([root], sheet)
        held, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert sum(len(f) for _, f, _ in tally.arrays()) == 2000
    assert (held - before) / 2000 < 50, held - before  # rows with their texts: over 2 KB a verdict
    assert peak - before < 2_000_000, peak - before  # a file (2 MB of text) is read a chunk of verdicts at a time
