"""The report's figures as PNG bytes (matplotlib, Agg backend: no display needed)."""

from __future__ import annotations

import io
import textwrap
from types import ModuleType
from typing import TYPE_CHECKING

import numpy as np

from speceval.analysis.tables.categories import CategoryShare
from speceval.analysis.tables.judge_quality import Leniency
from speceval.analysis.tables.rankings import WinRate
from speceval.analysis.tables.rates import ComplianceRate
from speceval.analysis.tables.turns import TurnRate
from speceval.analysis.tables.variations import VariationStatistics

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def pyplot() -> ModuleType:
    """matplotlib's pyplot on the Agg backend, imported when the first figure is drawn: its 30 MB are then taken
    after the statistics have let their arrays go, not on top of them (the peak of a million verdicts' report)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # the backend must be chosen first

    return plt


DPI = 110
PAD_INCHES = 0.15


def png_bytes(figure: Figure) -> bytes:
    """The figure as PNG with nothing cut: titles wider than the figure are wrapped onto more lines, and the image is
    cropped to what was drawn plus a margin, so a long label widens the image instead of leaving it.

    One measuring pass and one draw, both at the PNG's dpi. `tight_layout()` measured every label once more at the
    screen's dpi, and `savefig(bbox_inches="tight")` drew the whole figure once more only to measure it: the three
    passes were most of a report's CPU (0.25 s a figure). The box handed to `savefig` is the one "tight" measured
    (same pixels). A figure of several panels spaces them itself before it gets here (`turn_lines`)."""
    figure.set_dpi(DPI)  # first: the measuring pass then fills the text-size cache the draw reads
    _wrap_titles(figure)
    box = figure.get_tightbbox(figure.canvas.get_renderer()).padded(PAD_INCHES)  # type: ignore[attr-defined]
    buffer = io.BytesIO()
    # zlib level 1, not PIL's 6: half the encoding CPU (25 to 13 ms a figure) for 7% more bytes.
    figure.savefig(buffer, format="png", dpi=DPI, bbox_inches=box, pil_kwargs={"compress_level": 1})
    pyplot().close(figure)
    return buffer.getvalue()


def _wrap_titles(figure: Figure) -> None:
    """Wrap each axes title to the width it can take, centred over its axes inside the figure: long model, judge
    and variation names made titles run past the figure's edge, where the PNG cut them off."""
    renderer = figure.canvas.get_renderer()  # type: ignore[attr-defined]  # Agg canvases have one
    for axes in figure.axes:
        title = axes.title
        if not title.get_text():
            continue
        box = axes.get_window_extent(renderer)
        centre = (box.x0 + box.x1) / 2
        room = 2 * min(centre, figure.bbox.width - centre) * 0.95
        width = title.get_window_extent(renderer).width
        if width <= room:
            continue
        lines = title.get_text().split("\n")
        chars = max(16, int(max(len(line) for line in lines) * room / width))
        title.set_text("\n".join(textwrap.fill(line, chars) for line in lines))


def variation_bars(stats: list[VariationStatistics], judge: str, shown_as: str | None = None) -> bytes:
    """Compliance per candidate under `judge`, one bar per variation with its clustered 95% interval, and each
    run's own rate as a dot (the run-to-run spread); `shown_as`: the judge's name in the title (marked where its
    card failed). A Likert judge, which gives ratings and no rate, is drawn as its mean rating on the 1-5 scale
    with its interval (its figure was an empty compliance-rate frame)."""
    rows = [s for s in stats if s.judge == judge]
    rated = all(s.rate is None for s in rows) and any(s.mean_rating is not None for s in rows)
    candidates = sorted({s.candidate for s in rows})
    variations = sorted({s.variation for s in rows})
    figure, axes = pyplot().subplots(figsize=(max(6.0, 1.6 * len(candidates) * max(1, len(variations)) + 2), 4.5))
    width = 0.8 / max(1, len(variations))
    for v, variation in enumerate(variations):
        xs: list[float] = []
        ys: list[float] = []
        errors: list[list[float]] = [[], []]
        for c, candidate in enumerate(candidates):
            record = next((s for s in rows if s.candidate == candidate and s.variation == variation), None)
            if record is None:
                continue
            value, low, high = (
                (record.mean_rating, record.rating_ci_low, record.rating_ci_high)
                if rated
                else (record.rate, record.ci_low, record.ci_high)
            )
            if value is None or low is None or high is None:
                continue
            x = c + v * width
            xs.append(x)
            ys.append(value)
            errors[0].append(value - low)
            errors[1].append(high - value)
            runs = [] if rated else [r.rate for r in record.runs if r.rate is not None]
            axes.scatter([x] * len(runs), runs, color="black", s=12, zorder=3)
        axes.bar(xs, ys, width, yerr=errors, capsize=3, label=variation)
    axes.set_xticks(
        [c + width * (len(variations) - 1) / 2 for c in range(len(candidates))], candidates, rotation=15, ha="right"
    )
    if rated:
        axes.set_ylim(1, 5)
        axes.set_ylabel("mean rating 1-5 (judged ratings only)")
        axes.set_title(f"Mean rating by variation, judge {shown_as or judge}: 95% intervals (Gaffke's bound)")
    else:
        axes.set_ylim(0, 1)
        axes.set_ylabel("compliance rate (judged answers only)")
        axes.set_title(
            f"Compliance by variation, judge {shown_as or judge}: 95% clustered intervals; dots are single runs"
        )
    axes.legend(fontsize=8, title="variation")
    return png_bytes(figure)


