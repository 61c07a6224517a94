"""The browsable sample view of the report: every verdict's input, answer, verdict and explanation, embedded in the
page as JSON data and shown only through `textContent`, so an answer containing `</script>` or HTML is text.

A rate in the report links here with the filters of the cell it came from (`#samples?candidate=…&variation=…`).
"""

from __future__ import annotations

import html
import json
import random
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import urlencode

from speceval.analysis.load import ComplianceRow, RankingRow, VerdictDetail, ranking_details

FILTERS = ("judge", "candidate", "variation", "run", "statement", "type", "authority", "verdict")


def verdict_label(row: ComplianceRow) -> str:
    """What the judge said, in one word or two (an outcome other than `judged` is shown as itself)."""
    if row.outcome != "judged":
        return row.outcome
    if row.category is not None:
        return row.category
    if row.compliant is not None:
        return "compliant" if row.compliant else "not compliant"
    return f"rating {row.rating:g}" if row.rating is not None else "judged"


def sample_link(text: str, **filters: object) -> str:
    """An HTML link to the sample view, filtered to the given fields (values are escaped)."""
    query = urlencode({k: str(v) for k, v in filters.items() if v is not None})
    return f'<a class="samples" href="#samples?{html.escape(query, quote=True)}">{html.escape(text)}</a>'


def embedded_json(data: object) -> str:
    """JSON that cannot end the <script> element it sits in, nor open a comment or CDATA section."""
    text = json.dumps(data, ensure_ascii=False)
    return text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")


SAMPLE_LIMIT = 20_000
"""Most verdicts embedded in the page."""
SAMPLE_BYTES = 12_000_000
"""Most bytes of embedded sample data: with the tables and plots (a few MB however many verdicts there are) the
page stays under 20 MB at any size, however long the answers."""
SAMPLE_SEED = 0
"""Seed of the sample: the same verdicts give the same page."""
TEXT_LIMIT = 1_500
"""Characters of one input, answer or explanation shown in the page; the rest is cut with a note (the export has
every character)."""


TRANSCRIPT_LIMIT = 4 * TEXT_LIMIT
"""Characters of a conversation's transcript shown in the page (every message, the answers between included)."""


def shown_text(text: str, limit: int = TEXT_LIMIT) -> str:
    """`text`, cut at `limit` characters with a note saying how much more the export has."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]} [… {len(text) - limit:,} more characters: speceval export has them all]"


def _sample_record(r: ComplianceRow) -> dict[str, str]:
    return {"judge": r.judge, "candidate": r.model, "variation": r.variation, "run": str(r.run),
            "statement": r.statement_id, "type": r.statement_type, "authority": r.authority_level,
            # A conversation judged whole shows its transcript; a turn verdict says which turn it is about.
            "verdict": verdict_label(r) if r.turn is None else f"turn {r.turn}: {verdict_label(r)}",
            "input": shown_text(r.input),
            "output": shown_text(r.transcript, TRANSCRIPT_LIMIT) if r.transcript else shown_text(r.output),
            "explanation": shown_text(r.explanation or (f"[{r.outcome}] {r.problem}" if r.problem else "")),
            "source": r.source}


def _size(record: dict[str, str]) -> int:
    """Bytes the record takes in the page (as `embedded_json` writes it, plus a separator)."""
    return len(embedded_json(record).encode("utf-8")) + 2


def select_samples(rows: list[ComplianceRow], limit: int = SAMPLE_LIMIT, budget: int = SAMPLE_BYTES,
                   seed: int = SAMPLE_SEED) -> list[ComplianceRow]:
    """All rows when they fit in `limit` rows and `budget` bytes; else a seeded sample stratified by (judge,
    candidate, variation, run, statement): each stratum's rows in a seeded random order, taken one from every
    stratum in turn until either bound is reached, so every cell and every statement of it has samples of its own
    before any has two. The picked rows keep their order in the files."""
    if len(rows) <= limit:
        sizes = [_size(_sample_record(r)) for r in rows]
        if sum(sizes) <= budget:
            return rows
    strata: dict[tuple[str, str, str, int, str], list[int]] = {}
    for position, row in enumerate(rows):
        strata.setdefault((row.judge, row.model, row.variation, row.run, row.statement_id), []).append(position)
    rng = random.Random(seed)
    queues = list(strata.values())
    for queue in queues:
        rng.shuffle(queue)
    picked: list[int] = []
    used = 0
    for turn in range(max(len(queue) for queue in queues)):
        for queue in queues:
            if turn >= len(queue):
                continue
            size = _size(_sample_record(rows[queue[turn]]))
            if len(picked) >= limit or used + size > budget:
                return [rows[p] for p in sorted(picked)]
            picked.append(queue[turn])
            used += size
    return [rows[p] for p in sorted(picked)]


def sample_section(rows: list[ComplianceRow], limit: int = SAMPLE_LIMIT, budget: int = SAMPLE_BYTES) -> str:
    """The samples section: filters, a table filled by the script from the embedded data."""
    total = len(rows)
    rows = select_samples(rows, limit, budget)
    note = (f"<p><b>{len(rows)} of {total} verdicts are embedded</b>: a seeded sample with the same number from "
            "every judge, candidate, variation, run and statement (as far as the page's size allows); "
            "<code>speceval export</code> writes all of them.</p>" if len(rows) < total else "")
    data = [_sample_record(r) for r in rows]
    selects = "".join(
        f'<label>{name} <select id="filter-{name}" data-field="{name}"><option value="">all</option></select></label> '
        for name in FILTERS
    )
    return (
        '<h2 id="samples">Samples</h2>'
        "<p>Every verdict behind the rates above: the input, the candidate's answer, the verdict and the judge's "
        "explanation. Links on rates open this view filtered to their cell.</p>"
        f'{note}<div class="filters">{selects}</div><p id="sample-count"></p>'
        '<table id="sample-table"><thead><tr><th>judge</th><th>candidate</th><th>variation</th><th>run</th>'
        "<th>statement</th><th>verdict</th><th>input</th><th>answer</th><th>explanation</th></tr></thead>"
        "<tbody></tbody></table>"
        f'<script type="application/json" id="sample-data">{embedded_json(data)}</script>'
        f"<script>{_script('samples', 'sample', FILTERS, _COMPLIANCE_CELLS)}</script>"
    )


RANKING_FILTERS = ("judge", "pair", "variation", "run", "statement", "winner")
RANKING_SAMPLE_LIMIT = 5_000
"""Most comparisons embedded in the page (each carries two answers)."""


def pair_label(model: str, opponent: str) -> str:
    """The pair filter's value: both names, sorted (a comparison in either order belongs to it)."""
    return " vs ".join(sorted((model, opponent)))


