"""Human labels matched to the judges' verdicts as the results files are read (`speceval report --labels`): what
agreement and PPI need is kept as two bytes a verdict (`LabelTally`), not a row with its texts per verdict.

A label names an answer by `item_id`, a digest of its texts and of the variation it is reported under. That
variation is known only once every file is read (runs of one candidate made with different settings are reported
apart, `mixed_settings`), so a verdict outside an experiment is matched both ways as it is read, and the match of
the variation it ends under is kept.
"""

from __future__ import annotations

from array import array
from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path

from speceval.analysis.reading.load import walk
from speceval.analysis.reading.rows import DEFAULT_VARIATION, Found
from speceval.analysis.reading.settings import mixed_settings, settings_variation
from speceval.analysis.tables.judge_quality import (
    LabelTally,
    checked_labels,
    item_id,
    label_records,
    labellable,
)

_Key = tuple[str, str, str]
_NONE = -1


def labelled_tally(paths: Sequence[Path], labels_path: Path) -> LabelTally:
    """The judges' verdicts under `paths` (categorical judges' aside) with the human labels of `labels_path`, one
    results file at a time. A malformed label or one that names no answer is an InputError naming its line."""
    records = label_records(labels_path)
    wanted = {item: code for code, item in enumerate(dict.fromkeys(item for _, item, value in records if value))}
    kinds: dict[_Key, set[str | None]] = defaultdict(set)
    # Per (spec, judge, candidate): its judged verdicts, and the label each matches (a code of `wanted`, or _NONE)
    # as read and under its settings' variation, and whether it is outside an experiment (variation default).
    verdicts: dict[_Key, tuple[array[int], array[int], array[int], array[int]]] = {}
    # Labels matched, per (spec, judge, candidate), outside an experiment or not, as read or by settings.
    matched: dict[tuple[_Key, bool, bool], set[str]] = defaultdict(set)
    for _, rows, _ in walk(paths, Found(), keep=False, rankings=_not_read):
        for row in rows:
            key = (row.spec, row.judge, row.model)
            default = row.variation == DEFAULT_VARIATION
            if default:
                kinds[key].add(row.candidate_settings)
            if not labellable(row):
                continue
            plain = item_id(row)
            apart = item_id(row, settings_variation(row.candidate_settings)) if default else plain
            for by_settings, item in ((False, plain), (True, apart)):
                if item in wanted:
                    matched[(key, default, by_settings)].add(item)
            if row.outcome == "judged" and row.compliant is not None:
                f, as_read, as_settings, outside = verdicts.setdefault(
                    key, (array("b"), array("i"), array("i"), array("b")))
                f.append(int(row.compliant))
                as_read.append(wanted.get(plain, _NONE))
                as_settings.append(wanted.get(apart, _NONE))
                outside.append(int(default))
    mixed = mixed_settings(kinds)  # the variations the report's fold gave these verdicts (it warned already)
    known: set[str] = set()
    for (key, default, by_settings), items in matched.items():
        if by_settings == (default and key in mixed):
            known |= items
    labels = checked_labels(labels_path, records, known)
    names = list(wanted)
    tally = LabelTally()
    for key, (f, as_read, as_settings, outside) in sorted(verdicts.items()):
        for verdict, read_code, settings_code, was_outside in zip(f, as_read, as_settings, outside, strict=True):
            code = settings_code if was_outside and key in mixed else read_code
            tally.add(key, bool(verdict), None if code == _NONE else labels.get(names[code]))
    return tally


def _not_read(file: Path, rows: Iterable[object], offsets: object) -> None:
    """Rankings carry no compliance verdict a label could name (the report's fold read and checked them)."""
