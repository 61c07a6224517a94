"""Open-weights models at cluster scale: speceval plans, records, maps and resumes; Ray Data runs the requests.

`--org ray` sends a run's pending requests through Ray Data LLM (`ray.data.llm.build_processor`): with
`--base-url` to any OpenAI-compatible endpoint (vLLM, SGLang, a gateway) through the HTTP processor, or with
`--vllm` to vLLM engines on the cluster's GPUs. Answers come back in blocks as Ray streams them; each block is
appended to the run's fsynced outcome journal before the next is read, so the run directory, the records, the
outcomes and `--resume` are those of every other provider.

Nothing here imports `ray` until a run starts: `pip install 'speceval[ray]'` adds it.
"""

from speceval.raydata.model import RayModel
from speceval.raydata.settings import RaySettings

__all__ = ["RayModel", "RaySettings"]
