"""Custom metrics: numbers (or categories) extracted from answers, transcripts or a judge's answers by a regex or a
JSON path, summarised per spec, candidate and variation with intervals clustered by input (an input is its spec,
statement and text: two specs that share statement ids are never pooled, nor are their inputs one cluster).

An answer where the pattern does not match, the JSON does not parse, the path is absent or the value is not of the
metric's type is `missing`: counted, never 0, because a 0 that was never said would move every mean toward it.

Sources: `answer` (a generation record's `output_text`: a conversation's last answer), `transcript` (every
assistant turn of a conversation, joined by blank lines; a single answer otherwise), `judge:<model>` (that judge's
raw answers on the candidates' answers, from its compliance verdict files).
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from speceval.analysis.reading.grid_place import grid_place
from speceval.analysis.reading.load import locate
from speceval.analysis.reading.rows import UNKNOWN
from speceval.analysis.statistics.clustered import clustered_mean, mean_interval, rate_interval
from speceval.analysis.statistics.registry import method
from speceval.errors import InputError
from speceval.judging.card_files import CARD_DIR
from speceval.metric_spec import MetricSpec


class MetricRow(BaseModel):
    """One metric for one spec, candidate and variation (a category metric: one row per category, mean = its
    share)."""

    spec: str
    metric: str
    source: str = Field(description="what the values were read from: answer, transcript or judge:<model>")
    candidate: str
    variation: str
    n: int = Field(description="answers with a value")
    missing: int = Field(description="answers without one (no match, no such key, not of the type)")
    mean: float | None
    sd: float | None
    ci_low: float | None
    ci_high: float | None
    category: str | None = None
    ci_method: str | None = None


class _Observation(BaseModel):
    spec: str
    candidate: str
    variation: str
    cluster: tuple[str, str, str]
    stratum: tuple[str, str]
    text: str | None


def metric_table(paths: Sequence[Path], metrics: Mapping[str, MetricSpec]) -> list[MetricRow]:
    """Every metric per spec, candidate and variation, from the runs under `paths`."""
    rows: list[MetricRow] = []
    for name, metric in metrics.items():
        groups: dict[tuple[str, str, str], list[tuple[_Observation, object | None]]] = defaultdict(list)
        for seen in _observations(paths, metric.source):
            groups[(seen.spec, seen.candidate, seen.variation)].append((seen, metric.extract(seen.text)))
        # Without `range:`, a number metric's interval is bounded by the range its values were seen over in every
        # cell (an all-zero cell beside cells that scored gets an interval, not a point).
        numbers = [float(v) for pairs in groups.values() for _, v in pairs if isinstance(v, int | float)]
        span = (min(numbers), max(numbers)) if numbers and metric.range is None else None
        for (spec, candidate, variation), found in sorted(groups.items()):
            key = {
                "spec": spec,
                "metric": name,
                "source": metric.source,
                "candidate": candidate,
                "variation": variation,
            }
            rows += _summarise(key, metric, found, span)
    return rows


def _summarise(
    key: dict[str, str],
    spec: MetricSpec,
    found: list[tuple[_Observation, object | None]],
    seen: tuple[float, float] | None = None,
) -> list[MetricRow]:
    present = [(seen, value) for seen, value in found if value is not None]
    missing = len(found) - len(present)
    clusters = [seen.cluster for seen, _ in present]
    strata = {seen.cluster: seen.stratum for seen, _ in present}
    if spec.type == "category":
        counts = Counter(str(value) for _, value in present)
        result = []
        for category in sorted(counts):
            values = [float(str(value) == category) for _, value in present]
            share = rate_interval(values, clusters, strata)
            result.append(
                MetricRow(
                    **key,
                    n=len(present),
                    missing=missing,
                    mean=counts[category] / len(present),
                    sd=None,
                    ci_low=share[0] if share else None,
                    ci_high=share[1] if share else None,
                    ci_method=share[2] if share else None,
                    category=category,
                )
            )
        return result or [MetricRow(**key, n=0, missing=missing, mean=None, sd=None, ci_low=None, ci_high=None)]
    values = [float(value) for _, value in present]  # type: ignore[arg-type]
    estimate = clustered_mean(values, clusters, strata) if values else None
    interval: tuple[float, float, str] | tuple[float, float] | None = (
        (
            rate_interval(values, clusters, strata)
            if spec.type == "bool"
            else mean_interval(values, clusters, strata, range=spec.range, seen=seen)
        )
        if len(values) > 1
        else None
    )
    mean = sum(values) / len(values) if values else None
    sd = (
        (sum((v - mean) ** 2 for v in values) / (len(values) - 1)) ** 0.5
        if mean is not None and len(values) > 1
        else None
    )
    return [
        MetricRow(
            **key,
            n=len(values),
            missing=missing,
            mean=estimate.mean if estimate else mean,
            sd=sd,
            ci_low=interval[0] if interval else None,
            ci_high=interval[1] if interval else None,
            ci_method=(interval[2] if len(interval) > 2 else _method(spec)) if interval else None,
        )
    ]


def _method(spec: MetricSpec) -> str:
    """The method text of a number metric's interval, from the registry."""
    if spec.range is not None:
        return method("bounded_mean", low=spec.range[0], high=spec.range[1])
    return method("mean")


