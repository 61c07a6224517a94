"""The runs a report is made of, as `Source`s: what every table row's data kind (`speceval.analysis.tables.keys`)
is found from.

One source per results folder of verdicts (synthetic when the judge's run or the answers' run was offline: the
reader sets each file's flag from both), per folder of comparisons (one for each of its two candidates), per
canaries folder, and per run manifest (a generation, inputs or judge run: what `metrics.csv`, `inputs.csv` and
`costs.csv` are made of, and what a report of runs without verdicts is made of).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path, PurePosixPath

from speceval.analysis.reading.fold import FoldedVerdicts
from speceval.analysis.reading.rows import DEFAULT_VARIATION
from speceval.analysis.tables.keys import RUN, Source
from speceval.batch.manifest import RunManifest

JUDGE_KINDS = ("compliance", "ranking")


def relative(path: Path, roots: Sequence[Path]) -> str:
    """`path` relative to the folder the report was asked about that holds it (no machine-specific prefix)."""
    resolved = Path(path).resolve()
    for root in roots:
        base = Path(root).resolve()
        if resolved.is_relative_to(base):
            return resolved.relative_to(base).as_posix() or "."
    return Path(os.path.relpath(path)).as_posix()


def _run_folder(source: str) -> str:
    """The run folder of a results file given as `<run>/results/<statement>.json`."""
    return PurePosixPath(source).parent.parent.as_posix()


def verdict_sources(verdicts: FoldedVerdicts) -> Iterable[Source]:
    """A source per results folder and key of the verdicts, comparisons and canaries folded."""
    for columns in (verdicts.columns, verdicts.turn_columns):
        for f in columns.facts:
            yield Source("compliance", None, f.spec, f.judge, f.model, f.variation, _run_folder(f.source), f.synthetic)
    for r in verdicts.ranking_columns.facts:
        for candidate in (r.model_a, r.model_b):
            yield Source("ranking", None, r.spec, r.judge, candidate, r.variation, _run_folder(r.source), r.synthetic)
    for c in verdicts.canaries:
        yield Source("canary", None, c.spec, c.judge, None, None, _run_folder(c.source), c.synthetic)


def manifest_sources(manifests: Iterable[tuple[Path, RunManifest]], roots: Sequence[Path]) -> Iterable[Source]:
    """A source per run manifest: its model is the judge of a judge run, the candidate of a generation run."""
    for run_dir, manifest in manifests:
        place = manifest.parameters.get("experiment")
        variation = str(place["variation"]) if isinstance(place, dict) and "variation" in place else DEFAULT_VARIATION
        judge = manifest.model_name if manifest.kind in JUDGE_KINDS else None
        candidate = manifest.model_name if manifest.kind.startswith("generation") else None
        yield Source(
            RUN,
            manifest.kind,
            manifest.spec_name,
            judge,
            candidate,
            variation,
            relative(run_dir, roots),
            manifest.offline,
        )
