"""The round trip Inspect → speceval → Inspect: when the answers a judge run judged were an Inspect log's
(`speceval.pipelines.inspect_logs`: the judge run's `run.json` names the log or its folder as its inputs), the
export gives them back as Inspect had them: the model with its provider prefix (`openai/gpt-4o`, where speceval's
candidate is `gpt-4o`), the epochs in one log (each answer a sample per epoch, `sample.epoch` the run), and the
samples speceval did not judge because they had no answer (an error, a limit) as Inspect wrote them, unscored.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from speceval.pipelines.inspect_logs import exported_run, inspect_logs_in, model_name, read_log

if TYPE_CHECKING:
    from inspect_ai.log import EvalSample


@dataclass(frozen=True)
class InspectSource:
    """The Inspect logs a candidate's answers came from, and the model as Inspect named it."""

    logs: tuple[Path, ...]
    model: str
    epochs: int

    def unanswered(self, epochs: set[int]) -> list[EvalSample]:
        """The model's samples of `epochs` that have no answer speceval could judge (`error`, or no output), as
        Inspect wrote them (their scores dropped: they are not speceval's)."""
        found = []
        for path in self.logs:
            log = read_log(path)
            if log.eval.model != self.model:
                continue
            for sample in log.samples or []:
                answered = sample.output is not None and bool(sample.output.completion)
                if sample.epoch in epochs and (sample.error is not None or not answered):
                    found.append(sample.model_copy(update={"scores": None}))
        return found


def inspect_source(candidate_run: Path | None, candidate: str) -> InspectSource | None:
    """The Inspect logs behind a judge run's answers (its recorded inputs), None when they were not Inspect's (a
    generation run, or logs that are gone)."""
    if candidate_run is None or not candidate_run.exists() or (candidate_run / "run.json").is_file():
        return None
    logs = inspect_logs_in(candidate_run)
    headers = {log: read_log(log, header_only=True) for log in logs}
    mine = [log for log, header in headers.items() if model_name(header.eval.model) == candidate]
    if not mine:
        return None
    # Inspect's epochs, or speceval's own export of several runs read back (a log per run, at epoch 1): the export
    # wrote their runs as epochs under `config.epochs` 1, beside samples of epoch 2 (its header said one epoch).
    epochs = max(max(headers[log].eval.config.epochs or 1, exported_run(headers[log]) or 1) for log in mine)
    return InspectSource(logs=tuple(mine), model=headers[mine[0]].eval.model, epochs=epochs)
