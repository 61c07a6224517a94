"""The realtime path: rate-limited concurrent calls producing the same run directory as a batch run.

`make_engine` is the one place that picks the engine for a model: a `RealtimeModel` gets a `RealtimeEngine`,
a `BatchedModel` the `BatchEngine`. Pipelines call it instead of constructing an engine themselves.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Union

from speceval.batch.engine import BatchEngine, EngineOptions
from speceval.batch.model import BatchedModel
from speceval.batch.progress import EngineObserver
from speceval.batch.store import RunStore
from speceval.realtime.engine import RealtimeEngine
from speceval.realtime.limiter import RateLimiter, RateLimits
from speceval.realtime.model import CallFailed, Completion, RealtimeModel, RealtimeOptions

if TYPE_CHECKING:
    from speceval.raydata.model import RayModel

AnyModel = Union[BatchedModel, RealtimeModel, "RayModel"]


def make_engine(
    model: AnyModel,
    store: RunStore,
    options: EngineOptions | None = None,
    observer: EngineObserver | None = None,
) -> BatchEngine | RealtimeEngine:  # RayEngine is a RealtimeEngine
    """The engine that drives `model`: realtime for a `RealtimeModel`, Ray for a `RayModel`, batch otherwise."""
    from speceval.raydata.engine import RayEngine  # imports nothing of Ray itself until a run starts
    from speceval.raydata.model import RayModel

    if isinstance(model, RayModel):
        return RayEngine(model, store, options, observer)
    if isinstance(model, RealtimeModel):
        return RealtimeEngine(model, store, options, observer)
    return BatchEngine(model, store, options, observer)


__all__ = [
    "AnyModel",
    "CallFailed",
    "Completion",
    "RateLimiter",
    "RateLimits",
    "RealtimeEngine",
    "RealtimeModel",
    "RealtimeOptions",
    "make_engine",
]
