"""`speceval status` at 80 columns: long model names, run folders and job ids wrap; none is cut short."""

from __future__ import annotations

import subprocess
import sys

from rich.console import Console

from speceval.cli.commands.cost_view import cost_view
from speceval.cli.commands.status_view import status_view
from speceval.operations.costs import RunCost
from speceval.operations.jobs import JobRow
from tests import forked
from tests.conftest import REPO, cli_env, run_generation, write_inputs, write_spec

LONG_MODEL = "ft:gpt-4.1-mini-2025-04-14:acme-research:spec-compliance-v2:BXq9Z3"
CLAUDE = "claude-sonnet-4-6"


def row(model: str, provider: str, batch_id: str, run_dir: str, **extra: object) -> JobRow:
    fields: dict[str, object] = dict(
        run_dir=run_dir,
        kind="generation",
        provider=provider,
        model=model,
        batch_id=batch_id,
        state="in_progress",
        raw_state="in_progress",
        requests=50_000,
        outcome_counts={"succeeded": 49_998, "errored": 2},
        collected=False,
        age_hours=12.5,
        cost_usd=None,
        estimated_cost_usd=1234.5678,
    )
    fields.update(extra)
    return JobRow.model_validate(fields)


def unfolded(text: str) -> str:
    """The rendered text with line breaks undone, as a reader's eye follows a wrapped name."""
    return "".join(line.rstrip() for line in text.splitlines())


def test_every_model_name_and_job_id_survives_whole_at_80_columns():
    rows = [
        row(
            LONG_MODEL,
            "openai",
            "batch_68a0f3c2e4b0819090a1c5d3b2e3f4a5",
            f"/data/batched_generations/openai/{LONG_MODEL.replace(':', '-')}/20261123_190800",
        ),
        row(
            CLAUDE,
            "anthropic",
            "msgbatch_01HkcTjaV5uDC8jWR4ZsR6ZG",
            f"/data/batched_generations/openai/{CLAUDE}/20261123_190801",
            note="refresh failed: anthropic: retrieve batch failed (HTTP 529): overloaded",
        ),
        row(
            "claude-haiku-4-5-20251001",
            "anthropic",
            "msgbatch_01AbcTjaV5uDC8jWR4ZsR6ZH",
            "/data/batched_generations/openai/claude-haiku-4-5-20251001/20261123_190802",
        ),
    ]
    console = Console(width=80, record=True, soft_wrap=True)
    console.print(status_view(rows), soft_wrap=False)
    text = console.export_text()
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "…" not in text
    whole = unfolded(text)
    for model in (LONG_MODEL, CLAUDE, "claude-haiku-4-5-20251001"):
        assert model in whole, model
    job_column = "".join(line.split()[0] for line in text.splitlines() if line.strip())
    for job in ("batch_68a0f3c2e4b0819090a1c5d3b2e3f4a5", "msgbatch_01HkcTjaV5uDC8jWR4ZsR6ZG"):
        assert job in job_column
    assert "(HTTP 529): overloaded" in " ".join(text.split())
    assert "≤$1,234.5678 est." in text


def test_status_command_at_columns_80_shows_the_whole_model_name(tmp_path):
    spec = write_spec(tmp_path / "spec.jsonl", ["a"])
    inputs = write_inputs(tmp_path / "inputs", {"a": ["x", "y"]})
    out = tmp_path / "out"
    done = run_generation(
        [
            "--spec-path",
            str(spec),
            "--pregenerated-inputs-dir",
            str(inputs),
            "--model-name",
            LONG_MODEL,
            "--org",
            "openai",
            "--output-base-dir",
            str(out),
            "--offline",
        ],
        cli_env(),
    )
    assert done.returncode == 0, done.stderr
    status = forked.run(
        [sys.executable, "-m", "speceval", "status", "--no-refresh", str(out)],
        cwd=REPO,
        env=cli_env(COLUMNS="80"),
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert status.returncode == 0, status.stderr
    assert max(len(line) for line in status.stdout.splitlines()) <= 80
    assert LONG_MODEL in unfolded(status.stdout)
    assert "1 job(s) in 1 run(s)" in status.stdout


def test_cost_at_80_columns_keeps_every_model_name_and_number_whole():
    def cost(model: str, provider: str, spent: float) -> RunCost:
        return RunCost(
            run_dir=f"/data/batched_generations/openai/{model.replace(':', '-')}/20261123_190800",
            kind="generation",
            provider=provider,
            model=model,
            jobs=120,
            requests=1_234_567,
            input_tokens=987_654_321,
            cached_input_tokens=123_456_789,
            output_tokens=456_789_012,
            cost_usd=spent,
            pending_estimate_usd=12_345.6789,
        )

    console = Console(width=80, record=True, soft_wrap=True)
    console.print(
        cost_view([cost(LONG_MODEL, "openai", 12_345.6789), cost(CLAUDE, "anthropic", 0.5)], "2026-11-01"),
        soft_wrap=False,
    )
    text = console.export_text()
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "…" not in text
    whole = unfolded(text)
    assert LONG_MODEL in whole and CLAUDE in whole
    for number in ("1,234,567", "987,654,321", "123,456,789", "456,789,012", "$12,345.6789", "$12,346.1789"):
        assert number in text, number
