"""What the library tests share: a generation config over a spec and inputs written into the test's folder."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from speceval import GenerationConfig
from tests.conftest import write_inputs, write_spec


def generation_config(tmp_path: Path, statements: dict[str, list[str]], **fields: Any) -> GenerationConfig:
    """A config for `statements` (spec and inputs written under `tmp_path`); `fields` set or override the rest."""
    values: dict[str, Any] = {
        "spec_path": write_spec(tmp_path / "spec.jsonl", list(statements)),
        "inputs_dir": write_inputs(tmp_path / "inputs", statements),
        "output_base_dir": tmp_path / "out",
    }
    return GenerationConfig(**{**values, **fields})
