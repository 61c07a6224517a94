"""The sample view of a report that mixes a binary judge, a categorical judge and a `scope: turn` judge: every
record shown is read back from its own verdict (the three are folded and numbered apart, then shown together)."""

from __future__ import annotations

import json
from pathlib import Path

from speceval.analysis.rendering.data import compute
from speceval.batch.costs import PriceTable


def _write(root: Path, judge: str, mode: str, turn: bool) -> set[tuple[str, ...]]:
    """Two candidates × two statements × 5 verdicts, each with an explanation naming it; what the page may show."""
    shown = set()
    for model in ("m1", "m2"):
        for statement in ("st0", "st1"):
            results = []
            for i in range(5):
                name = f"{judge}|{model}|{statement}|{i}"
                entry = {
                    "input": f"q{i} {statement}",
                    "output": f"answer {name}",
                    "confidence": 0.9,
                    "explanation": f"because {name}",
                    "outcome": "judged",
                    "original_index": i,
                }
                entry.update(
                    {"category": ("flatters", "holds")[i % 2]} if mode == "categories" else {"compliant": i % 2 == 0}
                )
                if turn:  # one verdict per assistant turn: answers 0 and 1 have two turns, answer 2 one
                    entry.update(turn=1 + i % 2, original_index=i // 2)
                results.append(entry)
                shown.add((judge, model, statement, entry["input"], entry["output"], entry["explanation"]))
            metadata = {
                "model": model,
                "judge": judge,
                "spec": "s",
                "statement_id": statement,
                "prompt_version": "p",
                "mode": mode,
                "batch_ids": ["b"],
                "candidate_dir": "x",
            }
            if mode == "categories":
                metadata["categories"] = ["flatters", "holds"]
            path = root / f"judge_{judge}/{model}/results/{statement}.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps({"metadata": metadata, "results": results}), encoding="utf-8")
    return shown


def test_every_sample_of_a_mixed_report_is_its_own_verdict(tmp_path):
    # The categorical judge's folder sorts first, so the binary judge's verdicts are not the first rows read.
    expected = _write(tmp_path, "a-categorical", "categories", turn=False)
    expected |= _write(tmp_path, "b-binary", "binary", turn=False)
    expected |= _write(tmp_path, "c-turns", "binary", turn=True)
    data = compute([tmp_path], PriceTable.load(None))
    assert data.sample_total == len(expected) == 60
    seen = {
        (s["judge"], s["candidate"], s["statement"], s["input"], s["output"], s["explanation"]) for s in data.samples
    }
    assert seen == expected  # 60 verdicts, under the sample's bound: every one shown, each with its own texts
