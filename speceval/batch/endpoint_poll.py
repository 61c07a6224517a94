"""How often a model's jobs are polled follows where it is served, not the `offline` flag.

A model whose client talks to a loopback address (the emulator started by hand, a local server) answers in about a
second, as the offline path's emulator does; polling it at the providers' 60 s default left a 12 s study running
for four minutes. So an engine whose poll interval was left at that default polls such a model every
`offline_poll_interval()` seconds; any interval set (`--poll-interval`, `SPECEVAL_POLL_INTERVAL`, the config's
`engine.poll_interval`, `EngineOptions(poll_interval=...)`) is used as given.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

from speceval.defaults import DEFAULT_POLL_INTERVAL
from speceval.offline import offline_poll_interval


def is_loopback(url: str | None) -> bool:
    """Whether `url` names this machine (localhost, 127.0.0.0/8, ::1)."""
    if not url:
        return False
    host = urlsplit(url if "//" in url else f"//{url}").hostname or ""
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def poll_interval_for(endpoint: str | None, poll_interval: float) -> float:
    """The interval to poll a model served at `endpoint` with, given the engine's `poll_interval`."""
    if poll_interval == DEFAULT_POLL_INTERVAL and is_loopback(endpoint):
        return min(poll_interval, offline_poll_interval())
    return poll_interval
