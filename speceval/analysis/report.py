"""`build_report`: a self-contained HTML page (plots embedded as PNG) plus the CSVs behind every number."""

from __future__ import annotations

import base64
import csv
import html
import io
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
from pydantic import BaseModel

from speceval.analysis import plots
from speceval.analysis.load import load_verdicts
from speceval.analysis.tables import (
    Agreement,
    ComplianceRate,
    WinRate,
    compliance_rates,
    judge_agreement,
    judge_bias,
    position_consistency,
    strengths,
    win_rates,
)
from speceval.atomic import atomic_write_bytes
from speceval.costs import PriceTable
from speceval.errors import InputError
from speceval.ops import RunCost, run_costs


class ReportSummary(BaseModel):
    """What `build_report` computed (also printed by `speceval report`)."""

    html_path: Path
    csv_paths: list[Path]
    compliance: list[ComplianceRate]
    win_rates: list[WinRate]
    bradley_terry: dict[str, dict[str, float]]
    position_consistency: dict[str, tuple[int, int]]
    agreement: list[Agreement]
    costs: list[RunCost]


def build_report(paths: Sequence[Path], out_dir: Path, prices: PriceTable | None = None) -> ReportSummary:
    """Read every verdict under `paths` and write `report.html` and CSVs into `out_dir`."""
    verdicts = load_verdicts(paths)
    if not verdicts.compliance and not verdicts.rankings:
        raise InputError(paths[0], "no compliance or ranking results found here (expected results/*.json files)")
    rates = compliance_rates(verdicts.compliance)
    per_statement = compliance_rates(verdicts.compliance, per_statement=True)
    wins = win_rates(verdicts.rankings)
    bt = strengths(verdicts.rankings)
    consistency = position_consistency(verdicts.rankings)
    agreement = judge_agreement(verdicts.compliance)
    costs = run_costs(paths, prices or PriceTable.load())
    out_dir.mkdir(parents=True, exist_ok=True)
    csv_paths = [
        _csv(out_dir / "compliance.csv", [r.model_dump(exclude={"not_judged"}) | _flat(r.not_judged) for r in rates]),
        _csv(out_dir / "compliance_per_statement.csv",
             [r.model_dump(exclude={"not_judged"}) | _flat(r.not_judged) for r in per_statement]),
        _csv(out_dir / "win_rates.csv", [w.model_dump() for w in wins]),
        _csv(out_dir / "bradley_terry.csv",
             [{"judge": j, "model": m, "strength": s} for j, table in bt.items() for m, s in table.items()]),
        _csv(out_dir / "position_consistency.csv",
             [{"judge": j, "consistent": c, "compared": n, "rate": c / n if n else None}
              for j, (c, n) in consistency.items()]),
        _csv(out_dir / "agreement.csv", [a.model_dump() for a in agreement]),
        _csv(out_dir / "costs.csv", [c.model_dump() for c in costs]),
    ]
    page = _html(rates, per_statement, wins, bt, consistency, agreement, costs)
    html_path = out_dir / "report.html"
    atomic_write_bytes(html_path, page.encode("utf-8"))
    return ReportSummary(html_path=html_path, csv_paths=csv_paths, compliance=rates, win_rates=wins,
                         bradley_terry=bt, position_consistency=consistency, agreement=agreement, costs=costs)


def _flat(counts: dict[str, int]) -> dict[str, int]:
    return {f"not_judged_{k}": v for k, v in sorted(counts.items())}


def _csv(path: Path, rows: Iterable[dict[str, object]]) -> Path:
    rows = list(rows)
    columns = sorted({key for row in rows for key in row}, key=lambda k: (k.startswith("not_judged"), k))
    if rows:
        first = list(rows[0])
        columns = first + [c for c in columns if c not in first]
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns)
    writer.writeheader()
    writer.writerows(rows)
    atomic_write_bytes(path, buffer.getvalue().encode("utf-8"))
    return path


def _img(png: bytes, alt: str) -> str:
    return f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{base64.b64encode(png).decode("ascii")}">'


def _table(headers: list[str], rows: Iterable[Iterable[object]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(_fmt(cell))}</td>" for cell in row) + "</tr>" for row in rows
    )
    return f"<table><tr>{head}</tr>{body}</table>"


