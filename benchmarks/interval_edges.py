"""Coverage of the report's intervals where rates are extreme, samples small and clusters few.

    python benchmarks/interval_edges.py [--draws 2000] [--seed 5] [--end-to-end 300]

Prints markdown tables:

1. single-run rates, exact coverage over every outcome k = 0..n (no simulation) for n in {10, 20, 30, 50, 200} and
   p in {0.5, 0.9, 0.95, 0.99}, with the mean width against plain Wilson;
2. clustered rates: inputs (clusters) {10, 30, 100} x runs {1, 5}, latent per-input rates from Beta(a, b) (skewed:
   Beta(1.9, 0.1), mean 0.95; moderate: Beta(9, 1), mean 0.9); truth = the population mean;
3. win rates of one model against another over the same skewed design (both orders of every input per run);
4. Bradley–Terry strengths of three models with planted strengths (bootstrap of 1,000 draws per replication);
5. end to end: compliance results of 30 inputs x 5 runs at Beta(1.9, 0.1) written as an experiment's results
   folder and read back through the report's own `compute`.

Each simulated row gives the Monte-Carlo standard error of the coverage and the mean interval width.
"""

from __future__ import annotations

import argparse
import json
import math
import tempfile
import time
from pathlib import Path

import numpy as np

from speceval.analysis.reading.rows import RankingRow
from speceval.analysis.statistics.clustered import rate_interval
from speceval.analysis.statistics.stats import wilson_interval
from speceval.analysis.tables.rankings import strengths, win_rates


def binomial_pmf(n: int, p: float) -> np.ndarray:
    k = np.arange(n + 1)
    log_choose = np.array([math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) for i in range(n + 1)])
    return np.exp(log_choose + k * math.log(p) + (n - k) * math.log1p(-p))


def single_run_table() -> None:
    print("| n | p | exact coverage (continuity-corrected Wilson) | mean width | plain Wilson coverage | width ratio |")
    print("|---|---|---|---|---|---|")
    for n in (10, 20, 30, 50, 200):
        for p in (0.5, 0.9, 0.95, 0.99):
            pmf = binomial_pmf(n, p)
            rows = []
            for continuity in (True, False):
                bounds = [wilson_interval(k, n, continuity=continuity) for k in range(n + 1)]
                cover = sum(pmf[k] for k, b in enumerate(bounds) if b[0] <= p <= b[1])  # type: ignore[index]
                width = sum(pmf[k] * (b[1] - b[0]) for k, b in enumerate(bounds))  # type: ignore[index]
                rows.append((cover, width))
            (cc, cc_width), (plain, plain_width) = rows
            print(f"| {n} | {p} | {cc:.3f} | {cc_width:.3f} | {plain:.3f} | {cc_width / plain_width:.2f} |")


def clustered_table(draws: int, seed: int) -> None:
    print("| latent rates | inputs x runs | coverage | ± MC SE | mean width |")
    print("|---|---|---|---|---|")
    for name, (a, b) in (("Beta(1.9, 0.1), mean 0.95", (1.9, 0.1)), ("Beta(9, 1), mean 0.9", (9.0, 1.0))):
        truth = a / (a + b)
        for inputs in (10, 30, 100):
            for runs in (1, 5):
                rng = np.random.default_rng(seed)
                hits, widths = 0, []
                for _ in range(draws):
                    p = rng.beta(a, b, inputs)
                    verdicts = rng.random((inputs, runs)) < p[:, None]
                    values = [float(v) for v in verdicts.reshape(-1)]
                    clusters = [i for i in range(inputs) for _ in range(runs)]
                    found = rate_interval(values, clusters)
                    assert found is not None
                    hits += found[0] <= truth <= found[1]
                    widths.append(found[1] - found[0])
                share = hits / draws
                print(
                    f"| {name} | {inputs} x {runs} | {share:.3f} | {math.sqrt(share * (1 - share) / draws):.3f} | "
                    f"{np.mean(widths):.3f} |",
                    flush=True,
                )


def ranking_rows(
    rng: np.random.Generator, models: list[str], strength: dict[str, float], inputs: int, runs: int
) -> list[RankingRow]:
    rows = []
    for i in range(inputs):
        noise = rng.normal(0, 0.5)  # an input that favours one side for every run and order (clustered)
        for run in range(1, runs + 1):
            for x, y in ((a, b) for a in models for b in models if a != b):
                p = 1 / (1 + math.exp(-(math.log(strength[x] / strength[y]) + noise)))
                rank = 1 if rng.random() < p else -1
                rows.append(
                    RankingRow(
                        spec="s",
                        judge="j",
                        model_a=x,
                        model_b=y,
                        statement_id=f"st{i % 5}",
                        index=i,
                        input=f"q{i}",
                        outcome="judged",
                        rank=rank,
                        source="sim",
                        run=run,
                    )
                )
    return rows


