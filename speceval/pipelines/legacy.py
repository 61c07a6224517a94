"""Generation folders written by the original SpecEval, read as they are.

The original wrote three kinds of generation folders, all a folder of `<statement_id>.json` files holding a JSON
list of `{original_index, input_text, output_text[, batch_id]}` records, without a `run.json`:

* batched generation: `{base}/{spec}/{model with / → -}/{YYYYmmdd_HHMMSS}/results/`;
* Together generations converted by `scripts/convert_together_to_batch.py`:
  `data/converted_together_generations/{spec}/{model}/{stamp}/results/` (beside a `metadata/metadata.json`);
* the Google synchronous workaround (`examples/generate_google_models.py`): the same layout, no `batch_id`.

Unconverted Together runs (`batched_examples/together_batch_inference.py`) hold one `{stamp}/results.json` =
`{metadata: {model_name, ...}, results: [{statement_id, original_index, input_text, output_text}]}` instead;
`read_together_file` groups its records by statement.

Failures were written as text inside `output_text`; `legacy_outcome` maps each of those strings to the typed
outcome it stood for, so a failure is counted as one and never judged as if it were the model's answer.

A legacy folder has no manifest naming its model, so its name comes from the path the way the original laid it
out: `…/<model>/<stamp>/results` → `<model>` (the model name with '/' replaced by '-', which is also the name
the original used for its judge output folders).
"""

from __future__ import annotations

import json
import os.path
import re
from pathlib import Path
from typing import Any

from speceval.batch.records import Outcome
from speceval.errors import ConfigError, InputError

RESULTS = "results"
TOGETHER_FILE = "results.json"
# `%Y%m%d_%H%M%S`, as every original writer named its run folders (ours add `_N` when two start in one second).
_STAMP = re.compile(r"^\d{8}_\d{6}(_\d+)?$")

# In-band failure strings of the original writers, by the outcome they stood for:
#   batched pipeline (all providers): "ERROR: <...>", "ERROR: Result missing in batch output."
#   Anthropic batches: bare "EXPIRED", "CANCELLED", "UNKNOWN_STATUS: <type>"
#   Together script: "ERROR: <ExcType>: <msg>", "ERROR: Result missing"
#   Google synchronous script: "Error during generation: <exc>", "Response blocked. Reason: ..."
_MISSING_PREFIX = "ERROR: Result missing"
_EXACT = {"EXPIRED": Outcome.EXPIRED, "CANCELLED": Outcome.CANCELLED}
_ERROR_PREFIXES = ("ERROR:", "UNKNOWN_STATUS:", "Error during generation:", "Response blocked.")


def legacy_outcome(output_text: object) -> Outcome:
    """The outcome an original record stood for: `succeeded` unless its `output_text` is a failure string.

    A missing or non-string `output_text` is `errored` (the original wrote no such record on success).
    """
    if not isinstance(output_text, str):
        return Outcome.ERRORED
    if output_text in _EXACT:
        return _EXACT[output_text]
    if output_text.startswith(_MISSING_PREFIX):
        return Outcome.MISSING
    if output_text.startswith(_ERROR_PREFIXES):
        return Outcome.ERRORED
    return Outcome.SUCCEEDED


def legacy_name(results_dir: Path) -> str:
    """The model name of a legacy results folder, from its path: `…/<model>/<stamp>/results` → `<model>`.

    The folder above `results` is the run folder; when its name is a timestamp, the model is the folder above
    that, else the run folder itself names the model (`…/<model>/results`).

    Raises:
        ConfigError: the path has no component left to name the model.
    """
    # Normalise '.', '..' and a trailing slash without following symlinks: the name is the one the user wrote.
    absolute = Path(os.path.normpath(os.path.abspath(results_dir)))
    run_dir = absolute.parent if absolute.name == RESULTS else absolute
    named = run_dir.parent if _STAMP.match(run_dir.name) else run_dir
    name = named.name
    if not name or name in {".", ".."} or _STAMP.match(name):
        raise ConfigError(
            f"cannot tell the model of {results_dir} from its path (expected …/<model>/<YYYYmmdd_HHMMSS>/results); "
            "name it explicitly with the `candidates: {name: directory}` YAML key"
        )
    return name


def read_together_file(path: Path) -> dict[str, list[tuple[str, Any]]]:
    """The records of an original Together `results.json`, by statement id, each with its field path in the file.

    Raises:
        InputError: the file is unreadable, not of that shape, or a record names no statement.
    """
    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError) as exc:
        raise InputError(path, f"not a readable results file: {exc}") from None
    records = data.get("results") if isinstance(data, dict) else None
    if not isinstance(records, list):
        raise InputError(path, "a Together results file must be an object whose `results` is a list", field="results")
    grouped: dict[str, list[tuple[str, Any]]] = {}
    for position, record in enumerate(records):
        statement_id = record.get("statement_id") if isinstance(record, dict) else None
        if not isinstance(statement_id, str) or not statement_id:
            raise InputError(path, "must be a non-empty string", field=f"results.{position}.statement_id")
        grouped.setdefault(statement_id, []).append((f"results.{position}", record))
    return grouped
