"""Run the realtime engine against the emulator through the real SDKs (shared by the realtime tests)."""

from __future__ import annotations

from pathlib import Path

from speceval.batch.engine import EngineOptions
from speceval.batch.model import GenerationParams
from speceval.batch.progress import EngineSummary
from speceval.batch.prompt import PromptItem
from speceval.batch.store import RunStore
from speceval.emulator import Emulator
from speceval.realtime import RateLimits, RealtimeEngine, RealtimeModel, RealtimeOptions
from speceval.realtime.clients import AnthropicMessagesModel, GeminiGenerateModel, OpenAIChatModel

KEY = "sk-test-realtime-0123456789"


def items(count: int, statements: int = 4, marker_every: int = 0) -> list[PromptItem]:
    """`count` distinct prompts spread over a few statements (every `marker_every`-th one asks for an error)."""
    out = []
    for n in range(count):
        text = f"prompt number {n}: what does the spec say?"
        if marker_every and n % marker_every == marker_every - 1:
            text += " [[emulator:error]]"
        out.append(PromptItem(statement_id=f"s{n % statements}", original_index=n // statements, input_text=text))
    return out


def model(
    emu: Emulator,
    provider: str = "openai",
    limits: RateLimits | None = None,
    **option_overrides: float,
) -> RealtimeModel:
    """A realtime adapter pointed at the emulator, with fast retries."""
    options = RealtimeOptions(
        limits=limits or RateLimits(max_concurrency=8),
        retry_initial_delay=0.05,
        request_timeout=10.0,
        **option_overrides,  # type: ignore[arg-type]
    )
    params = GenerationParams(max_tokens=64)
    if provider == "anthropic":
        return AnthropicMessagesModel("claude-test", params, options, api_key=KEY, base_url=emu.anthropic_base_url)
    if provider == "gemini":
        return GeminiGenerateModel("gemini-test", params, options, api_key=KEY, base_url=emu.gemini_base_url)
    return OpenAIChatModel(
        "org/open-model", params, options, api_key=KEY, base_url=emu.openai_base_url, org="openai-compatible"
    )


def run(model: RealtimeModel, run_dir: Path, prompts: list[PromptItem], max_attempts: int = 3) -> EngineSummary:
    """Run the engine to the end over `run_dir`."""
    engine = RealtimeEngine(model, RunStore(run_dir), EngineOptions(max_attempts=max_attempts))
    return engine.run(prompts)