def _fmt(value: object) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def _html(rates: list[ComplianceRate], per_statement: list[ComplianceRate], wins: list[WinRate],
          bt: dict[str, dict[str, float]], consistency: dict[str, tuple[int, int]], agreement: list[Agreement],
          costs: list[RunCost]) -> str:
    parts = ["<h1>speceval report</h1>",
             "<p>Rates count judged answers only; unparsed, failed and missing judgements are shown in their own "
             "column and never count as compliant or non-compliant. Intervals are 95% Wilson score intervals.</p>"]
    if rates:
        parts.append("<h2>Compliance per candidate and judge</h2>")
        parts.append(_table(
            ["spec", "judge", "candidate", "judged", "compliant", "rate", "95% CI", "not judged", "mean length"],
            ([r.spec, r.judge, r.model, r.judged, r.compliant, r.rate,
              f"{r.ci_low:.3f}–{r.ci_high:.3f}" if r.ci_low is not None and r.ci_high is not None else None,
              ", ".join(f"{n} {o}" for o, n in sorted(r.not_judged.items())) or "0", r.mean_output_chars]
             for r in rates)))
        parts.append(_img(plots.compliance_bars(rates), "compliance per candidate"))
        judges, models = sorted({r.judge for r in rates}), sorted({r.model for r in rates})
        bias = judge_bias(rates)
        if bias:
            matrix = np.array([[bias.get((j, m), np.nan) for m in models] for j in judges])
            parts.append("<h2>Judge bias (judge's rate minus the cross-judge mean)</h2>")
            parts.append(_img(plots.heatmap(matrix, judges, models, "judge bias", diverging=True), "judge bias"))
        means = {m: [r.rate for r in rates if r.model == m and r.rate is not None] for m in models}
        parts.append("<h2>Cross-judge mean compliance</h2>")
        parts.append(_table(["candidate", "judges", "mean rate"],
                            ([m, len(v), sum(v) / len(v) if v else None] for m, v in means.items())))
        statements = sorted({r.statement_id or "" for r in per_statement})
        columns = sorted({f"{r.model} / {r.judge}" for r in per_statement})
        matrix = np.full((len(statements), len(columns)), np.nan)
        for r in per_statement:
            if r.rate is not None:
                matrix[statements.index(r.statement_id or ""), columns.index(f"{r.model} / {r.judge}")] = r.rate
        parts.append("<h2>Compliance per statement</h2>")
        parts.append(_img(plots.heatmap(matrix, statements, columns, "compliance per statement"), "per statement"))
        parts.append("<h2>Answer length and compliance</h2>")
        parts.append(_img(plots.length_scatter(rates), "length vs compliance"))
    if agreement:
        parts.append("<h2>Inter-judge agreement</h2>")
        parts.append(_table(["judges", "kind", "items", "kappa"], ([a.judges, a.kind, a.items, a.kappa]
                                                                  for a in agreement)))
    if wins:
        parts.append("<h2>Pairwise win rates (both orders; ties count half)</h2>")
        parts.append(_table(["judge", "model", "opponent", "games", "wins", "ties", "losses", "win rate", "95% CI"],
                            ([w.judge, w.model, w.opponent, w.games, w.wins, w.ties, w.losses, w.rate,
                              f"{w.ci_low:.3f}–{w.ci_high:.3f}" if w.ci_low is not None and w.ci_high is not None
                              else None] for w in wins)))
        for judge in sorted({w.judge for w in wins}):
            matrix, models = plots.win_matrix(wins, judge)
            parts.append(_img(plots.heatmap(matrix, models, models, f"win rate (row vs column), judge {judge}"),
                              f"win rates {judge}"))
    if bt:
        parts.append("<h2>Bradley–Terry ranking</h2>")
        parts.append(_table(["judge", "rank", "model", "strength"],
                            ([j, i + 1, m, s] for j, table in bt.items()
                             for i, (m, s) in enumerate(sorted(table.items(), key=lambda kv: -kv[1])))))
    if consistency:
        parts.append("<h2>Position consistency</h2>")
        parts.append(_table(["judge", "consistent", "compared", "rate"],
                            ([j, c, n, c / n if n else None] for j, (c, n) in consistency.items())))
    if costs:
        parts.append("<h2>Cost per run</h2>")
        parts.append(_table(["run", "stage", "model", "requests", "input tokens", "output tokens", "cost USD"],
                            ([c.run_dir, c.kind, c.model, c.requests, c.input_tokens, c.output_tokens, c.cost_usd]
                             for c in costs)))
    style = ("body{font-family:sans-serif;margin:2em;max-width:1200px}table{border-collapse:collapse;margin:1em 0}"
             "td,th{border:1px solid #ccc;padding:3px 8px;font-size:13px}img{max-width:100%;display:block}")
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>speceval report</title>"
            f"<style>{style}</style></head><body>{''.join(parts)}</body></html>")
