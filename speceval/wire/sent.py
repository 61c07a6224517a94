"""The sampling settings a run's requests actually carry, as recorded in `run.json` (`parameters.sent`).

A setting asked for is not always a setting sent: Anthropic's API version 2026-10-21 refuses `temperature`, so
speceval leaves it out (see `speceval.wire.anthropic`). A report that showed the requested 0.7 for
such a run would describe requests that were never made; it shows what this module records instead.
"""

from __future__ import annotations

from typing import Any

from speceval.wire.anthropic import SAMPLING_REFUSED_FROM, sdk_api_version
from speceval.wire.params import GenerationParams

NOT_SENT = "not sent"


def settings_as_sent(provider: str, params: GenerationParams) -> dict[str, Any]:
    """`{setting: value sent}`, with `"not sent: <reason>"` for a setting asked for but not sent."""
    sent: dict[str, Any] = {"max_tokens": params.max_tokens}
    if params.temperature is None:
        sent["temperature"] = f"{NOT_SENT}: none asked for (the model's default)"
    elif provider == "anthropic":
        version = sdk_api_version()
        sent["temperature"] = (
            params.temperature
            if version < SAMPLING_REFUSED_FROM
            else (
                f"{NOT_SENT}: asked {params.temperature:g}; Anthropic API version {version} refuses sampling "
                "parameters, so the model samples at its default"
            )
        )
    else:
        sent["temperature"] = params.temperature
    if params.system_prompt is not None:
        sent["system_prompt"] = params.system_prompt
    return sent
