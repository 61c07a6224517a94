"""Every figure of the report keeps its titles and labels inside the image, with the long model, judge and variation
names real runs have (checked in Chromium at 1400 px; CI has no browser, so this checks the PNGs themselves: a
title or label cut at the image's edge leaves non-background pixels on its border)."""

from __future__ import annotations

import io

import matplotlib.image as mpimg
import numpy as np
import pytest

from speceval.analysis.rendering.figures import plots
from speceval.analysis.tables.categories import CategoryShare
from speceval.analysis.tables.judge_quality import Leniency
from speceval.analysis.tables.rates import ComplianceRate
from speceval.analysis.tables.variations import RunStatistics, VariationStatistics

JUDGE = "claude-sonnet-4-6"
CANDIDATES = ["claude-haiku-4-5-20251001", "gpt-4.1-mini-2025-04-14"]
VARIATION = "temperature_0.7+time_pressure"


def variation(candidate: str) -> VariationStatistics:
    return VariationStatistics(
        judged=10,
        compliant=7,
        not_judged={},
        rate=0.7,
        ci_low=0.5,
        ci_high=0.85,
        ci_method="clustered",
        inputs=10,
        statements=2,
        ci_low_by_statement=0.5,
        ci_high_by_statement=0.8,
        spec="openai",
        judge=JUDGE,
        candidate=candidate,
        variation="default",
        settings={},
        run_sd=None,
        run_min=0.7,
        run_max=0.7,
        runs=[RunStatistics(run=1, judged=10, compliant=7, rate=0.7, ci_low=0.4, ci_high=0.9)],
    )


FIGURES = {
    "compliance by variation": lambda: plots.variation_bars([variation(c) for c in CANDIDATES], JUDGE),
    "compliance per statement": lambda: plots.heatmap(
        np.array([[0.5, 0.7], [0.9, 0.1]]),
        ["avoid_regulated_advice_in_high_stakes_domains", "do_not_lie"],
        [f"{c} / {JUDGE}" for c in CANDIDATES],
        "compliance per statement",
    ),
    "win rates": lambda: plots.heatmap(
        np.array([[np.nan, 0.6], [0.4, np.nan]]),
        CANDIDATES,
        CANDIDATES,
        f"win rate, row vs column\nspec openai, {JUDGE}, {VARIATION}",
    ),
    "leniency": lambda: plots.leniency_heatmap(
        [
            Leniency(
                spec="openai",
                judge=j,
                candidate=c,
                variation=VARIATION,
                items=5,
                rate=0.5,
                mean_rate=0.5,
                delta=0.01,
                ci_low=-0.1,
                ci_high=0.1,
                same_provider=False,
            )
            for j in (JUDGE, "gpt-4.1-2025-04-14")
            for c in CANDIDATES
        ],
        "openai",
        VARIATION,
    ),
    "categories": lambda: plots.category_bars(
        [
            CategoryShare(
                judge=JUDGE,
                candidate=c,
                variation=VARIATION,
                category=k,
                count=1,
                judged=2,
                rate=0.5,
                ci_low=0.0,
                ci_high=1.0,
                not_judged=0,
                spec="openai",
            )
            for c in CANDIDATES
            for k in ("total_honesty_with_caveats", "evasion")
        ],
        "openai",
        JUDGE,
    ),
    "answer length": lambda: plots.length_scatter(
        [
            ComplianceRate(
                spec="openai",
                judge=j,
                candidate=c,
                judged=1,
                compliant=1,
                rate=0.5,
                ci_low=0.0,
                ci_high=1.0,
                not_judged={},
                mean_output_chars=100.0,
            )
            for j in (JUDGE, "gpt-4.1-2025-04-14")
            for c in CANDIDATES
        ]
    ),
}


@pytest.mark.parametrize("name", FIGURES)
def test_nothing_is_cut_at_the_images_edge(name):
    image = mpimg.imread(io.BytesIO(FIGURES[name]()))[..., :3]
    border = np.concatenate([image[0], image[-1], image[:, 0], image[:, -1]])
    drawn = (image < 0.99).any(axis=2)
    assert drawn.mean() > 0.02  # the figure has content, so a clean border means a margin, not a blank image
    assert not (border < 0.99).any(axis=1).any(), f"{name}: something reaches the image's edge (cut off)"
    assert image.shape[1] <= 1400  # fits the report's 1,400 px column without being scaled down


def test_a_likert_judges_figure_draws_its_mean_ratings_on_the_scale(monkeypatch: pytest.MonkeyPatch) -> None:
    """A Likert judge has no rate: its figure was an empty compliance-rate frame. It draws each mean rating with
    its interval on 1-5."""
    drawn = []
    monkeypatch.setattr(plots, "png_bytes", lambda figure: drawn.append(figure) or b"")
    rated = [
        variation(c).model_copy(
            update={"rate": None, "ci_low": None, "ci_high": None, "mean_rating": m, "rating_ci_low": 2.0}
            | {"rating_ci_high": 4.9, "runs": []}
        )
        for c, m in zip(CANDIDATES, (3.5, 4.25), strict=True)
    ]
    plots.variation_bars(rated, JUDGE)
    [axes] = drawn[0].axes
    assert axes.get_ylim() == (1.0, 5.0) and "Mean rating" in axes.get_title()
    assert sorted(bar.get_height() for bar in axes.patches) == [3.5, 4.25]
    drawn.clear()
    plots.variation_bars([variation(c) for c in CANDIDATES], JUDGE)  # a rate's figure as before
    assert drawn[0].axes[0].get_ylim() == (0.0, 1.0) and [b.get_height() for b in drawn[0].axes[0].patches] == [0.7] * 2
