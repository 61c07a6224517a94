"""`import speceval` is cheap (names are imported on first use) and every exported name resolves."""

from __future__ import annotations

import subprocess
import sys

import speceval


def test_every_exported_name_resolves_to_the_object_of_its_module() -> None:
    from speceval.pipelines.generation import BatchedGenerationPipeline

    assert speceval.__all__ == sorted(speceval.__all__)
    missing = [name for name in speceval.__all__ if not hasattr(speceval, name)]
    assert missing == []
    assert speceval.BatchedGenerationPipeline is BatchedGenerationPipeline
    assert set(dir(speceval)) >= set(speceval.__all__)


def test_import_speceval_builds_no_model_and_loads_no_sdk() -> None:
    probe = (
        "import sys, speceval; heavy = [m for m in ('pydantic', 'speceval.batch.records', 'openai', "
        "'anthropic', 'google.genai', 'numpy') if m in sys.modules]; print(','.join(heavy))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.strip() == ""
    unknown = subprocess.run(
        [sys.executable, "-c", "import speceval; speceval.NoSuchThing"], capture_output=True, text=True, timeout=60
    )
    assert unknown.returncode == 1 and "has no attribute 'NoSuchThing'" in unknown.stderr