HEATMAP_MAX_INCHES = 20.0
"""Tallest heatmap: rows beyond 35 get thinner, beyond about 400 their names are left to the CSV."""


def heatmap(matrix: np.ndarray, rows: list[str], columns: list[str], title: str, *, diverging: bool = False) -> bytes:
    """A labelled heatmap with values written in the cells (NaN cells left blank)."""
    # A row is half an inch until the figure reaches HEATMAP_MAX_INCHES, then thinner: the picture of hundreds of
    # statements stays a few MB to draw (200 at half an inch were an 11,000-pixel-tall canvas, 145 MiB and 20 s).
    height = min(max(3.5, 0.5 * len(rows) + 2.5), HEATMAP_MAX_INCHES)
    figure, axes = pyplot().subplots(figsize=(max(6.5, 1.2 * len(columns) + 3), height))
    if diverging:
        bound = float(np.nanmax(np.abs(matrix))) if np.isfinite(matrix).any() else 1.0
        image = axes.imshow(matrix, cmap="RdBu", vmin=-bound or -1, vmax=bound or 1)
    else:
        image = axes.imshow(matrix, cmap="viridis", vmin=0, vmax=1)
    axes.set_xticks(range(len(columns)), columns, rotation=30, ha="right")
    row_points = 72 * (height - 2.5) / max(1, len(rows))
    if row_points >= 3:
        axes.set_yticks(range(len(rows)), rows, fontsize=min(10.0, row_points * 0.8))
    else:  # too many rows to name legibly: the CSV names them
        axes.set_yticks([])
        axes.set_ylabel(f"{len(rows)} rows (named in the CSV)")
    for (i, j), value in np.ndenumerate(matrix if matrix.size <= 150 else np.empty((0, 0))):
        if np.isfinite(value):  # values written only where they stay legible (and fast to draw)
            axes.text(j, i, f"{value:.2f}", ha="center", va="center", fontsize=8, color="white")
    figure.colorbar(image, ax=axes)
    axes.set_title(title, pad=12)  # the colorbar's top tick label reaches above the axes
    return png_bytes(figure)


def leniency_heatmap(rows: list[Leniency], spec: str, variation: str) -> bytes:
    """Judge (rows) × candidate (columns): each judge's rate minus the judges' mean, with its 95% interval in the
    cell; `*` marks an interval that excludes 0."""
    rows = [r for r in rows if r.spec == spec and r.variation == variation]
    judges, candidates = sorted({r.judge for r in rows}), sorted({r.candidate for r in rows})
    matrix = np.full((len(judges), len(candidates)), np.nan)
    labels: dict[tuple[int, int], str] = {}
    for r in rows:
        i, j = judges.index(r.judge), candidates.index(r.candidate)
        matrix[i, j] = r.delta
        interval = "" if r.ci_low is None or r.ci_high is None else f"\n[{r.ci_low:+.2f}, {r.ci_high:+.2f}]"
        excludes = r.ci_low is not None and r.ci_high is not None and (r.ci_low > 0 or r.ci_high < 0)
        labels[(i, j)] = f"{r.delta:+.3f}{'*' if excludes else ''}{interval}"
    figure, axes = pyplot().subplots(figsize=(max(6.5, 1.8 * len(candidates) + 3), max(3.5, 0.8 * len(judges) + 2.5)))
    bound = float(np.nanmax(np.abs(matrix))) if np.isfinite(matrix).any() else 1.0
    image = axes.imshow(matrix, cmap="RdBu", vmin=-(bound or 1), vmax=bound or 1)
    axes.set_xticks(range(len(candidates)), candidates, rotation=30, ha="right")
    axes.set_yticks(range(len(judges)), judges)
    for (i, j), text in labels.items():
        axes.text(j, i, text, ha="center", va="center", fontsize=7)
    figure.colorbar(image, ax=axes)
    axes.set_title(f"judge leniency (rate − judges' mean), spec {spec}, {variation}")
    return png_bytes(figure)


