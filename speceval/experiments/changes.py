"""Which settings of an experiment file may change once the experiment has started, and what changed.

A started experiment's folder holds paid-for runs named by its plan. Settings that decide what is sent (models,
specs, variations, max_tokens, batch size, ...) must stay, or the folder would mix two experiments; settings that
only decide how much may be spent, how often jobs are polled, or what the report shows may change between runs:
raising `budget_usd` after a budget stop is how a study continues. `experiment.json` keeps the settings the
folder was last run with, so a refused change names each key and its old and new value.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from speceval.experiments.config import ExperimentConfig

REPORT_ONLY_KEYS = frozenset({"labels", "min_canary_accuracy", "metrics", "health"})
"""Experiment keys that change only what the report shows: adding human labels after a run is the normal order."""

CHANGEABLE_KEYS = REPORT_ONLY_KEYS | {
    "budget_usd",
    "cost_per_run_limit",
    "engine.poll_interval",
    # the card's lines decide only what the headline shows; what it re-sends (retest, paraphrases) stays
    "judge_card.min_canary_accuracy",
    "judge_card.min_retest_agreement",
    "judge_card.max_wording_excess",
    "judge_card.min_human_kappa",
    "judge_card.min_human_accuracy",
}
"""Keys (dotted: `engine.poll_interval`) a started experiment may change without a new output_dir."""


def settings_of(config: ExperimentConfig) -> dict[str, Any]:
    """The file's settings as JSON values (what experiment.json records and later runs compare with)."""
    return config.model_dump(mode="json")


def changed_keys(before: dict[str, Any], after: dict[str, Any]) -> dict[str, tuple[Any, Any]]:
    """Every dotted key whose value differs: key → (old, new). Mappings are compared key by key and lists entry by
    entry (`candidates[1].base_url`), so a refusal names the one field that changed, not a whole list."""
    changed: dict[str, tuple[Any, Any]] = {}
    for key in sorted(set(before) | set(after)):
        changed.update(_differences(key, before.get(key), after.get(key)))
    return changed


def _differences(key: str, old: Any, new: Any) -> dict[str, tuple[Any, Any]]:
    if isinstance(old, dict) and isinstance(new, dict):
        return {f"{key}.{inner}": values for inner, values in changed_keys(old, new).items()}
    if isinstance(old, list) and isinstance(new, list):
        changed: dict[str, tuple[Any, Any]] = {}
        for index in range(max(len(old), len(new))):
            changed.update(
                _differences(
                    f"{key}[{index}]",
                    old[index] if index < len(old) else None,
                    new[index] if index < len(new) else None,
                )
            )
        return changed
    return {} if old == new else {key: (old, new)}


def _changeable(key: str) -> bool:
    top = key.split(".", 1)[0].split("[", 1)[0]
    return key in CHANGEABLE_KEYS or top in REPORT_ONLY_KEYS


def refused_changes(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """The changes a started experiment may not take, each as `key: old -> new` (empty: every change is allowed)."""
    return [
        f"{key}: {' -> '.join(_shown(old, new))}"
        for key, (old, new) in changed_keys(before, after).items()
        if not _changeable(key)
    ]


_SHOWN = 80
"""Characters of a value a refusal shows."""


def _shown(old: Any, new: Any) -> tuple[str, str]:
    """Both values as text; two long texts are shown from a little before where they first differ, so the two sides
    never read the same (a long prompt changed near its end was shown as two equal cut-off texts)."""
    texts = ["(not set)" if value is None else repr(value) for value in (old, new)]
    if all(len(text) <= _SHOWN for text in texts):
        return texts[0], texts[1]
    first = next((i for i, (a, b) in enumerate(zip(*texts, strict=False)) if a != b), min(map(len, texts)))
    start = max(0, first - 20)

    def cut(text: str) -> str:
        return ("..." if start else "") + text[start : start + _SHOWN] + ("..." if len(text) > start + _SHOWN else "")

    return cut(texts[0]), cut(texts[1])


def grid_digest(config: ExperimentConfig) -> str:
    """A hash of everything in the experiment file but the report-only keys (what folders started before
    experiment.json kept the settings are compared by)."""
    # Without a judge card the digest is the one folders started before the card existed were recorded with.
    unset = {"judge_card"} if config.judge_card is None else set()
    settings = config.model_dump(mode="json", exclude=set(REPORT_ONLY_KEYS) | unset)
    return hashlib.sha256(json.dumps(settings, sort_keys=True).encode("utf-8")).hexdigest()
