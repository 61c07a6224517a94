"""The coverage matrix's scenarios: for every registered estimator (speceval/analysis/statistics/registry.py), a grid
of synthetic designs at its edges, each with a planted truth computed independently of the estimator (a formula or
a large Monte-Carlo sample) and, where one exists, a reference interval the width is compared with.

A scenario's `draw(rng)` simulates one data set and returns the estimator's interval and the reference's; the runner
(benchmarks/coverage_matrix.py) counts how often each holds the truth.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from benchmarks.pooled_references import pooled_references
from speceval.analysis.reading.rows import ComplianceRow, RankingRow
from speceval.analysis.statistics.clustered import mean_interval, mean_interval_codes, rate_interval
from speceval.analysis.statistics.paired import paired_difference
from speceval.analysis.statistics.rating import rating_interval
from speceval.analysis.statistics.spread import spread_interval
from speceval.analysis.statistics.stats import Z95, spearman, spearman_interval, wilson_interval
from speceval.analysis.statistics.survival import kaplan_meier
from speceval.analysis.tables.candidate_split import StatementShares, associations
from speceval.analysis.tables.human_labels import item_id, label_sheet
from speceval.analysis.tables.judge_quality import leniency
from speceval.analysis.tables.ppi_table import PpiRate, ppi_rates
from speceval.analysis.tables.rankings import strengths, win_rates
from speceval.analysis.tables.rates import judge_agreement

Bounds = tuple[float, float] | None
Drawn = tuple[Bounds, Bounds | dict[str, Bounds]]
"""(the estimator's interval, the reference's) of one simulated data set; several references by name, of which the
runner prints the narrowest that covers."""


@dataclass
class Scenario:
    family: str
    estimators: tuple[str, ...]
    name: str
    truth: float
    draw: Callable[[np.random.Generator], Drawn] | None
    reference: str = "–"
    cost: int = 1
    """Relative cost of a draw: the runner gives scenarios of cost c draws // c draws (a Bradley–Terry or PPI draw
    runs a bootstrap of its own)."""
    exact: Callable[[], tuple[float, float, float | None]] | None = field(default=None)
    """(coverage, mean width, reference width) computed exactly instead of drawn."""
    many: Callable[[int, int], dict[str, float]] | None = field(default=None)
    """(draws, seed) → the coverage of each of several intervals measured on the same draws, instead of `draw`."""


def _pair(found: tuple[float, float, str] | tuple[float, float] | None) -> Bounds:
    return None if found is None else (found[0], found[1])


# -- rates ---------------------------------------------------------------------------------------------------------


def _binomial_pmf(n: int, p: float) -> np.ndarray:
    k = np.arange(n + 1)
    log_choose = np.array([math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) for i in range(n + 1)])
    return np.exp(log_choose + k * math.log(p) + (n - k) * math.log1p(-p))


def one_run_exact_scenario(n: int, p: float) -> Callable[[], tuple[float, float, float | None]]:
    def exact() -> tuple[float, float, float | None]:
        pmf = _binomial_pmf(n, p)
        ours = [wilson_interval(k, n) for k in range(n + 1)]
        plain = [wilson_interval(k, n, continuity=False) for k in range(n + 1)]
        cover = sum(pmf[k] for k, b in enumerate(ours) if b is not None and b[0] <= p <= b[1])
        width = sum(pmf[k] * (b[1] - b[0]) for k, b in enumerate(ours) if b is not None)
        reference = sum(pmf[k] * (b[1] - b[0]) for k, b in enumerate(plain) if b is not None)
        return float(cover), float(width), float(reference)

    return exact


def pooled_scenario(
    inputs: tuple[int, ...], runs: int, a: float, b: float, identical: float | None = None
) -> Callable[[np.random.Generator], Drawn]:
    """Statements of `inputs` inputs each (unequal strata), per-input rates Beta(a, b), `runs` verdicts an input; with
    `identical`, every input's runs give one verdict (as at temperature 0), compliant with that probability."""
    strata = {i: s for s, count in enumerate(inputs) for i in range(sum(inputs[:s]), sum(inputs[:s]) + count)}
    clusters = [i for i in range(sum(inputs)) for _ in range(runs)]

    own = np.random.default_rng(11)  # the references' bootstrap: the scenario's draws stay as they were

    def draw(rng: np.random.Generator) -> Drawn:
        p = rng.beta(a, b, sum(inputs)) if identical is None else np.full(sum(inputs), identical)
        verdicts = rng.random((sum(inputs), 1 if identical is not None else runs)) < p[:, None]
        verdicts = np.repeat(verdicts, runs, axis=1) if identical is not None else verdicts
        values = verdicts.reshape(-1).astype(float).tolist()
        return _pair(rate_interval(values, clusters, strata)), pooled_references(verdicts.astype(float), own)

    return draw