def category_bars(shares: list[CategoryShare], spec: str, judge: str) -> bytes:
    """Stacked bars: one bar per candidate and variation, split by the judge's categories (shares sum to 1)."""
    shares = [s for s in shares if s.spec == spec and s.judge == judge and s.rate is not None]
    bars = sorted({(s.candidate, s.variation) for s in shares})
    categories = sorted({s.category for s in shares})
    figure, axes = pyplot().subplots(figsize=(max(6.5, 0.9 * len(bars) + 3), 4.5))
    bottom = np.zeros(len(bars))
    for category in categories:
        heights = np.array(
            [
                next(
                    (s.rate or 0.0 for s in shares if (s.candidate, s.variation) == bar and s.category == category), 0.0
                )
                for bar in bars
            ]
        )
        axes.bar(range(len(bars)), heights, bottom=bottom, label=category)
        bottom += heights
    axes.set_xticks(range(len(bars)), [f"{c}\n{v}" for c, v in bars], rotation=30, ha="right", fontsize=8)
    axes.set_ylim(0, 1)
    axes.set_ylabel("share of judged answers")
    axes.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    axes.set_title(f"categories, spec {spec}, judge {judge}")
    return png_bytes(figure)


def win_matrix(rates: list[WinRate], spec: str, judge: str, variation: str) -> tuple[np.ndarray, list[str]]:
    """Row model's win rate against column model in one spec (NaN on the diagonal and for unplayed pairs)."""
    rates = [r for r in rates if r.spec == spec and r.judge == judge and r.variation == variation]
    models = sorted({r.candidate for r in rates})
    matrix = np.full((len(models), len(models)), np.nan)
    for r in rates:
        if r.rate is not None:
            matrix[models.index(r.candidate), models.index(r.opponent)] = r.rate
    return matrix, models


def length_scatter(rates: list[ComplianceRate]) -> bytes:
    """Mean answer length against compliance rate, one point per candidate, variation and judge."""
    figure, axes = pyplot().subplots(figsize=(6, 4.5))
    for judge in sorted({r.judge for r in rates}):
        points = [
            (r.mean_output_chars, r.rate)
            for r in rates
            if r.judge == judge and r.rate is not None and r.mean_output_chars is not None
        ]
        if points:
            axes.scatter([float(p[0] or 0) for p in points], [float(p[1] or 0) for p in points], label=f"judge {judge}")
    axes.set_xlabel("mean answer length (characters)")
    axes.set_ylabel("compliance rate")
    axes.set_ylim(0, 1)
    axes.set_title("Answer length vs compliance")
    if axes.collections:  # no judge with a rate (Likert judges only): no legend, not matplotlib's warning
        axes.legend(fontsize=8)
    return png_bytes(figure)


def turn_lines(rates: list[TurnRate], spec: str, judge: str, shown_as: str | None = None) -> bytes:
    """Rates by turn: one panel per measure (compliant, or each category), one line per candidate and variation,
    each point with its 95% interval and the n it is over; `shown_as`: the judge's name in the title (marked where
    its card failed)."""
    rates = [r for r in rates if r.spec == spec and r.judge == judge and r.rate is not None]
    measures = sorted({r.measure for r in rates})
    lines = sorted({(r.candidate, r.variation) for r in rates})
    # Room for the lines: a study of many candidates and variations drew a panel too small to read beside its legend.
    height = max(4.0, 2.5 + 0.22 * len(lines))
    figure, panels = pyplot().subplots(
        1, max(len(measures), 1), figsize=(5.5 * max(len(measures), 1) + 3, height), squeeze=False
    )
    for axes, measure in zip(panels[0], measures, strict=False):
        for candidate, variation in lines:
            points = sorted(
                (r for r in rates if r.measure == measure and (r.candidate, r.variation) == (candidate, variation)),
                key=lambda r: r.turn,
            )
            if not points:
                continue
            turns = [p.turn for p in points]
            values = np.array([float(p.rate or 0.0) for p in points])
            low = np.array([float(p.ci_low if p.ci_low is not None else p.rate or 0.0) for p in points])
            high = np.array([float(p.ci_high if p.ci_high is not None else p.rate or 0.0) for p in points])
            axes.errorbar(
                turns,
                values,
                yerr=[values - low, high - values],
                marker="o",
                capsize=3,
                label=f"{candidate} / {variation} (n {'/'.join(str(p.n) for p in points)})",
            )
        axes.set_xticks(sorted({r.turn for r in rates}))
        axes.set_xlabel("turn")
        likert = measure == "mean_rating"
        axes.set_ylim(*((1, 5.1) if likert else (0, 1.02)))
        axes.set_ylabel("mean rating" if likert else "share of the turn's judged verdicts")
        axes.set_title(measure)
    panels[0][-1].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    figure.suptitle(f"rates by turn, spec {spec}, judge {shown_as or judge} (95% clustered intervals)")
    figure.tight_layout()  # panels side by side: each one's tick labels clear of its neighbour
    return png_bytes(figure)
