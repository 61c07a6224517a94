"""A conversation run resumed in round 2 counts what its closed halves cost, whichever tier sent them: round 1 at
flex (realtime calls, no job records), and round 2's simulated user half closed before the kill (the runner skipped
it: neither its spend nor its jobs were counted). Found by the generation matrix (`summary_counts`: totals.jobs 6,
9 job records)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from speceval.batch.costs import PriceTable, served_tier
from speceval.batch.manifest import RunManifest
from speceval.wire.usage import Usage
from tests.study_matrix import checks_generation
from tests.study_matrix import generation_matrix as gm


def _spent(directory: Path) -> float:
    """What the answers on file in an engine directory cost at the tier that served each (batch for a job's)."""
    prices, manifest, total = PriceTable.load(), RunManifest.load(directory), 0.0
    for path in sorted((directory / "results").glob("*.json")):
        for record in json.loads(path.read_text(encoding="utf-8")):
            realtime = str(record.get("batch_id") or "").startswith("realtime")
            tier = served_tier(record.get("service_tier")) if realtime else "batch"
            usage = Usage(**record["usage"]) if record.get("usage") else None
            total += prices.cost(manifest.model_name, manifest.provider, usage, tier=tier) or 0.0 if usage else 0.0
    return total


@pytest.mark.slow
@pytest.mark.parametrize(
    ("provider", "tier", "conversation"),
    [("openai", "flex", "follow_ups"), ("anthropic", "batch", "simulated_user")],
)
def test_a_resume_in_round_2_counts_the_closed_halves(tmp_path: Path, provider, tier, conversation) -> None:
    """Killed once round 2's candidate half has sent something, then resumed with a budget below one request: the
    stop line's spend holds round 1 and round 2's user half (it said $0.0001 of flex round 1's $0.0005: a resume
    could spend past its limit by all the closed realtime rounds cost), and run.json counts the user half's jobs."""
    config = {**dict.fromkeys(gm.FEATURES, "none"), "provider": provider, "tier": tier}
    config |= {"conversation": conversation, "runs": "1", "interruption": "killed_late"}
    gm.write_inputs(tmp_path / "inputs", config)
    env = gm.environment(config, {**os.environ, "SPECEVAL_OFFLINE_TURNAROUND": "0.05"})
    args = gm.command(config, tmp_path / "inputs", tmp_path / "out")
    assert gm.generation([*args, "--dry-run"], env)[0] == 0
    run = next((tmp_path / "out").glob("*/*/*/run.json")).parent
    assert gm.killed(args, gm.slowed(env), run, late=2) == []
    closed = [run / "rounds" / "1", *([run / "rounds" / "2" / "user"] if conversation == "simulated_user" else [])]
    before = sum(_spent(directory) for directory in closed)
    code, shown = gm.generation(["--resume", str(run), "--budget-usd", "0.0001"], env)
    match = re.search(r"Stopped by the budget: spent \$([\d.]+)", shown)
    assert code == 3 and match is not None, shown[-400:]
    assert float(match.group(1)) + 5e-5 >= before > 0.0001
    assert gm.generation(["--resume", str(run)], env)[0] == 0
    assert checks_generation.summary_counts(run) == []
