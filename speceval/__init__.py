"""speceval: measure how well LLMs follow a behaviour specification, through provider batch APIs.

The public API. Vendor SDKs are imported only when a provider is used, so `import speceval` needs none of them.
"""

from speceval.batch.engine import BatchEngine, EngineOptions
from speceval.batch.model import BatchedModel, GenerationParams, ProviderLimits
from speceval.batch.progress import EngineObserver, EngineSummary, StopReason
from speceval.batch.records import (
    BatchRecord,
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
    ProviderError,
    RunStateError,
    SpecevalError,
    TransientProviderError,
    UsageError,
)
from speceval.inputs import InputSet, PromptItem, load_inputs
from speceval.manifest import RunManifest
from speceval.pipelines.compliance import BatchedComplianceJudge
from speceval.pipelines.generation import BatchedGenerationPipeline, GenerationConfig
from speceval.pipelines.judge_run import JudgeOutcome, JudgeSettings
from speceval.pipelines.ranking import BatchedRankingPipeline
from speceval.providers.registry import create_batched_model, resolve_org
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
    "ConfigError",
    "EngineObserver",
    "EngineOptions",
    "EngineSummary",
    "GenerationConfig",
    "GenerationParams",
    "InputError",
    "InputSet",
    "JobState",
    "JudgeOutcome",
    "JudgeSettings",
    "MissingCredentialsError",
    "Outcome",
    "PromptItem",
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
    "resolve_org",
]