def select_rankings(rows: list[RankingRow], limit: int = RANKING_SAMPLE_LIMIT) -> list[RankingRow]:
    """All rows when they fit; else the same number from every (judge, pair, variation, run) cell, in file order."""
    if len(rows) <= limit:
        return rows
    cells: dict[tuple[str, str, str, int], list[RankingRow]] = {}
    for row in rows:
        cells.setdefault((row.judge, pair_label(row.model_a, row.model_b), row.variation, row.run), []).append(row)
    per_cell = max(1, limit // len(cells))
    return [row for cell in cells.values() for row in cell[:per_cell]]


def ranking_samples(rows: list[RankingRow], roots: Sequence[Path]) -> list[dict[str, str]]:
    """The embedded comparisons: a bounded selection of `rows` with both answers and the explanation, read back
    from their files (the report keeps no answer text of rankings in memory otherwise)."""
    chosen = select_rankings(rows)
    details: dict[str, dict[int, VerdictDetail]] = {}
    samples = []
    for row in chosen:
        if row.source not in details:
            details[row.source] = _details_of(row.source, roots)
        detail = details[row.source].get(row.index, VerdictDetail())
        winner = {1: "A", -1: "B", 0: "tie"}.get(row.rank, row.outcome) if row.outcome == "judged" else row.outcome
        samples.append({"judge": row.judge, "pair": pair_label(row.model_a, row.model_b), "model_a": row.model_a,
                        "model_b": row.model_b, "variation": row.variation, "run": str(row.run),
                        "statement": row.statement_id, "winner": str(winner), "input": shown_text(row.input),
                        "output_a": _answer_shown(detail.transcript_a, detail.output_a),
                        "output_b": _answer_shown(detail.transcript_b, detail.output_b),
                        "explanation": shown_text(detail.explanation or detail.parse_error or
                                                  (detail.raw_judge_response or ""))})
    return samples


def _answer_shown(transcript: str | None, answer: str | None) -> str:
    """A compared answer as the page shows it: its conversation's transcript when it has one."""
    return shown_text(transcript, TRANSCRIPT_LIMIT) if transcript else shown_text(answer or "")


def _details_of(source: str, roots: Sequence[Path]) -> dict[int, VerdictDetail]:
    for root in roots:
        base = Path(root) if Path(root).is_dir() else Path(root).parent
        if (base / source).is_file():
            return ranking_details(base / source)
    return {}


def ranking_sample_section(samples: list[dict[str, str]], total: int) -> str:
    """The ranking samples: each comparison with both answers (in the order the judge saw them), its verdict and
    the judge's explanation. `samples` are already chosen (bounded, every cell represented)."""
    if not samples:
        return ""
    note = (f"<p><b>{len(samples)} of {total} comparisons are embedded</b> (the same number from every judge, pair, "
            "variation and run); <code>speceval export</code> writes all of them.</p>" if len(samples) < total else "")
    selects = "".join(
        f'<label>{name} <select id="filter-ranking-{name}" data-field="{name}"><option value="">all</option></select>'
        "</label> " for name in RANKING_FILTERS
    )
    return (
        '<h2 id="ranking-samples">Ranking samples</h2>'
        "<p>Every comparison behind the win rates: the input, answer A and answer B as the judge saw them, the "
        "winner and the judge's explanation. Each pair is judged in both orders; <i>model</i> is the row's "
        "candidate, shown as A or B.</p>"
        f'{note}<div class="filters">{selects}</div><p id="ranking-sample-count"></p>'
        '<table id="ranking-sample-table"><thead><tr><th>judge</th><th>A</th><th>B</th><th>variation</th>'
        "<th>run</th><th>statement</th><th>winner</th><th>input</th><th>answer A</th><th>answer B</th>"
        "<th>explanation</th></tr></thead><tbody></tbody></table>"
        f'<script type="application/json" id="ranking-sample-data">{embedded_json(samples)}</script>'
        f"<script>{_script('ranking-samples', 'ranking-sample', RANKING_FILTERS, _RANKING_CELLS, 'ranking-')}"
        "</script>"
    )


_COMPLIANCE_CELLS = """
      cell(tr, r.judge); cell(tr, r.candidate); cell(tr, r.variation); cell(tr, r.run);
      cell(tr, r.statement + ' (' + r.type + ', ' + r.authority + ')');
      cell(tr, r.verdict, r.verdict === 'compliant' ? 'ok' : (r.verdict === 'not compliant' ? 'bad' : 'other'));
      cell(tr, r.input, 'text'); cell(tr, r.output, 'text'); cell(tr, r.explanation, 'text');
"""
_RANKING_CELLS = """
      cell(tr, r.judge); cell(tr, r.model_a); cell(tr, r.model_b); cell(tr, r.variation); cell(tr, r.run);
      cell(tr, r.statement); cell(tr, r.winner, 'other');
      cell(tr, r.input, 'text'); cell(tr, r.output_a, 'text'); cell(tr, r.output_b, 'text');
      cell(tr, r.explanation, 'text');
"""


def _script(section: str, prefix: str, fields: tuple[str, ...], cells: str, filter_prefix: str = "") -> str:
    """The view's script: filters from the embedded rows, the table filled with textContent only (sample text is
    never parsed as HTML), and the filters a link's `#<section>?field=value` asks for."""
    return (_SCRIPT.replace("FILTERPREFIX", filter_prefix).replace("SECTION", section).replace("PREFIX", prefix)
            .replace("FIELDS", json.dumps(list(fields))).replace("CELLS", cells))


# Cells are filled with textContent only: sample text is never parsed as HTML.
_SCRIPT = """
(function () {
  var rows = JSON.parse(document.getElementById('PREFIX-data').textContent);
  var fields = FIELDS;
  var limit = 300;
  fields.forEach(function (field) {
    var select = document.getElementById('filter-FILTERPREFIX' + field);
    var values = Array.from(new Set(rows.map(function (r) { return r[field]; }))).sort();
    values.forEach(function (v) { var o = document.createElement('option'); o.value = v; o.textContent = v;
                                  select.appendChild(o); });
    select.addEventListener('change', render);
  });
  function cell(tr, text, cls) { var td = document.createElement('td'); td.textContent = text;
                                 if (cls) { td.className = cls; } tr.appendChild(td); }
  function render() {
    var chosen = {};
    fields.forEach(function (f) { chosen[f] = document.getElementById('filter-FILTERPREFIX' + f).value; });
    var shown = rows.filter(function (r) {
      return fields.every(function (f) { return !chosen[f] || r[f] === chosen[f]; });
    });
    var body = document.querySelector('#PREFIX-table tbody');
    body.replaceChildren();
    shown.slice(0, limit).forEach(function (r) {
      var tr = document.createElement('tr');
CELLS      body.appendChild(tr);
    });
    document.getElementById('PREFIX-count').textContent = shown.length + ' of ' + rows.length +
      ' match' + (shown.length > limit ? ' (first ' + limit + ' shown)' : '');
  }
  function fromHash() {
    var hash = window.location.hash;
    if (hash.indexOf('#SECTION?') !== 0 && hash !== '#SECTION') { return; }
    var params = new URLSearchParams(hash.split('?')[1] || '');
    fields.forEach(function (f) {
      var select = document.getElementById('filter-FILTERPREFIX' + f);
      var wanted = params.get(f) || '';
      select.value = Array.from(select.options).some(function (o) { return o.value === wanted; }) ? wanted : '';
    });
    render();
    document.getElementById('SECTION').scrollIntoView();
  }
  window.addEventListener('hashchange', fromHash);
  render();
  fromHash();
})();
"""
