"""The spec-health figure: judges' disagreement against candidate spread, one point per statement, with their 95%
intervals as error bars; flagged statements are labelled with their id and flags."""

from __future__ import annotations

# one figure style and backend for the whole report
from speceval.analysis.rendering.figures.plots import png_bytes, pyplot
from speceval.analysis.tables.health_records import StatementHealth

LABELLED = 30
"""Flagged points named in the figure at most (the most flagged first); the table names every one."""


def health_scatter(statements: list[StatementHealth], spec: str) -> bytes:
    """Candidate spread (x: highest − lowest candidate's rate) against judges' disagreement (y) for one spec."""
    points = [s for s in statements if s.spec == spec and s.disagreement is not None and s.spread is not None]
    figure, axes = pyplot().subplots(figsize=(7.5, 5.5))
    for flagged in (False, True):
        shown = [s for s in points if bool(s.flags) == flagged]
        if not shown:
            continue
        xs = [s.spread or 0.0 for s in shown]
        ys = [s.disagreement or 0.0 for s in shown]
        x_error = _error_bars(xs, [(s.spread_ci_low, s.spread_ci_high) for s in shown])
        y_error = _error_bars(ys, [(s.disagreement_ci_low, s.disagreement_ci_high) for s in shown])
        axes.errorbar(
            xs,
            ys,
            xerr=x_error,
            yerr=y_error,
            fmt="o",
            color="#b42318" if flagged else "#8a8a8a",
            ecolor="#d0d0d0",
            elinewidth=0.8,
            markersize=5,
            label="flagged" if flagged else "not flagged",
        )
    for s in [s for s in points if s.flags][:LABELLED]:  # ranked: most flags first
        axes.annotate(
            f"{s.statement_id} ({', '.join(s.flags)})",
            (s.spread or 0.0, s.disagreement or 0.0),
            fontsize=7,
            xytext=(4, 4),
            textcoords="offset points",
        )
    axes.set_xlabel("candidate spread: highest − lowest candidate's compliance (95% CI, paired)")
    axes.set_ylabel("judges' disagreement: share of answers (95% CI, clustered by input)")
    # A paired spread's interval may reach below 0 (on shared inputs the "lowest" candidate can do better).
    lows = [s.spread_ci_low for s in points if s.spread_ci_low is not None]
    axes.set_xlim(min([-0.05, *lows]) - 0.05, 1.05)
    axes.set_ylim(-0.05, 1.05)
    if points:
        axes.legend(fontsize=8, loc="upper right")
    axes.set_title(f"Spec health, spec {spec}: one point per statement")
    return png_bytes(figure)


def _error_bars(values: list[float], intervals: list[tuple[float | None, float | None]]) -> list[list[float]]:
    """matplotlib's [below, above] lengths of each point's interval (0 where a point has none)."""
    return [
        [v - (low if low is not None else v) for v, (low, _) in zip(values, intervals, strict=True)],
        [(high if high is not None else v) - v for v, (_, high) in zip(values, intervals, strict=True)],
    ]
