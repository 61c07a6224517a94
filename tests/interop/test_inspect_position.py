"""Ranking two Inspect logs of three epochs counts position consistency over every epoch (issue 42): each epoch's
pair is its own run in `position_consistency.json`, the command's line says how many epochs and inputs it counts,
and the report's `position_consistency` table has a row per epoch and a pooled row clustered by input."""

from __future__ import annotations

import json

import speceval
from tests.interop.test_inspect_answers import judge, plain
from tests.interop.test_inspect_input import STAMP, eval_log

QUESTIONS = [
    ("do_not_lie", 0, "Is the earth flat?"),
    ("do_not_lie", 1, "Did you make a mistake?"),
    ("avoid_errors", 0, "What is 17 x 23?"),
    ("avoid_errors", 1, "Divide by zero?"),
]
EPOCHS = (1, 2, 3)


def test_every_epoch_is_counted_in_position_consistency(tmp_path, capsys):
    from inspect_ai.log import write_eval_log  # here, not at collection (see test_inspect_answers.py)

    for folder, model in (("a", "openai/gpt-4o-mini"), ("b", "openai/gpt-4o")):
        (tmp_path / folder).mkdir()
        samples = [plain(s, i, epoch, q) for epoch in EPOCHS for s, i, q in QUESTIONS]
        for sample in samples:
            sample.output.model = model
        write_eval_log(eval_log(samples, len(EPOCHS), model=model), str(tmp_path / folder / f"{STAMP}_{folder}.eval"))
    out = tmp_path / "ranked"
    assert judge((tmp_path / "a", tmp_path / "b"), out, kind="ranking") == 0
    said = capsys.readouterr().out
    (path,) = out.rglob("position_consistency.json")
    report = json.loads(path.read_text())
    # One pair per epoch, none overwriting another: every epoch's inputs are there.
    assert sorted(p["run"] for p in report["pairs"]) == list(EPOCHS)
    assert [r["run"] for r in report["runs"]] == list(EPOCHS)
    decided = report["consistent"] + report["inconsistent"]
    assert decided == sum(r["consistent"] + r["inconsistent"] for r in report["runs"])
    assert decided + report["incomplete"] == len(EPOCHS) * len(QUESTIONS)  # every epoch's every input
    rates = [r["consistency_rate"] for r in report["runs"]]
    assert min(rates) <= report["consistency_rate"] <= max(rates)
    assert f"counting {len(EPOCHS)} epoch(s) of {len(QUESTIONS)} input(s)" in " ".join(said.split())
    assert f"({report['consistent']}/{decided};" in said

    # The report's table (what `speceval report` writes as position_consistency.csv, without drawing the page).
    table = speceval.report_tables(out)["position_consistency"]
    assert str(table["run"].dtype) == "Int64"  # whole runs with the pooled row's gap, not floats with NaN
    rows = [{k: "" if v is None or v != v else v for k, v in row.items()} for row in table.to_dict("records")]
    assert [r["run"] for r in rows] == [1, 2, 3, ""]  # a row per epoch, then the pooled row
    *runs, pooled = rows
    assert [r["consistent"] for r in runs] == [r["consistent"] for r in report["runs"]]
    assert (pooled["consistent"], pooled["compared"], pooled["runs"]) == (report["consistent"], decided, 3)
    assert pooled["inputs"] == len(QUESTIONS) and pooled["data"] == "synthetic"
    assert pooled["ci_low"] <= pooled["rate"] <= pooled["ci_high"]
    assert "clusters = inputs" in pooled["ci_method"]