def panel_scenario(inputs: int, runs: int, judges: int, a: float, b: float) -> Callable[[np.random.Generator], Drawn]:
    """A panel's verdict: the share of `judges` judges finding an answer compliant (each at the input's rate)."""
    clusters = [i for i in range(inputs) for _ in range(runs)]
    own = np.random.default_rng(11)

    def draw(rng: np.random.Generator) -> Drawn:
        p = rng.beta(a, b, inputs)
        shares = (rng.random((inputs, runs, judges)) < p[:, None, None]).mean(axis=2)
        return _pair(rate_interval(shares.reshape(-1).tolist(), clusters)), pooled_references(shares, own)

    return draw


# -- paired differences and leniency --------------------------------------------------------------------------------


def newcombe_naive(ya: np.ndarray, yb: np.ndarray, scale: float = 1.0) -> Bounds:
    """Newcombe's method 10 (plain Wilson limits, phi over every pair) over every verdict as if independent: the
    narrowest reference the paired rows are measured against (it ignores clustering, so it is valid only where the
    clustering is mild; its coverage is printed beside it)."""
    x, y = ya.reshape(-1).astype(float), yb.reshape(-1).astype(float)
    n, a, b = len(x), float(x.mean()), float(y.mean())
    (la, ua), (lb, ub) = wilson_interval(x.sum(), n, continuity=False), wilson_interval(y.sum(), n, continuity=False)  # type: ignore[misc]
    r = 0.0 if x.std() == 0 or y.std() == 0 else float(np.corrcoef(x, y)[0, 1])
    d = a - b
    low = d - math.sqrt(max(0.0, (a - la) ** 2 - 2 * r * (a - la) * (ub - b) + (ub - b) ** 2))
    high = d + math.sqrt(max(0.0, (ua - a) ** 2 - 2 * r * (ua - a) * (b - lb) + (b - lb) ** 2))
    return scale * low, scale * high


def agresti_min_naive(ya: np.ndarray, yb: np.ndarray, scale: float = 1.0) -> Bounds:
    """Agresti & Min's Wald interval for paired proportions with 1/2 added to each cell of the 2x2 table (Biometrics
    61, 2005) over every verdict as if independent: narrower than method 10 near 0 and 1 (no discordant pair gives
    ±z/(n+2), not ±z²/(n+z²)), and it covers where the truth is near 0; it is not valid for every truth (10 pairs,
    1.0 vs 0.8: 0.91), so it is a reference, not a candidate."""
    x, y = ya.reshape(-1) > 0.5, yb.reshape(-1) > 0.5
    n = len(x) + 2
    only_a, only_b = float((x & ~y).sum()) + 0.5, float((~x & y).sum()) + 0.5
    d = (only_a - only_b) / n
    half = Z95 * math.sqrt(max(0.0, (only_a + only_b) - (only_a - only_b) ** 2 / n)) / n
    return scale * max(-1.0, d - half), scale * min(1.0, d + half)


