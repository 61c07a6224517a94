"""The statements' texts, from the specs the judge runs recorded (each judge `run.json` names its spec's name and
path): what a person labelling an answer reads beside it (`speceval label-sheet`)."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from pathlib import Path

from speceval.batch.manifest import RunManifest
from speceval.errors import UsageError
from speceval.operations.runs import find_run_dirs
from speceval.spec import load_spec

logger = logging.getLogger(__name__)


def statement_texts(paths: Iterable[Path]) -> dict[tuple[str, str], str]:
    """(spec name, statement id) → the statement's text, for every spec a compliance run under `paths` recorded.
    A spec that cannot be read any more is named in a warning (its statements' texts stay blank)."""
    texts: dict[tuple[str, str], str] = {}
    read: set[tuple[str, str]] = set()
    for run_dir in find_run_dirs(paths):
        try:
            manifest = RunManifest.load(run_dir)
        except UsageError as exc:
            # Not a manifest this version reads (hand-made, older, damaged): said, since its texts stay blank.
            logger.warning("cannot read %s/run.json (%s): statement texts of its verdicts are left blank", run_dir, exc)
            continue
        if manifest.kind != "compliance" or (manifest.spec_name, manifest.spec_path) in read:
            continue
        read.add((manifest.spec_name, manifest.spec_path))
        try:
            spec = load_spec(manifest.spec_path)
        except (OSError, UsageError) as exc:
            logger.warning(
                "cannot read the spec %s recorded by %s (%s): its statement texts are left blank",
                manifest.spec_path,
                run_dir,
                exc,
            )
            continue
        texts.update({(manifest.spec_name, s.id): s.text for s in spec.statements})
    return texts
