"""The browsable sample view of the report: every verdict's input, answer, verdict and explanation, embedded in the
page as JSON data and shown only through `textContent`, so an answer containing `</script>` or HTML is text.

A rate in the report links here with the filters of the cell it came from (`#samples?candidate=…&variation=…`).
"""

from __future__ import annotations

import html
import json
from collections.abc import Callable, Iterator
from urllib.parse import urlencode

import numpy as np

from speceval.analysis.reading.columns import VerdictColumns
from speceval.analysis.reading.ranking_columns import RankingColumns
from speceval.analysis.reading.rows import ComplianceRow
from speceval.analysis.rendering.samples.ranking_record import pair_label
from speceval.analysis.rendering.samples.read_back import RankingReadBack, ReadBack
from speceval.analysis.rendering.samples.sample_record import (
    TEXT_LIMIT,
    SampleRecord,
    embedded_json,
    record_size,
    sample_record,
    shown_text,
    verdict_label,
)
from speceval.analysis.statistics.codes import dense
from speceval.analysis.tables.panel import Panel

FILTERS = ("judge", "candidate", "variation", "run", "statement", "type", "authority", "verdict")


def sample_link(text: str, **filters: object) -> str:
    """An HTML link to the sample view, filtered to the given fields (values are escaped)."""
    query = urlencode({k: str(v) for k, v in filters.items() if v is not None})
    return f'<a class="samples" href="#samples?{html.escape(query, quote=True)}">{html.escape(text)}</a>'


SAMPLE_LIMIT = 20_000
"""Most verdicts embedded in the page."""
SAMPLE_BYTES = 12_000_000
"""Most bytes of embedded sample data: with the tables and plots (a few MB however many verdicts there are) the
page stays under 20 MB at any size, however long the answers."""
SAMPLE_SEED = 0
"""Seed of the sample: the same verdicts give the same page."""


def _strata_codes(keys: list[tuple[object, ...]]) -> np.ndarray:
    index: dict[tuple[object, ...], int] = {}
    return np.array([index.setdefault(k, len(index)) for k in keys], dtype=np.int64)


def pick(
    strata: np.ndarray,
    sizes: Callable[[np.ndarray], np.ndarray],
    limit: int = SAMPLE_LIMIT,
    budget: int = SAMPLE_BYTES,
    seed: int = SAMPLE_SEED,
    expect: Callable[[np.ndarray], None] | None = None,
) -> np.ndarray:
    """Positions of the verdicts to embed, in file order: all when they fit in `limit` rows and `budget` bytes;
    else a seeded sample stratified by `strata` (per verdict: a code of its judge, candidate, variation, run and
    statement): each stratum's verdicts in a seeded random order, taken one from every stratum in turn until
    either bound is reached, so every cell and every statement of it has samples of its own before any has two.
    `sizes` gives the bytes of the records at some positions (asked only of the at most `limit` candidates, in
    blocks, and of none past the block where the budget is reached); `expect`, if given, is told the candidates
    first (a reader that must read a whole file for any of its records then reads it once: `ReadBack.expect`)."""
    count = len(strata)
    if count <= limit:
        if expect is not None:
            expect(np.arange(count))
        if _fitting(sizes, np.arange(count), budget) == count:
            return np.arange(count)
    keys = np.random.default_rng(seed).random(count)
    order = np.lexsort((keys, strata))
    del keys
    ordered = strata[order]
    starts = np.r_[0, np.flatnonzero(ordered[1:] != ordered[:-1]) + 1]
    turn = np.arange(count)
    turn -= np.repeat(starts, np.diff(np.r_[starts, count]))
    # Only the first `limit` of the (turn, stratum) order are taken: the turns below `last` already hold that
    # many, so a million verdicts are cut to about `limit` before the second sort.
    kept = turn < _turns_needed(np.diff(np.r_[starts, count]), limit)
    order, ordered, turn = order[kept], ordered[kept], turn[kept]
    sequence = order[np.lexsort((ordered, turn))][:limit]
    if expect is not None:
        expect(sequence)
    return np.sort(sequence[: _fitting(sizes, sequence, budget)])


SIZE_BLOCK = 2_500
"""Verdicts whose record sizes `pick` asks at once (each may be read back from its file to be sized)."""


def _fitting(sizes: Callable[[np.ndarray], np.ndarray], sequence: np.ndarray, budget: int) -> int:
    """How many of `sequence`, taken in order, fit in `budget` bytes: sizes asked a block at a time, none after
    the block where the budget is reached."""
    used = 0
    for start in range(0, len(sequence), SIZE_BLOCK):
        block = sizes(sequence[start : start + SIZE_BLOCK])
        within = used + np.cumsum(block) <= budget
        if not within.all():
            return start + int(np.argmin(within))
        used += int(block.sum())
    return len(sequence)


