"""speceval: measure how well LLMs follow a behaviour specification, through provider batch APIs.

The public API. Vendor SDKs are imported only when a provider is used, so `import speceval` needs none of them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the names as mypy and IDEs see them; at run time each is imported on first use
    from speceval.analysis.frames.answers import read_answers
    from speceval.analysis.frames.tables import report_tables
    from speceval.analysis.frames.verdicts import read_rankings, read_verdicts
    from speceval.batch.engine import BatchEngine, EngineOptions
    from speceval.batch.manifest import RunManifest
    from speceval.batch.model import BatchedModel, ProviderLimits
    from speceval.batch.progress import EngineObserver, EngineSummary, StopReason
    from speceval.batch.records import (
        BatchRecord,
        GenericHandle,
        JobState,
        Outcome,
        RemoteJob,
        RequestError,
        RequestOutcome,
        ResultRecord,
        SubmissionIntent,
    )
    from speceval.batch.store import RunStore
    from speceval.engines.factory import build_model
    from speceval.errors import (
        BudgetExceeded,
        ConfigError,
        InputError,
        MissingCredentialsError,
        ModelMismatchError,
        ProviderError,
        RunStateError,
        SpecevalError,
        TransientProviderError,
        UsageError,
    )
    from speceval.inputs import InputSet, load_inputs
    from speceval.judging.files import JudgeOutcome
    from speceval.pipelines.candidates import Candidate, resolve_candidates
    from speceval.pipelines.compliance import BatchedComplianceJudge
    from speceval.pipelines.compliance_files import CandidateSummary
    from speceval.pipelines.generation import BatchedGenerationPipeline, GenerationConfig
    from speceval.pipelines.judge_run import JudgeSettings
    from speceval.pipelines.ranking import BatchedRankingPipeline, PairSummary
    from speceval.providers.registry import (
        ENTRY_POINT_GROUP,
        ProviderEntry,
        create_batched_model,
        register_provider,
        resolve_org,
        unregister_provider,
    )
    from speceval.spec import Specification, Statement, load_spec
    from speceval.wire.params import GenerationParams
    from speceval.wire.prompt import PromptItem
    from speceval.wire.usage import Usage

# name → module: `import speceval` imports none of them (pydantic models, the engine and the pipelines take
# a second to build), so a command's --help and a script that needs one class stay fast.
_EXPORTS: dict[str, str] = {
    "BatchEngine": "speceval.batch.engine",
    "BatchRecord": "speceval.batch.records",
    "BatchedComplianceJudge": "speceval.pipelines.compliance",
    "BatchedGenerationPipeline": "speceval.pipelines.generation",
    "BatchedModel": "speceval.batch.model",
    "BatchedRankingPipeline": "speceval.pipelines.ranking",
    "BudgetExceeded": "speceval.errors",
    "Candidate": "speceval.pipelines.candidates",
    "CandidateSummary": "speceval.pipelines.compliance_files",
    "ConfigError": "speceval.errors",
    "ENTRY_POINT_GROUP": "speceval.providers.registry",
    "EngineObserver": "speceval.batch.progress",
    "EngineOptions": "speceval.batch.engine",
    "EngineSummary": "speceval.batch.progress",
    "GenerationConfig": "speceval.pipelines.generation",
    "GenerationParams": "speceval.wire.params",
    "GenericHandle": "speceval.batch.records",
    "InputError": "speceval.errors",
    "InputSet": "speceval.inputs",
    "JobState": "speceval.batch.records",
    "JudgeOutcome": "speceval.judging.files",
    "JudgeSettings": "speceval.pipelines.judge_run",
    "MissingCredentialsError": "speceval.errors",
    "ModelMismatchError": "speceval.errors",
    "Outcome": "speceval.batch.records",
    "PairSummary": "speceval.pipelines.ranking",
    "PromptItem": "speceval.wire.prompt",
    "ProviderEntry": "speceval.providers.registry",
    "ProviderError": "speceval.errors",
    "ProviderLimits": "speceval.batch.model",
    "RemoteJob": "speceval.batch.records",
    "RequestError": "speceval.batch.records",
    "RequestOutcome": "speceval.batch.records",
    "ResultRecord": "speceval.batch.records",
    "RunManifest": "speceval.batch.manifest",
    "RunStateError": "speceval.errors",
    "RunStore": "speceval.batch.store",
    "SpecevalError": "speceval.errors",
    "Specification": "speceval.spec",
    "Statement": "speceval.spec",
    "StopReason": "speceval.batch.progress",
    "SubmissionIntent": "speceval.batch.records",
    "TransientProviderError": "speceval.errors",
    "Usage": "speceval.wire.usage",
    "UsageError": "speceval.errors",
    "build_model": "speceval.engines.factory",
    "create_batched_model": "speceval.providers.registry",
    "load_inputs": "speceval.inputs",
    "load_spec": "speceval.spec",
    "read_answers": "speceval.analysis.frames.answers",
    "read_rankings": "speceval.analysis.frames.verdicts",
    "read_verdicts": "speceval.analysis.frames.verdicts",
    "register_provider": "speceval.providers.registry",
    "report_tables": "speceval.analysis.frames.tables",
    "resolve_candidates": "speceval.pipelines.candidates",
    "resolve_org": "speceval.providers.registry",
    "unregister_provider": "speceval.providers.registry",
}


def __getattr__(name: str) -> Any:
    """Import an exported name on first use (PEP 562)."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'speceval' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])


__version__ = "0.1.0"

__all__ = [
    "BatchEngine",
    "BatchRecord",
    "BatchedComplianceJudge",
    "BatchedGenerationPipeline",
    "BatchedModel",
    "BatchedRankingPipeline",
    "BudgetExceeded",
    "Candidate",
    "CandidateSummary",
    "ConfigError",
    "ENTRY_POINT_GROUP",
    "EngineObserver",
    "EngineOptions",
    "EngineSummary",
    "GenerationConfig",
    "GenerationParams",
    "GenericHandle",
    "InputError",
    "InputSet",
    "JobState",
    "JudgeOutcome",
    "JudgeSettings",
    "MissingCredentialsError",
    "ModelMismatchError",
    "Outcome",
    "PairSummary",
    "PromptItem",
    "ProviderEntry",
    "ProviderError",
    "ProviderLimits",
    "RemoteJob",
    "RequestError",
    "RequestOutcome",
    "ResultRecord",
    "RunManifest",
    "RunStateError",
    "RunStore",
    "SpecevalError",
    "Specification",
    "Statement",
    "StopReason",
    "SubmissionIntent",
    "TransientProviderError",
    "Usage",
    "UsageError",
    "__version__",
    "build_model",
    "create_batched_model",
    "load_inputs",
    "load_spec",
    "read_answers",
    "read_rankings",
    "read_verdicts",
    "register_provider",
    "report_tables",
    "resolve_candidates",
    "resolve_org",
    "unregister_provider",
]
