"""What an experiment reads later is refused before the first job: a bad label sheet, a metric over a judge that
is not one, a limit over a model without a price. Nothing is written, nothing sent."""

from __future__ import annotations

from pathlib import Path

import pytest

from speceval.cli.main import main as speceval_main
from tests.experiments.test_experiments import GRID

HEADER = "item,spec,candidate,statement_id,statement_text,input,output,human_compliant,notes\n"


def _refused(tmp_path: Path, text: str, capsys: pytest.CaptureFixture[str]) -> str:
    experiment = tmp_path / "exp.yaml"
    experiment.write_text(text)
    assert speceval_main(["run", str(experiment), "--offline"]) == 2
    assert not (tmp_path / "out").exists()  # refused before anything was written or sent
    captured = capsys.readouterr()
    return " ".join((captured.out + captured.err).split())


@pytest.mark.parametrize(
    ("rows", "expected"),
    [
        (
            "a1,openai,gpt-4.1-mini-2025-04-14,s,,i,o,maybe,\n",
            "line 2, field 'human_compliant': human_compliant 'maybe'",
        ),
        ("a1,other_spec,gpt-4.1-mini-2025-04-14,s,,i,o,yes,\n", "line 2, field 'spec': spec 'other_spec' is not one"),
        ("a1,openai,gpt-5-from-elsewhere,s,,i,o,yes,\n", "candidate 'gpt-5-from-elsewhere' is not one"),
        (
            "a1,openai,gpt-4.1-mini-2025-04-14,s,,i,o,yes,\na1,openai,gpt-4.1-mini-2025-04-14,s,,i,o,no,\n",
            "line 3, field 'item': item 'a1' is labelled on line 2 too (a conflicting label)",
        ),
    ],
)
def test_a_bad_label_sheet_is_refused_before_any_job(tmp_path, capsys, rows: str, expected: str) -> None:
    (tmp_path / "labels.csv").write_text(HEADER + rows)
    assert expected in _refused(tmp_path, GRID + "labels: labels.csv\n", capsys)


def test_a_metric_over_a_judge_that_is_not_one_is_refused(tmp_path, capsys) -> None:
    metric = "metrics:\n  risk:\n    source: judge:gpt-4.1-2025-04-41\n    regex: 'risk: (\\d+)'\n"
    metric += "    type: int\n    range: [0, 10]\n"
    shown = _refused(tmp_path, GRID + metric, capsys)
    assert "metrics.risk.source" in shown and "names no judge of this experiment" in shown


def test_a_limit_over_a_model_without_a_price_is_refused_naming_the_key(tmp_path, capsys) -> None:
    text = GRID.replace("gpt-4.1-mini-2025-04-14", "gpt-4.1-mini-2025-04-14\n    org: openai").replace(
        "  - model: claude-haiku-4-5-20251001\n", "  - model: ft:gpt-unpriced-custom\n    org: openai\n"
    )
    shown = _refused(tmp_path, text + "cost_per_run_limit: 1\n", capsys)
    assert "cost_per_run_limit needs a price" in shown and "ft:gpt-unpriced-custom" in shown
    assert "--budget-usd" not in shown


def test_follow_ups_past_max_turns_and_an_unknown_user_org_name_line_and_key(tmp_path, capsys) -> None:
    user = "simulated_user:\n  model: gpt-4.1-mini-2025-04-14\n  instructions: Ask.\n"
    long = GRID.replace("variations:\n  temperature: [0.0, 0.7]\n", "variations:\n  follow_ups:\n    two: [a, b]\n")
    shown = _refused(tmp_path, long + user + "  max_turns: 2\n", capsys)
    line = (long + user).splitlines().index("  follow_ups:") + 1
    assert f"line {line}, field 'variations.follow_ups': variation two: the input and its 2 follow-up(s)" in shown
    text = GRID + user + "  org: bogus\n"
    shown = _refused(tmp_path, text, capsys)
    line = text.splitlines().index("  org: bogus") + 1
    assert f"line {line}, field 'simulated_user.org': unknown org 'bogus'" in shown and "--org" not in shown


def test_a_retired_simulated_user_is_refused_before_any_job(tmp_path, capsys) -> None:
    """Issue 42: a retired model as the simulated user was only warned about; three jobs were sent, then exit 2."""
    user = "simulated_user:\n  model: claude-3-5-sonnet-20241022\n  instructions: Ask.\n"
    text = GRID + user
    shown = _refused(tmp_path, text, capsys)
    line = text.splitlines().index("  model: claude-3-5-sonnet-20241022") + 1
    assert f"line {line}" in shown and "was retired by anthropic on 2025-10-22" in shown, shown


@pytest.mark.parametrize("kind", ["int", "float", None])
def test_a_number_metric_without_its_range_is_refused_before_anything_is_sent(tmp_path, capsys, kind) -> None:
    """No interval of a mean is valid for values without a bound: the one fitted to the values seen covered 0.92
    on zero-inflated counts (issue 47's audit). A number metric (float by default) must say its range."""
    typed = f"    type: {kind}\n" if kind else ""
    metric = f"metrics:\n  risk:\n    source: answer\n    regex: 'risk: (\\d+)'\n{typed}"
    shown = _refused(tmp_path, GRID + metric, capsys)
    assert "field 'metrics.risk'" in shown and "a number metric needs range: [low, high]" in shown


def test_a_yes_no_or_category_metric_needs_no_range(tmp_path, capsys) -> None:
    metric = "metrics:\n  risky:\n    source: answer\n    regex: 'risky: (yes|no)'\n    type: bool\n"
    experiment = tmp_path / "exp.yaml"
    experiment.write_text(GRID + metric)
    assert speceval_main(["run", str(experiment), "--offline", "--dry-run"]) == 0, capsys.readouterr().err
