"""Benchmark: judge input cost before (v1 templates) and after (cache-shaped v2 templates), per provider.

On the shipped spec (`data/specs/openai/jsonl/openai.jsonl`) and inputs (`data/inputs/openai`):

1. Two candidates answer every input, offline: the generation pipeline against the in-process emulator.
2. For each judge (OpenAI, Anthropic, Gemini) the same compliance judgements are sent twice through the batch
   engine and that provider's real SDK: once rendered with the v1 template (what speceval sent before: fence
   nonce per request, no cache marks) and once with v2 (shared part first, nonce per judge directory's salt and
   statement, Anthropic `cache_control`, OpenAI `prompt_cache_key`), one job per candidate each, one after
   the other (as the compliance pipeline's jobs run side by side).
3. Input cost is computed from the usage the emulator reported (cached reads and cache writes included) with the
   shipped price table at batch prices. The emulator models each provider's documented caching rules
   (`speceval/emulator/prompt_cache.py`: per model, across jobs, 5-minute lifetime); real hit rates depend on
   the provider's routing and on how long a batch takes.

Printed: the fraction of each v2 compliance prompt in its shared prefix (characters; the emulator counts four
characters per token), the input cost per provider before and after and their ratio, and whether every verdict
is the same. The emulator's verdicts hash what is judged (statement, examples, input, response), not the
template's wording or nonce, so "same verdicts" shows the same judgements were bought, not that a real judge is
indifferent to the reordering.

    python benchmarks/judge_cache_cost.py [--response-chars N] [--out FILE.json]

`--response-chars N` pads every candidate answer to N characters (synthetic answers are ~120 characters; real
ones are often 1,000-3,000), to show how the shares move with longer judged conversations.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from speceval.batch.costs import PriceTable  # noqa: E402
from speceval.batch.engine import BatchEngine, EngineOptions  # noqa: E402
from speceval.batch.store import RunStore  # noqa: E402
from speceval.emulator import Emulator, FaultConfig  # noqa: E402
from speceval.judging.prompts import TemplateId, new_salt, render_compliance, split_shared_prefix  # noqa: E402
from speceval.judging.verdicts import parse_compliance  # noqa: E402
from speceval.pipelines.candidates import CandidateAnswers, load_answers, resolve_candidates  # noqa: E402
from speceval.pipelines.generation import BatchedGenerationPipeline, GenerationConfig  # noqa: E402
from speceval.providers.registry import create_batched_model  # noqa: E402
from speceval.spec import Specification, load_spec  # noqa: E402
from speceval.wire.params import GenerationParams  # noqa: E402
from speceval.wire.prompt import PromptItem  # noqa: E402
from speceval.wire.usage import Usage  # noqa: E402

SPEC = REPO / "data" / "specs" / "openai" / "jsonl" / "openai.jsonl"
INPUTS = REPO / "data" / "inputs" / "openai"
CANDIDATES = ("gpt-4.1-mini-2025-04-14", "gpt-4o-mini-2024-07-18")
JUDGES = {"openai": "gpt-4.1-2025-04-14", "anthropic": "claude-sonnet-4-6", "google": "gemini-2.5-flash"}
KEY = "sk-bench-not-a-real-key"
OPTIONS = EngineOptions(batch_size=100_000, poll_interval=0.05, max_attempts=1)
PAD = " The answer goes on to explain its reasoning in more detail, with caveats and a short example."


def base_url(emulator: Emulator, provider: str) -> str:
    return {
        "openai": emulator.openai_base_url,
        "anthropic": emulator.anthropic_base_url,
        "google": emulator.gemini_base_url,
    }[provider]


def generate(emulator: Emulator, root: Path) -> list[CandidateAnswers]:
    """Every candidate answers the shipped inputs through the emulator (offline generation)."""
    spec = load_spec(SPEC)
    runs = []
    for name in CANDIDATES:
        config = GenerationConfig(
            spec_path=SPEC,
            inputs_dir=INPUTS,
            model_name=name,
            org="openai",
            output_base_dir=root / "generations",
            engine=OPTIONS,
        )
        pipeline = BatchedGenerationPipeline(config)
        model = create_batched_model(name, "openai", config.params, base_url=emulator.openai_base_url, api_key=KEY)
        summary = pipeline.run(model)
        assert summary.finished, summary
        runs.append(pipeline.run_dir)
    return [load_answers(candidate, spec) for candidate in resolve_candidates(runs)]


def prompts(
    spec: Specification, answers: CandidateAnswers, template: TemplateId, salt: str, pad_to: int
) -> list[PromptItem]:
    items = []
    for statement_id, statement_answers in answers.by_statement.items():
        for answer in statement_answers:
            response = answer.output_text
            while len(response) < pad_to:
                response += PAD
            text = render_compliance(
                spec[statement_id],
                answer.input_text,
                response[: max(pad_to, 1)] if pad_to else response,
                template=template,
                salt=salt,
            )
            items.append(PromptItem(statement_id=statement_id, original_index=answer.original_index, input_text=text))
    return items


def judge(emulator: Emulator, root: Path, provider: str, jobs: list[list[PromptItem]]) -> tuple[Usage, dict[Any, Any]]:
    """Run each list of prompts as one job; the summed usage and every verdict by (job, statement, index)."""
    model = create_batched_model(
        JUDGES[provider], provider, GenerationParams(max_tokens=512), base_url=base_url(emulator, provider), api_key=KEY
    )
    usage = Usage()
    verdicts: dict[Any, Any] = {}
    for number, items in enumerate(jobs):
        store = RunStore(root / f"job{number}", results_subdir="judge_responses")
        summary = BatchEngine(model, store, OPTIONS).run(items)
        assert summary.finished, summary
        for record in store.load_records():
            usage.add(record.usage)
        for statement_id in {item.statement_id for item in items}:
            for result in store.load_results(statement_id):
                verdicts[(number, statement_id, result.original_index)] = parse_compliance(result.output_text)
    return usage, verdicts


def input_cost(prices: PriceTable, provider: str, usage: Usage) -> float:
    cost = prices.cost(JUDGES[provider], provider, usage.model_copy(update={"output_tokens": 0}))
    assert cost is not None, f"no price for {JUDGES[provider]}"
    return cost


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--response-chars", type=int, default=0, help="pad candidate answers to this many characters")
    parser.add_argument("--out", type=Path, help="also write the figures as JSON here")
    args = parser.parse_args()
    spec = load_spec(SPEC)
    prices = PriceTable.load()
    report: dict[str, Any] = {"response_chars": args.response_chars, "providers": {}}
    with tempfile.TemporaryDirectory() as tmp, Emulator(faults=FaultConfig(turnaround_seconds=0.2)) as emulator:
        root = Path(tmp)
        candidates = generate(emulator, root)
        salt = new_salt()  # one per judge directory, shared by its candidates' runs (as `judge_salt` does)
        before = [prompts(spec, c, TemplateId.COMPLIANCE_BINARY_V1, "", args.response_chars) for c in candidates]
        after = [prompts(spec, c, TemplateId.COMPLIANCE_BINARY_V2, salt, args.response_chars) for c in candidates]
        shares = []
        for items in after:
            for item in items:
                shared = split_shared_prefix(item.input_text)
                assert shared is not None
                shares.append(len(shared[0]) / len(item.input_text))
        report.update(
            requests=sum(len(items) for items in after),
            statements=len({item.statement_id for items in after for item in items}),
            prompt_chars_mean=sum(len(i.input_text) for items in after for i in items) / len(shares),
            shared_fraction_mean=sum(shares) / len(shares),
            shared_fraction_min=min(shares),
        )
        for provider in JUDGES:
            old_usage, old_verdicts = judge(emulator, root / provider / "v1", provider, before)
            new_usage, new_verdicts = judge(emulator, root / provider / "v2", provider, after)
            old_cost, new_cost = input_cost(prices, provider, old_usage), input_cost(prices, provider, new_usage)
            report["providers"][provider] = {
                "judge": JUDGES[provider],
                "input_tokens": new_usage.input_tokens,
                "cached_input_tokens_before": old_usage.cached_input_tokens,
                "cached_input_tokens_after": new_usage.cached_input_tokens,
                "cache_write_tokens_after": new_usage.cache_write_tokens,
                "input_cost_before_usd": old_cost,
                "input_cost_after_usd": new_cost,
                "ratio": new_cost / old_cost,
                "same_verdicts": old_verdicts == new_verdicts,
                "verdicts": len(new_verdicts),
            }
    print(
        f"{report['requests']} compliance judgements ({len(CANDIDATES)} candidates, {report['statements']} "
        f"statements), answers padded to {args.response_chars or 'their own length'} characters"
    )
    print(
        f"shared prefix of a v2 compliance prompt: mean {report['shared_fraction_mean']:.1%}, "
        f"min {report['shared_fraction_min']:.1%} (mean prompt {report['prompt_chars_mean']:.0f} chars)"
    )
    for provider, row in report["providers"].items():
        print(
            f"{provider:9} {row['judge']:26} input ${row['input_cost_before_usd']:.5f} -> "
            f"${row['input_cost_after_usd']:.5f} = {row['ratio']:.2f}x  (cached {row['cached_input_tokens_after']:,} "
            f"of {row['input_tokens']:,} tokens, written {row['cache_write_tokens_after']:,}; same verdicts: "
            f"{row['same_verdicts']} over {row['verdicts']})"
        )
    if args.out:
        args.out.write_text(json.dumps(report, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