def paired_scenario(
    inputs: int,
    runs: int,
    pa: float,
    pb: float,
    spread: float = 0.5,
    reference: Callable[[np.ndarray, np.ndarray], Bounds] = newcombe_naive,
    identical: bool = False,
) -> Callable[[np.random.Generator], Drawn]:
    """Each input shifts both sides' rates the same way, by `spread` of the distance to 1 (correlated verdicts,
    across sides and runs; 0.95: inputs almost always or almost never failing, strong clustering). `identical`: an
    input's runs are one verdict repeated (temperature 0), each side's drawn at its rate, the sides independent."""

    def draw(rng: np.random.Generator) -> Drawn:
        shift = rng.choice([-1.0, 1.0], inputs)
        ra, rb = pa + shift * (1 - pa) * spread, pb + shift * (1 - pb) * spread
        ya, yb = rng.random((inputs, runs)) < ra[:, None], rng.random((inputs, runs)) < rb[:, None]
        if identical:
            ya = np.repeat((rng.random(inputs) < pa)[:, None], runs, axis=1)
            yb = np.repeat((rng.random(inputs) < pb)[:, None], runs, axis=1)
        side_a = [(i, float(v)) for i in range(inputs) for v in ya[i]]
        side_b = [(i, float(v)) for i in range(inputs) for v in yb[i]]
        found = paired_difference(side_a, side_b)
        if found is None or found.ci_low is None or found.ci_high is None:
            return None, None
        return (found.ci_low, found.ci_high), reference(ya, yb)

    return draw


def spread_scenario(
    inputs: int, runs: int, rates: tuple[float, ...], shift: float = 0.5
) -> tuple[float, Callable[[np.random.Generator], Drawn]]:
    """Candidates at `rates` on the same inputs, each input shifting every candidate's rate the same way (by `shift`
    of the distance to 1, as `paired_scenario`); truth: max - min of the rates. The estimator: the health table's
    spread (highest minus lowest candidate picked on the data, `spread_interval`); the reference: the plain paired
    interval of the picked pair (before)."""
    truth = max(rates) - min(rates)
    clusters = np.repeat(np.arange(inputs), runs)

    def draw(rng: np.random.Generator) -> Drawn:
        sign = rng.choice([-1.0, 1.0], inputs)
        cells = []
        for rate in rates:
            per_input = rate + sign * (1 - rate) * shift
            cells.append((clusters, (rng.random((inputs, runs)) < per_input[:, None]).reshape(-1).astype(float)))
        means = [float(c[1].mean()) for c in cells]
        high, low = int(np.argmax(means)), int(np.argmin(means))
        if high == low:
            low = (high + 1) % len(cells)
        found = spread_interval(cells, low, high)
        plain = paired_difference(
            [(int(i), float(v)) for i, v in zip(*cells[high], strict=True)],
            [(int(i), float(v)) for i, v in zip(*cells[low], strict=True)],
        )
        reference = (
            None if plain is None or plain.ci_low is None or plain.ci_high is None else (plain.ci_low, plain.ci_high)
        )
        return (None if found is None else (found[1], found[2])), reference

    return truth, draw


def verdict_row(judge: str, index: int, compliant: bool, run: int = 1, statement: str | None = None) -> ComplianceRow:
    """One judged binary verdict of candidate `m` on input `index` (of statement `statement`, else st0/st1 by
    parity), as the report reads it; the simulations and the edge tests build their rows with it."""
    statement = f"st{index % 2}" if statement is None else statement
    return ComplianceRow(
        spec="s",
        judge=judge,
        model="m",
        statement_id=statement,
        mode="binary",
        prompt_version="p",
        input=f"{statement} q{index}",
        output=f"{statement} a{index} r{run}",
        run=run,
        outcome="judged",
        compliant=compliant,
        confidence=None,
        rating=None,
        source="sim",
    )