def _observations(paths: Sequence[Path], source: str) -> Iterator[_Observation]:
    if source.startswith("judge:"):
        yield from _judge_observations(paths, source.removeprefix("judge:"))
        return
    for file, records in _results_files(paths):
        if not isinstance(records, list) or not all(isinstance(r, dict) and "output_text" in r for r in records):
            continue  # not a generation run's results
        manifest = run_manifest(file.parent.parent)
        if manifest.get("kind") == "generation_round":
            continue  # a conversation round's own engine records (its run's results/ holds the conversations)
        candidate = str(manifest.get("model_name", file.parent.parent.name))
        spec = answers_spec(file, manifest)
        variation = locate(file).variation
        for record in records:
            if record.get("outcome") not in (None, "succeeded"):
                continue  # an answer that never came is no observation of the metric
            statement = str(record.get("statement_id", file.stem))
            yield _Observation(
                spec=spec,
                candidate=candidate,
                variation=variation,
                cluster=(spec, statement, str(record.get("input_text"))),
                stratum=(spec, statement),
                text=_transcript(record) if source == "transcript" else record.get("output_text"),
            )


def _judge_observations(paths: Sequence[Path], judge: str) -> Iterator[_Observation]:
    for file, data in _results_files(paths):
        metadata = data.get("metadata") if isinstance(data, dict) else None
        if not isinstance(data, dict) or not isinstance(metadata, dict) or metadata.get("judge") != judge:
            continue
        if "canaries" in data or "rankings" in data:
            continue  # the judge's canary checks or its rankings: no verdict on one candidate's answer to observe
        entries = data.get("results")
        if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
            raise InputError(
                file, "a judge's results file whose `results` is not a list of verdict objects", field="results"
            )
        variation = locate(file).variation
        spec, statement = str(metadata.get("spec")), str(metadata.get("statement_id"))
        for entry in entries:
            yield _Observation(
                spec=spec,
                candidate=str(metadata.get("model")),
                variation=variation,
                cluster=(spec, statement, str(entry.get("input"))),
                stratum=(spec, statement),
                text=entry.get("raw_judge_response"),
            )


def _results_files(paths: Sequence[Path]) -> Iterator[tuple[Path, object]]:
    """Every `results/*.json` under `paths` with its parsed content; an unreadable one is an error naming it (a
    metric silently computed without some answers would describe other data than it says)."""
    for path in paths:
        for file in sorted(Path(path).rglob("results/*.json")):
            if CARD_DIR in file.relative_to(path).parts:
                continue  # the judge card's samples and re-sent verdicts (speceval.judging.card_files)
            try:
                data = json.loads(file.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                raise InputError(file, f"not a readable JSON results file: {exc}") from None
            yield file, data


def _transcript(record: dict[str, Any]) -> str | None:
    conversation = record.get("conversation")
    if isinstance(conversation, list):
        turns = [m.get("content") for m in conversation if isinstance(m, dict) and m.get("role") == "assistant"]
        return "\n\n".join(str(t) for t in turns if t is not None)
    return record.get("output_text")


def answers_spec(file: Path, manifest: dict[str, Any]) -> str:
    """The spec a generation run answered: its manifest's `spec_name`; for a folder without one (copied, or the
    original's), the spec folder of an experiment above it, else `unknown`."""
    if isinstance(manifest.get("spec_name"), str):
        return str(manifest["spec_name"])
    place = grid_place(file)
    return place.spec_folder if place is not None else UNKNOWN


def run_manifest(run_dir: Path) -> dict[str, Any]:
    """The run's `run.json` ({} for a results folder without one, e.g. copied); an unreadable one is an error."""
    path = run_dir / "run.json"
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(path, f"not a readable run manifest: {exc}") from None
    return data if isinstance(data, dict) else {}
