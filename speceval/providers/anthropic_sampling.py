"""Whether an Anthropic request may carry a sampling temperature.

API version `2026-10-21` (what the anthropic SDK 2.x sends; the SDK removed the `temperature`, `top_p` and `top_k`
arguments with it) refuses those fields with a 400 ("Extra inputs are not permitted") at any value, 1.0 included,
and models after Claude Opus 4.6 refuse them under the older `2023-06-01` too. In a Message Batch that refusal
comes back per request when the batch ends: every line `errored` a day later. So the temperature is sent only when
the installed SDK speaks the older version; otherwise it is left out, once with a warning that says so, and the
model samples at its own default.
"""

from __future__ import annotations

import logging
from typing import Any

from speceval.batch.model import GenerationParams

logger = logging.getLogger(__name__)

SAMPLING_REFUSED_FROM = "2026-10-21"
"""The first `anthropic-version` whose Messages API refuses sampling parameters."""


def sdk_api_version() -> str:
    """The `anthropic-version` header the installed SDK sends."""
    from anthropic import _constants  # lazy: `import speceval` must work without every vendor SDK

    return str(getattr(_constants, "ANTHROPIC_API_VERSION", "2023-06-01"))


def sampling_fields(params: GenerationParams, model_name: str, api_version: str | None = None) -> dict[str, Any]:
    """The sampling fields of a request for `model_name` (`{"temperature": t}` or nothing), warning when a
    temperature that was asked for cannot be sent."""
    if params.temperature is None:
        return {}
    version = api_version or sdk_api_version()
    if version < SAMPLING_REFUSED_FROM:  # ISO dates compare as strings
        return {"temperature": params.temperature}
    logger.warning(
        "%s: temperature %g is not sent: the Anthropic API version %s (anthropic SDK 2.x) refuses sampling "
        "parameters, so the model samples at its default temperature. Runs of this model that differ only in "
        "temperature send the same requests.", model_name, params.temperature, version,
    )
    return {}