def leniency_scenario(
    inputs: int, runs: int, rates: tuple[float, ...]
) -> tuple[float, Callable[[np.random.Generator], Drawn]]:
    """Judges with planted rates on the same answers (independent errors); truth: the first judge's rate minus
    the judges' mean."""
    truth = rates[0] - sum(rates) / len(rates)

    def draw(rng: np.random.Generator) -> Drawn:
        verdicts = rng.random((len(rates), inputs, runs)) < np.array(rates)[:, None, None]
        rows = [
            verdict_row(f"j{k}", i, bool(verdicts[k, i, run - 1]), run)
            for k in range(len(rates))
            for i in range(inputs)
            for run in range(1, runs + 1)
        ]
        found = next(r for r in leniency(rows) if r.judge == "j0")
        others, scale = verdicts[1:].mean(axis=0), (len(rates) - 1) / len(rates)
        # Two judges: the other side is binary, and Agresti-Min (narrower near 0 and 1) applies.
        naive = agresti_min_naive if len(rates) == 2 else newcombe_naive
        reference = naive(verdicts[0].astype(float), others, scale)
        return (None if found.ci_low is None or found.ci_high is None else (found.ci_low, found.ci_high)), reference

    return truth, draw


# -- means -----------------------------------------------------------------------------------------------------------


def sample_zero_inflated(rng: np.random.Generator, inputs: int, runs: int, zero: float) -> np.ndarray:
    """A 0-10 score: a share `zero` of inputs always scores 0, the others a noisy 2-8 (inputs x runs)."""
    active = rng.random(inputs) > zero
    centre = rng.uniform(2, 8, inputs)
    values: np.ndarray = np.clip(np.round(rng.normal(centre[:, None], 2, (inputs, runs))), 0, 10) * active[:, None]
    return values


def bounded_scenario(inputs: int, runs: int, zero: float) -> Callable[[np.random.Generator], Drawn]:
    clusters = [i for i in range(inputs) for _ in range(runs)]

    def draw(rng: np.random.Generator) -> Drawn:
        values = sample_zero_inflated(rng, inputs, runs, zero).reshape(-1).tolist()
        return (
            mean_interval(values, clusters, range=(0.0, 10.0)),  # the registered bounded mean
            mean_interval(values, clusters),
        )  # mean ± t · SE, what it replaced

    return draw


def sample_flip_counts(
    rng: np.random.Generator, inputs: int, runs: int, turns: int, hazard: tuple[float, float], recover: float = 0.1
) -> np.ndarray:
    """Flips per conversation (inputs x runs): compliant -> not compliant changes over `turns` judged turns. An input's
    hazard is Beta(`hazard`), shared by its runs (its conversations are not independent); a conversation starts
    compliant, gives way at each later turn with that hazard and comes back with `recover` (so it may flip twice),
    a count from 0 to turns - 1, mostly 0 or 1."""
    rate = rng.beta(*hazard, inputs)[:, None]
    state = np.ones((inputs, runs), dtype=bool)
    count = np.zeros((inputs, runs))
    for _ in range(turns - 1):
        move = rng.random((inputs, runs))
        flipped = state & (move < rate)
        count += flipped
        state = np.where(state, ~flipped, move < recover)
    return count


def flip_count_scenario(
    inputs: int, runs: int, turns: int, hazard: tuple[float, float]
) -> Callable[[np.random.Generator], Drawn]:
    """`flips_per_conversation` as `flips._mean` computes it (the bounded mean over 0..turns - 1, clustered by input,
    one statement), beside the interval it replaced (the rescaled counts' sum given Wilson as if each were a verdict
    of one input: one run's rule before session 20; over several runs it is the same interval as now) and t on the
    inputs' mean counts."""
    clusters = [i for i in range(inputs) for _ in range(runs)]
    strata = dict.fromkeys(clusters, "statement")
    most = float(turns - 1)

    def draw(rng: np.random.Generator) -> Drawn:
        values = sample_flip_counts(rng, inputs, runs, turns, hazard).reshape(-1)
        found = mean_interval(values.tolist(), clusters, strata, range=(0.0, most))
        means = values.reshape(inputs, runs).mean(axis=1)
        references: dict[str, Bounds] = {"t on the inputs' mean counts": mean_interval_codes(means, np.arange(inputs))}
        if runs == 1:
            before = wilson_interval(float(values.sum()) / most, inputs)
            references["Wilson on the rescaled sum (before)"] = None if before is None else _scaled(before, most)
        return found, references

    return draw


