"""The realtime path: rate-limited concurrent calls producing the same run directory as a batch run.

Which engine drives a model is chosen in one place, `speceval.engines.factory.make_engine`.
"""

from __future__ import annotations

from speceval.realtime.engine import RealtimeEngine
from speceval.realtime.limiter import RateLimiter, RateLimits
from speceval.realtime.model import CallFailed, Completion, RealtimeModel, RealtimeOptions

__all__ = [
    "CallFailed",
    "Completion",
    "RateLimiter",
    "RateLimits",
    "RealtimeEngine",
    "RealtimeModel",
    "RealtimeOptions",
]