def _turns_needed(sizes: np.ndarray, limit: int) -> int:
    """The fewest turns T such that taking up to T verdicts from every stratum (of these sizes) gives `limit`."""
    low, high = 1, max(int(sizes.max()), 1)
    while low < high:
        middle = (low + high) // 2
        if int(np.minimum(sizes, middle).sum()) >= limit:
            high = middle
        else:
            low = middle + 1
    return low


def select_samples(
    rows: list[ComplianceRow], limit: int = SAMPLE_LIMIT, budget: int = SAMPLE_BYTES, seed: int = SAMPLE_SEED
) -> list[ComplianceRow]:
    """The rows `pick` chooses (rows already in memory; the report picks from columns: `sample_records`)."""
    strata = _strata_codes([(r.judge, r.model, r.variation, r.run, r.statement_id) for r in rows])
    chosen = pick(
        strata,
        lambda at: np.array([record_size(sample_record(rows[i])) for i in at], dtype=np.int64),
        limit,
        budget,
        seed,
    )
    return [rows[i] for i in chosen]


def sample_records(
    columns: VerdictColumns,
    panel: Panel | None,
    limit: int = SAMPLE_LIMIT,
    budget: int = SAMPLE_BYTES,
    seed: int = SAMPLE_SEED,
) -> tuple[list[SampleRecord], int]:
    """The records the page embeds, and how many verdicts there are in all: `pick` over every verdict (the
    judges' and the panel's), the verdicts it weighs read back from their files (the columns hold no text)."""
    both = columns if panel is None else columns.concat(panel.verdicts)
    # A stratum is a fact of the verdict's file: coded among the files, then gathered (no sort per verdict).
    strata = dense(
        both.file_codes("judge"),
        both.file_codes("model"),
        both.file_codes("variation"),
        np.array([f.run for f in both.facts], dtype=np.int64),
        both.file_codes("statement_id"),
    ).astype(np.int32)[both.file]  # fewer strata than files
    read_back = ReadBack(columns, both, panel)
    chosen = pick(strata, read_back.sizes, limit, budget, seed, read_back.expect)
    read_back.keep_only(chosen)
    records = read_back.records(chosen)
    return [record for record in records if record is not None], len(both)


def sample_section(rows: list[ComplianceRow], limit: int = SAMPLE_LIMIT, budget: int = SAMPLE_BYTES) -> str:
    """The samples section of rows in memory (see `records_section`)."""
    return "".join(records_section([sample_record(r) for r in select_samples(rows, limit, budget)], len(rows)))


def records_section(data: list[SampleRecord], total: int) -> Iterator[str]:
    """The samples section, in pieces (one per embedded record: the records are up to 12 MB, written as they come
    rather than copied whole): filters, and a table filled by the script from the records (of `total`)."""
    note = (
        f"<p><b>{len(data)} of {total} verdicts are embedded</b>: a seeded sample with the same number from "
        "every judge, candidate, variation, run and statement (as far as the page's size allows); "
        "<code>speceval export</code> writes all of them.</p>"
        if len(data) < total
        else ""
    )
    selects = "".join(
        f'<label>{name} <select id="filter-{name}" data-field="{name}"><option value="">all</option></select></label> '
        for name in FILTERS
    )
    yield (
        '<h2 id="samples">Samples</h2>'
        "<p>Every verdict behind the rates above: the input, the candidate's answer, the verdict and the judge's "
        "explanation. A conversation's verdict shows the transcript the judge saw (for a turn verdict: up to the "
        "judged answer, marked <i>judged</i>; user turns a simulated user wrote are marked <i>simulated user</i>). "
        "Links on rates open this view filtered to their cell.</p>"
        f'{note}<div class="filters">{selects}</div><p id="sample-count"></p>'
        '<table id="sample-table"><thead><tr><th>judge</th><th>candidate</th><th>variation</th><th>run</th>'
        "<th>statement</th><th>verdict</th><th>input</th><th>answer</th><th>explanation</th></tr></thead>"
        "<tbody></tbody></table>"
        '<script type="application/json" id="sample-data">['
    )
    for index, record in enumerate(data):  # what embedded_json(data) writes, a record at a time
        yield (", " if index else "") + embedded_json(record)
    yield f"]</script><script>{_script('samples', 'sample', FILTERS, _COMPLIANCE_CELLS)}</script>"