def _scaled(bounds: tuple[float, float], by: float) -> Bounds:
    return bounds[0] * by, bounds[1] * by


def unranged_scenario(
    inputs: int, runs: int, zero: float | None, trials: int = 5, rate: float = 0.1
) -> Callable[[np.random.Generator], Drawn]:
    """A metric mean without `range:` (the registered `mean`): a zero-inflated 0-10 score (`zero` of inputs at 0), or
    (zero None) a binomial count of `trials` at a per-input rate Beta around `rate` (small counts, skewed). The
    reference: mean ± t(G-1) · cluster-robust SE (before)."""
    clusters = [i for i in range(inputs) for _ in range(runs)]

    def draw(rng: np.random.Generator) -> Drawn:
        if zero is not None:
            values = sample_zero_inflated(rng, inputs, runs, zero).reshape(-1).tolist()
        else:
            p = rng.beta(rate * 4, (1 - rate) * 4, inputs)
            values = rng.binomial(trials, np.repeat(p, runs)).astype(float).tolist()
        codes = np.asarray(clusters)
        return mean_interval(values, clusters), mean_interval_codes(np.asarray(values), codes)

    return draw


def sample_likert(rng: np.random.Generator, inputs: int, runs: int, centre: float = 3.5) -> np.ndarray:
    centres = rng.normal(centre, 0.8, inputs)
    found: np.ndarray = np.clip(np.round(rng.normal(centres[:, None], 0.7, (inputs, runs))), 1, 5)
    return found


def _on_scale(interval: tuple[float, float] | None) -> tuple[float, float] | None:
    """An interval cut to the rating scale 1-5, as the report cut its mean rating's before issue 47."""
    return None if interval is None else (max(interval[0], 1.0), min(interval[1], 5.0))


def sample_polar(rng: np.random.Generator, inputs: int, runs: int, top: float) -> np.ndarray:
    """A polarized judge's ratings: 5 or 1 only, 5 at an input's own rate (Beta with mean `top`, 4 + 4 = 8 a priori
    draws: inputs differ), the same for every run of it; the mean rating's truth is 1 + 4 · top."""
    rates = rng.beta(8 * top, 8 * (1 - top), inputs)
    found: np.ndarray = np.where(rng.random((inputs, runs)) < rates[:, None], 5.0, 1.0)
    return found


def sample_rare_ones(rng: np.random.Generator, inputs: int, runs: int, violating: float) -> np.ndarray:
    """A judge that rates 4 or 5 (5 at 0.6) and 1 in every run of an input it finds violating (a share `violating` of
    inputs); the mean rating's truth is (1 - violating) · 4.6 + violating."""
    found: np.ndarray = np.where(rng.random((inputs, runs)) < 0.6, 5.0, 4.0)
    found[rng.random(inputs) < violating, :] = 1.0
    return found


def mean_scenario(
    inputs: int, runs: int, centre: float = 3.5, polar: float | None = None, violating: float | None = None
) -> Callable[[np.random.Generator], Drawn]:
    """A judge's mean rating 1-5 as the report gives it (`rating_interval`), beside three references: the naive t
    (every rating its own cluster), the report's interval before issue 47 (the hull of mean ± t and the bounded
    mean over the ratings' seen range, cut to 1-5; none when every rating is alike) and the bounded mean over the
    whole scale 1-5 (defined for every sample)."""
    clusters = [i for i in range(inputs) for _ in range(runs)]

    def draw(rng: np.random.Generator) -> Drawn:
        if violating is not None:
            drawn = sample_rare_ones(rng, inputs, runs, violating)
        elif polar is not None:
            drawn = sample_polar(rng, inputs, runs, polar)
        else:
            drawn = sample_likert(rng, inputs, runs, centre)
        values = drawn.reshape(-1).tolist()
        naive = mean_interval(values, list(range(len(values))))  # every rating its own cluster (the naive t)
        return rating_interval(values, clusters), {
            "t ignoring clusters": _on_scale(naive),
            "hull over the seen range, cut to 1-5 (before)": _on_scale(mean_interval(values, clusters)),
            "bounded mean over the whole scale 1-5": mean_interval(values, clusters, range=(1.0, 5.0)),
        }

    return draw


