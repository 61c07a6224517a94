"""speceval: measure how well LLMs follow a behaviour specification, through provider batch APIs.

The public API. Vendor SDKs are imported only when a provider is used, so `import speceval` needs none of them.
"""

from speceval.batch.engine import BatchEngine, EngineOptions
from speceval.batch.model import BatchedModel, GenerationParams, ProviderLimits
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
    Usage,
)
from speceval.batch.store import RunStore
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
from speceval.inputs import InputSet, PromptItem, load_inputs
from speceval.manifest import RunManifest
from speceval.pipelines.candidates import Candidate, resolve_candidates
from speceval.pipelines.compliance import BatchedComplianceJudge, CandidateSummary
from speceval.pipelines.generation import BatchedGenerationPipeline, GenerationConfig
from speceval.pipelines.judge_run import JudgeOutcome, JudgeSettings
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
    "create_batched_model",
    "load_inputs",
    "load_spec",
    "register_provider",
    "resolve_candidates",
    "resolve_org",
    "unregister_provider",
]
