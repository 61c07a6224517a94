"""The inputs generator's settings from an experiment's `inputs:` block: what the `inputs` stage runs, what the
file's checks validate (`speceval.experiments.loading`) and what the dry run costs (`dry_plan`), one reading."""

from __future__ import annotations

from pathlib import Path

from speceval.batch.engine import EngineOptions
from speceval.defaults import Tier
from speceval.experiments.config import InputsBlock
from speceval.inputgen.config import InputGenerationConfig, default_rater
from speceval.providers.registry import resolve_org


def inputs_config(
    block: InputsBlock,
    spec_path: Path,
    base: Path,
    *,
    offline: bool = False,
    engine: EngineOptions | None = None,
    spec_name: str | None = None,
) -> InputGenerationConfig:
    """The inputs generator's settings from an experiment's `inputs:` block."""
    return InputGenerationConfig(
        spec_path=spec_path,
        spec_name=spec_name,
        generator_model=block.generator,
        generator_org=block.generator_org,
        rater_model=block.rater
        or default_rater(resolve_org(block.generator, block.generator_org).org, offline)
        or block.generator,
        rater_org=block.rater_org if block.rater else None,
        per_statement=block.per_statement,
        rating_threshold=block.rating_threshold,
        max_rounds=block.max_rounds,
        pairs=block.pairs if isinstance(block.pairs, list) else None,
        related_pairs=block.pairs == "related",
        output_dir=base,
        offline=offline,
        engine=engine or EngineOptions(),
        tier=block.tier.value if block.tier not in (None, Tier.BATCH) else None,
    )