# -- rankings ---------------------------------------------------------------------------------------------------------


def _games(
    rng: np.random.Generator, inputs: int, runs: int, ties: float, strength: dict[str, float], noise: float = 0.5
) -> list[RankingRow]:
    rows = []
    models = list(strength)
    for i in range(inputs):
        shift = rng.normal(0, noise)  # an input favours one side in every run and order (clustered)
        for run in range(1, runs + 1):
            for x, y in ((a, b) for a in models for b in models if a != b):
                p = 1 / (1 + math.exp(-(math.log(strength[x] / strength[y]) + shift)))
                rank = 0 if rng.random() < ties else (1 if rng.random() < p else -1)
                rows.append(
                    RankingRow(
                        spec="s",
                        judge="j",
                        model_a=x,
                        model_b=y,
                        statement_id=f"st{i % 3}",
                        index=i,
                        input=f"q{i}",
                        outcome="judged",
                        rank=rank,
                        source="sim",
                        run=run,
                    )
                )
    return rows


def win_rate_scenario(
    inputs: int, runs: int, ties: float, strength: dict[str, float]
) -> tuple[float, Callable[[np.random.Generator], Drawn]]:
    big = win_rates(_games(np.random.default_rng(12345), 4000, 1, ties, strength))
    truth = next(w.rate for w in big if (w.candidate, w.opponent) == ("a", "b"))
    assert truth is not None

    def draw(rng: np.random.Generator) -> Drawn:
        found = next(
            w for w in win_rates(_games(rng, inputs, runs, ties, strength)) if (w.candidate, w.opponent) == ("a", "b")
        )
        if found.ci_low is None or found.ci_high is None or found.rate is None:
            return None, None
        return (found.ci_low, found.ci_high), wilson_interval(found.rate * found.games, found.games)

    return truth, draw


def bradley_terry_scenario(inputs: int, bootstrap: int) -> tuple[float, Callable[[np.random.Generator], Drawn]]:
    planted = {"a": 0.5, "b": 0.3, "c": 0.2}
    truth = next(
        s.strength
        for s in strengths(_games(np.random.default_rng(54321), 4000, 1, 0.0, planted), draws=1)
        if s.candidate == "a"
    )

    def draw(rng: np.random.Generator) -> Drawn:
        found = next(s for s in strengths(_games(rng, inputs, 1, 0.0, planted), draws=bootstrap) if s.candidate == "a")
        return (None if found.ci_low is None or found.ci_high is None else (found.ci_low, found.ci_high)), None

    return truth, draw


# -- agreement --------------------------------------------------------------------------------------------------------


def kappa_scenario(prevalence: float, error: float, items: int) -> tuple[float, Callable[[np.random.Generator], Drawn]]:
    positive = prevalence * (1 - error) + (1 - prevalence) * error
    agree = (1 - error) ** 2 + error**2
    chance = positive**2 + (1 - positive) ** 2
    truth = (agree - chance) / (1 - chance)

    def draw(rng: np.random.Generator) -> Drawn:
        true = rng.random(items) < prevalence
        verdicts = [np.where(rng.random(items) < error, ~true, true) for _ in range(2)]
        rows = [verdict_row(f"j{k}", i, bool(v[i])) for k, v in enumerate(verdicts) for i in range(items)]
        found = judge_agreement(rows)
        if not found or found[0].ci_low is None or found[0].ci_high is None:
            return None, None
        return (found[0].ci_low, found[0].ci_high), None

    return truth, draw


# -- PPI and the bias-corrected rate --------------------------------------------------------------------------------