def win_rate_and_bt_table(draws: int, bt_draws: int, seed: int) -> None:
    models = ["a", "b", "c"]
    planted = {"a": 0.5, "b": 0.3, "c": 0.2}
    rng = np.random.default_rng(seed)
    # The truth of a win rate with input noise: its expectation over inputs, by simulation with many inputs.
    big = ranking_rows(np.random.default_rng(seed + 1), models, planted, 4000, 1)
    truth_win = next(w.rate for w in win_rates(big) if w.candidate == "a" and w.opponent == "b")
    truth_bt = {s.candidate: s.strength for s in strengths(big, draws=1)}
    print("| statistic | design | coverage | ± MC SE | mean width |")
    print("|---|---|---|---|---|")
    for inputs, runs in ((30, 1), (30, 5)):
        hits, widths = 0, []
        for _ in range(draws):
            found = next(
                w
                for w in win_rates(ranking_rows(rng, models, planted, inputs, runs))
                if w.candidate == "a" and w.opponent == "b"
            )
            hits += found.ci_low <= truth_win <= found.ci_high  # type: ignore[operator]
            widths.append(found.ci_high - found.ci_low)  # type: ignore[operator]
        share = hits / draws
        print(
            f"| win rate a vs b (truth {truth_win:.3f}) | {inputs} inputs x {runs} runs, both orders | "
            f"{share:.3f} | {math.sqrt(share * (1 - share) / draws):.3f} | {np.mean(widths):.3f} |",
            flush=True,
        )
    hits, widths = 0, []
    for _ in range(bt_draws):
        found = {s.candidate: s for s in strengths(ranking_rows(rng, models, planted, 30, 1))}
        a = found["a"]
        hits += a.ci_low is not None and a.ci_low <= truth_bt["a"] <= a.ci_high  # type: ignore[operator]
        widths.append((a.ci_high or 0) - (a.ci_low or 0))
    share = hits / bt_draws
    print(
        f"| Bradley–Terry strength of a (truth {truth_bt['a']:.3f}), 1,000-draw bootstrap | 30 inputs x 1 run, "
        f"3 models | {share:.3f} | {math.sqrt(share * (1 - share) / bt_draws):.3f} | {np.mean(widths):.3f} |"
    )


def end_to_end(replications: int, seed: int) -> None:
    from speceval.analysis.rendering.data import compute
    from speceval.batch.costs import PriceTable

    prices = PriceTable.load()
    rng = np.random.default_rng(seed)
    hits = 0
    with tempfile.TemporaryDirectory() as scratch:
        for replication in range(replications):
            root = Path(scratch) / f"r{replication}"
            p = rng.beta(1.9, 0.1, 30)
            for run in range(1, 6):
                results = [
                    {
                        "input": f"q{i}",
                        "output": f"answer {i} run {run}",
                        "compliant": bool(rng.random() < p[i]),
                        "confidence": 0.9,
                        "explanation": "sim",
                        "outcome": "judged",
                        "original_index": i,
                    }
                    for i in range(30)
                ]
                path = root / f"compliance/s/default/run{run}/j/m/results/st.json"
                path.parent.mkdir(parents=True)
                metadata = {
                    "model": "m",
                    "judge": "j",
                    "spec": "s",
                    "statement_id": "st",
                    "mode": "binary",
                    "prompt_version": "compliance_binary_v2",
                    "batch_ids": ["b"],
                    "candidate_dir": "x",
                }
                path.write_text(json.dumps({"metadata": metadata, "results": results}))
            (root / "experiment.json").write_text(
                json.dumps(
                    {
                        "experiment_name": "sim",
                        "config_sha256": "0",
                        "variations": {"default": {}},
                        "generation_runs": [],
                    }
                )
            )
            [row] = [v for v in compute([root], prices).variations if v.judge == "j"]
            hits += row.ci_low <= 0.95 <= row.ci_high  # type: ignore[operator]
    share = hits / replications
    print(
        f"| end to end through the report: 30 inputs x 5 runs, Beta(1.9, 0.1) | {replications} replications | "
        f"{share:.3f} | {math.sqrt(share * (1 - share) / replications):.3f} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=2000)
    parser.add_argument("--bt-draws", type=int, default=200)
    parser.add_argument("--end-to-end", type=int, default=300)
    parser.add_argument("--seed", type=int, default=5)
    args = parser.parse_args()
    started = time.monotonic()
    print("### Single-run rates (exact)\n")
    single_run_table()
    print("\n### Clustered rates\n")
    clustered_table(args.draws, args.seed)
    print("\n### Win rates and Bradley–Terry\n")
    win_rate_and_bt_table(args.draws // 4, args.bt_draws, args.seed)
    print("\n### End to end\n")
    print("| design | replications | coverage | ± MC SE |\n|---|---|---|---|")
    end_to_end(args.end_to_end, args.seed)
    print(f"\n{time.monotonic() - started:.0f} s")


if __name__ == "__main__":
    main()
