"""What the compliance and the ranking pipelines share (split from both, which had it twice): the spec and judge
they are set up with, the judge connected once, and every target judged in one polling loop."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar

from speceval.batch.progress import EngineObserver, EngineSummary
from speceval.engines.factory import AnyModel
from speceval.engines.models import judge_model
from speceval.pipelines.answer_prompts import JudgeSource
from speceval.pipelines.judge_run import JudgeSettings, JudgeTarget, judge_dir, run_targets, write_manifest
from speceval.pipelines.judge_setup import PromptSetup
from speceval.providers.registry import resolve_org
from speceval.spec import Specification, load_spec


class JudgePipeline:
    """The base of `BatchedComplianceJudge` and `BatchedRankingPipeline`: loads the spec, resolves the judge's
    provider and names the output directory (after `label`, the judge as its directory is named)."""

    kind: ClassVar[str]
    """The pipeline its run manifests name ("compliance" or "ranking")."""

    def __init__(self, settings: JudgeSettings, label: str) -> None:
        self.settings = settings
        self.spec: Specification = load_spec(settings.spec_path)
        self.spec_name = settings.spec_name or self.spec.name
        self.provider = resolve_org(settings.judge_model, settings.judge_org).org
        self.output_dir = judge_dir(settings.output_dir_base, self.spec_name, label)

    @contextmanager
    def connect(self, model: AnyModel | None = None, **provider_options: Any) -> Iterator[AnyModel]:
        """The judge: `model` once checked against the settings, else built from them (with `provider_options`)."""
        with judge_model(self.settings, self.provider, self.output_dir, model, provider_options) as judge:
            yield judge

    def _run_target(
        self, run_dir: Path, source: JudgeSource, inputs_path: str, identity: dict[str, Any], setup: PromptSetup
    ) -> JudgeTarget:
        """A run directory of this judge, rendered with `setup`'s salt; a new run saves that salt in this judge's
        own directory (`output_dir`), where every other run under it draws the same one."""
        return JudgeTarget(run_dir, source, inputs_path, identity, salt=setup.salt, salt_home=self.output_dir)

    def judge_all(
        self,
        targets: Sequence[JudgeTarget],
        model: AnyModel | None,
        observer_for: Callable[[JudgeTarget], EngineObserver | None] | None,
    ) -> list[EngineSummary]:
        """Write each target's manifest, then submit (or resume) and poll every target's jobs in one loop."""
        with self.connect(model) as judge:
            manifests = [
                write_manifest(t, self.kind, self.settings, self.spec_name, self.spec.sha256, self.provider)
                for t in targets
            ]
            return run_targets(judge, targets, manifests, self.settings.engine, observer_for)