_PPI_RATES: dict[tuple[object, str], list[PpiRate]] = {}
"""`ppi_rates` of a PPI scenario's data sets, by design and the generator's state before the draw, kept for the
bias-corrected scenario of the same design: `measure` seeds both alike, so they draw the same data sets, and
`ppi_rates` computes both intervals at once (its bias-corrected interval is most of its time: each pair's second
scenario computed it all again). Each is read once and dropped; a draw not found (another seed, or the
bias-corrected scenario measured alone) is computed."""


def labelled_scenario(
    sizes: tuple[int, ...],
    truth_rates: tuple[float, ...],
    false_positive: tuple[float, ...],
    labels: int,
    runs: int,
    bias_corrected: bool,
) -> tuple[float, Callable[[np.random.Generator], Drawn]]:
    """Statements of `sizes` inputs (unequal: the sheet labels small statements at a higher rate), a judge whose
    false-positive rate differs by statement (false negatives 5%), `runs` answers an input judged independently;
    the label sheet's own draw (`label_sheet`) chooses the labelled answers."""
    truth = sum(n * t for n, t in zip(sizes, truth_rates, strict=True)) / sum(sizes)
    design = (sizes, truth_rates, false_positive, labels, runs)

    def draw(rng: np.random.Generator) -> Drawn:
        start = repr(rng.bit_generator.state)  # (before this draw: the key of its data set in _PPI_RATES)
        rows, items, human = [], [], {}
        for h, (size, rate, fp) in enumerate(zip(sizes, truth_rates, false_positive, strict=True)):
            for i in range(size):
                compliant_input = rng.random() < rate  # runs of one input share its truth (clustered)
                for run in range(1, runs + 1):
                    verdict = bool(rng.random() < 0.95) if compliant_input else bool(rng.random() < fp)
                    found = verdict_row("j", i, verdict, run, f"st{h}")
                    rows.append(found)
                    items.append(item_id(found))
                    human[items[-1]] = bool(compliant_input)
        sheet = label_sheet(rows, labels, seed=int(rng.integers(1 << 30)))
        labels_of = {record["item"]: human[record["item"]] for record in sheet}
        key = (design, start)
        [found] = _PPI_RATES.pop(key, None) or ppi_rates(rows, labels_of)
        if not bias_corrected:  # the bias-corrected scenario of this design draws this data set next
            _PPI_RATES[key] = [found]
        ours = (
            (found.bias_corrected_low, found.bias_corrected_high) if bias_corrected else (found.ci_low, found.ci_high)
        )
        return (None if ours[0] is None or ours[1] is None else (ours[0], ours[1])), _labels_only(
            rows, items, labels_of
        )

    return truth, draw


def _labels_only(rows: list[ComplianceRow], items: list[str], labels_of: dict[str, bool]) -> Bounds:
    """The classical stratified estimator on the labels alone (Cochran ch. 5: each label weighs N_h/n_h, the judge
    ignored), with a plain Wilson interval at its Kish effective size (Σw)²/Σw²: PPI's reference (issue 47).
    `items`: each row's `item_id`, as the draw made them (hashed twice more a row here, they were a fifth of the
    PPI scenarios' CPU)."""
    verdicts: dict[str, int] = {}
    labelled: dict[str, list[float]] = {}
    for r, item in zip(rows, items, strict=True):
        verdicts[r.statement_id] = verdicts.get(r.statement_id, 0) + 1
        if item in labels_of:
            labelled.setdefault(r.statement_id, []).append(float(labels_of[item]))
    weights = np.concatenate([np.full(len(y), verdicts[h] / len(y)) for h, y in labelled.items()])
    values = np.concatenate([np.asarray(y) for y in labelled.values()])
    size = float(weights.sum()) ** 2 / float((weights**2).sum())
    return _pair(wilson_interval(float((weights * values).sum() / weights.sum()) * size, size, continuity=False))


def _spearman_sample(rng: np.random.Generator, n: int, rho: float, inputs: int | None) -> tuple[np.ndarray, np.ndarray]:
    """`n` pairs of a bivariate normal with correlation `rho`; with `inputs`, each side a share of that many inputs
    drawn at the normal's probability (a statement's split and all-fail shares: noisy, with many ties)."""
    x = rng.normal(size=n)
    y = rho * x + math.sqrt(1 - rho * rho) * rng.normal(size=n)
    if inputs is None:
        return x, y
    to_p = np.vectorize(lambda v: 0.5 * (1 + math.erf(v / math.sqrt(2))))
    return rng.binomial(inputs, to_p(x)) / inputs, rng.binomial(inputs, to_p(y)) / inputs


