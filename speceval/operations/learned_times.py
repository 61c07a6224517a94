"""What `tier: auto` learns from an output folder before it plans: the turnaround of the batch jobs finished there
and the seconds its finished flex and standard calls took (docs/service-tiers.md#auto-and-the-plan).

Kept out of `operations/runs.py`, which the report path reads: this module joins those runs to the tier planner
(an engine), which the report must not load."""

from __future__ import annotations

from pathlib import Path

from speceval.engines.tier_plan import TierTimes, learned_times
from speceval.operations.runs import finished_jobs, realtime_call_seconds


def learned_here(times: TierTimes, folder: Path, hour: float | None = None) -> TierTimes:
    """`times` with what the finished work at or below `folder` says (each expectation where it has some), on the
    clock of `hour` seconds (default `$SPECEVAL_HOUR_SECONDS` or 3600)."""
    return learned_times(times, finished_jobs(folder), realtime_call_seconds(folder), hour)