RANKING_FILTERS = ("judge", "pair", "variation", "run", "statement", "winner")
RANKING_SAMPLE_LIMIT = 5_000
"""Most comparisons embedded in the page (each carries two answers)."""
RANKING_SAMPLE_BYTES = 5_000_000
"""Most bytes of embedded comparisons: beside the verdicts' `SAMPLE_BYTES` and the tables, the page stays near
20 MB however long the answers (5,000 comparisons of two answers cut at `TEXT_LIMIT` were up to 30 MB)."""


def select_rankings(
    c: RankingColumns, limit: int = RANKING_SAMPLE_LIMIT, budget: int = RANKING_SAMPLE_BYTES, seed: int = SAMPLE_SEED
) -> np.ndarray:
    """Positions of the comparisons to embed, in file order: `pick` over the comparisons, stratified by judge,
    pair (either order), variation, run and statement, sized by their records as read back from their files."""
    return _pick_rankings(c, RankingReadBack(c), limit, budget, seed)


def _pick_rankings(c: RankingColumns, read_back: RankingReadBack, limit: int, budget: int, seed: int) -> np.ndarray:
    stratum_of_file, _ = c.file_keys(("judge", "variation", "run", "statement_id"), unordered_pair=True)
    return pick(stratum_of_file[c.file], read_back.sizes, limit, budget, seed, read_back.expect)


def ranking_samples(c: RankingColumns) -> list[SampleRecord]:
    """The embedded comparisons: a bounded seeded selection (`select_rankings`) with the input, both answers and
    the explanation read back from their files: the report keeps no text of a comparison in memory otherwise, and
    reads only the comparisons it weighs, each alone at the byte offset where the fold found it, checked to be the
    comparison that was folded (`speceval.analysis.rendering.samples.read_back`)."""
    read_back = RankingReadBack(c)
    chosen = _pick_rankings(c, read_back, RANKING_SAMPLE_LIMIT, RANKING_SAMPLE_BYTES, SAMPLE_SEED)
    read_back.keep_only(chosen)
    return [record for record in read_back.records(chosen) if record is not None]


def ranking_sample_section(samples: list[SampleRecord], total: int) -> str:
    """The ranking samples: each comparison with both answers (in the order the judge saw them), its verdict and
    the judge's explanation. `samples` are already chosen (bounded, every cell represented)."""
    if not samples:
        return ""
    note = (
        f"<p><b>{len(samples)} of {total} comparisons are embedded</b>: a seeded sample with the same number "
        "from every judge, pair, variation, run and statement (as far as the page's size allows); "
        "<code>speceval export</code> writes all of them.</p>"
        if len(samples) < total
        else ""
    )
    selects = "".join(
        f'<label>{name} <select id="filter-ranking-{name}" data-field="{name}"><option value="">all</option></select>'
        "</label> "
        for name in RANKING_FILTERS
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
      cell(tr, r.input, 'text');
      if (r.transcript) { transcript(tr, r.transcript); } else { cell(tr, r.output, 'text'); }
      cell(tr, r.explanation, 'text');
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
    return (
        _SCRIPT.replace("FILTERPREFIX", filter_prefix)
        .replace("SECTION", section)
        .replace("PREFIX", prefix)
        .replace("FIELDS", json.dumps(list(fields)))
        .replace("CELLS", cells)
    )


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
  // A conversation's verdict: every message with who wrote it; the judged turn's answer marked.
  function transcript(tr, messages) {
    var td = document.createElement('td'); td.className = 'text transcript';
    messages.forEach(function (m) {
      var div = document.createElement('div'); div.className = 'message ' + m.role.replace(' ', '-') +
        (m.judged ? ' judged' : '');
      var who = document.createElement('b'); who.textContent = '[' + m.role + (m.judged ? ', judged: ' + m.judged : '')
        + '] ';
      div.appendChild(who); div.appendChild(document.createTextNode(m.content)); td.appendChild(div);
    });
    tr.appendChild(td);
  }
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


__all__ = [
    "FILTERS",
    "RANKING_FILTERS",
    "SAMPLE_BYTES",
    "SAMPLE_LIMIT",
    "SAMPLE_SEED",
    "TEXT_LIMIT",
    "embedded_json",
    "pair_label",
    "pick",
    "ranking_sample_section",
    "ranking_samples",
    "records_section",
    "sample_link",
    "sample_records",
    "sample_section",
    "select_rankings",
    "select_samples",
    "shown_text",
    "verdict_label",
]
