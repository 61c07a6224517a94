"""Defaults and names that both the library and the commands' `--help` use, in a module that imports nothing.

A command's parser is built from this module and `speceval.ranges` only, so `--help` loads no pydantic, no SDK
and no pipeline; the library modules that own these values import them from here.
"""

from __future__ import annotations

PRICES_ENV = "SPECEVAL_PRICES"
"""The environment variable naming a price table that overrides the shipped one."""

DEFAULT_MAX_CONCURRENCY = 32
"""Requests a realtime run keeps in flight at once unless told otherwise."""

BUILT_IN_ORGS = ("openai", "anthropic", "google", "vertex", "openai-compatible", "together", "ray")
"""The built-in providers, in the order of `speceval.providers.registry.PROVIDERS` (a test keeps them equal)."""