def spearman_scenario(n: int, rho: float, inputs: int | None) -> tuple[float, Callable[[np.random.Generator], Drawn]]:
    """Spearman's rho across `n` statements of the true shares: (6/pi) asin(rho/2), the latent normal's (the
    probability transform keeps ranks). The estimator: the health table's association (`associations`, corrected
    for the shares' noise over `inputs` inputs each); the reference: Bonett–Wright on the observed shares as if
    exact (before)."""
    truth = 6 / math.pi * math.asin(rho / 2)

    def draw(rng: np.random.Generator) -> Drawn:
        x, y = _spearman_sample(rng, n, rho, inputs)
        found = associations([StatementShares("s", float(a), float(b), inputs) for a, b in zip(x, y, strict=True)])
        observed = spearman(x, y)
        reference = None if observed is None else spearman_interval(observed, n)
        if not found or found[0].ci_low is None or found[0].ci_high is None:
            return None, reference
        return (found[0].ci_low, found[0].ci_high), reference

    return truth, draw


# -- the turn of the first flip (Kaplan–Meier) ---------------------------------------------------------------------


def survival_truth(a: float, b: float, turn: int) -> float:
    """F(turn) = 1 - E[(1 - h)^(turn - 1)] for a per-input hazard h ~ Beta(a, b) per turn after turn 1."""
    log_beta = math.lgamma(a) + math.lgamma(b + turn - 1) - math.lgamma(a + b + turn - 1)
    return 1 - math.exp(log_beta - (math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)))


def survival_scenario(
    inputs: int, runs: int, a: float, b: float, keep_going: float, turn: int = 4
) -> Callable[[np.random.Generator], Drawn]:
    """`inputs` inputs x `runs` conversations each, compliant at turn 1, flipping at each later turn with the
    input's hazard h ~ Beta(a, b); a conversation goes on to each turn after the second with probability
    `keep_going` (ending early: censored). The estimator: the share flipped by `turn` (`kaplan_meier`); the
    reference: Greenwood's log-log interval with z, as if every conversation were independent."""

    def draw(rng: np.random.Generator) -> Drawn:
        hazards = rng.beta(a, b, inputs)
        times, events, clusters = [], [], []
        for g in range(inputs):
            for _ in range(runs):
                last, flipped = 1, False
                for t in range(2, turn + 1):
                    if t > 2 and rng.random() > keep_going:
                        break
                    last = t
                    if rng.random() < hazards[g]:
                        flipped = True
                        break
                times.append(last)
                events.append(flipped)
                clusters.append(g)
        curve = [p for p in kaplan_meier(times, events, clusters) if p.turn <= turn]
        if not curve or curve[-1].ci_low is None or curve[-1].ci_high is None:
            return None, None
        ours = (curve[-1].ci_low, curve[-1].ci_high)
        return ours, _greenwood(times, events, turn)

    return draw


def _greenwood(times: list[int], events: list[bool], turn: int) -> Bounds:
    """Greenwood's log-log 95% interval of F(turn) over independent conversations (the textbook reference)."""
    survival, variance = 1.0, 0.0
    for t in sorted(set(times)):
        if t > turn:
            break
        n = sum(1 for x in times if x >= t)
        d = sum(1 for x, e in zip(times, events, strict=True) if x == t and e)
        if d and d < n:
            survival *= 1 - d / n
            variance += d / (n * (n - d))
        elif d:
            return None
    if survival >= 1 or variance == 0:
        return None
    log_survival = math.log(survival)
    spread = 1.96 * math.sqrt(variance) / abs(log_survival)
    return 1 - survival ** math.exp(-spread), 1 - survival ** math.exp(spread)
