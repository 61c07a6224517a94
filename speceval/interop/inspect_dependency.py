"""`inspect_ai`, imported only when the Inspect bridge is used: it is an optional extra (about a second to import,
and dozens of packages to install), so neither the CLI's start-up nor any other command pays for it. Each bridge
function calls `require_inspect()` first and imports inspect_ai inside its body."""

from __future__ import annotations

import importlib.util

from speceval.errors import ConfigError

INSTALL_HINT = "pip install 'speceval[inspect]'"
TESTED_RANGE = ">=0.3.285,<0.4"
"""The versions of inspect_ai the bridge is tested with (the `inspect` extra pins the same range)."""


def require_inspect() -> None:
    """Raise a ConfigError that says how to install inspect_ai when it is not installed."""
    if importlib.util.find_spec("inspect_ai") is None:
        raise ConfigError(
            f"the Inspect AI bridge needs inspect_ai ({TESTED_RANGE}), which is not installed: {INSTALL_HINT}"
        )
