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
from speceval.analysis.tables.human_labels import checked_labels, item_id, label_records, labellable
from speceval.analysis.tables.judge_quality import LabelTally, input_digest, tally_verdict
from speceval.analysis.tables.label_design import check_design

_Key = tuple[str, str, str]
_NONE = -1


def labelled_tally(paths: Sequence[Path], labels_path: Path) -> LabelTally:
    """The judges' verdicts under `paths` (yes/no and Likert judges'; panels' and categorical judges' aside) with
    the human labels of `labels_path`, one results file at a time. A malformed label or one that names no answer is
    an InputError naming its line."""
    records = label_records(labels_path)
    design = check_design(labels_path, records)  # a label the sheet's design did not draw is never weighed as if drawn
    wanted = {item: code for code, item in enumerate(dict.fromkeys(item for _, item, value in records if value))}
    kinds: dict[_Key, set[str | None]] = defaultdict(set)
    # Per (spec, judge, candidate): its judged verdicts, and the label each matches (a code of `wanted`, or _NONE)
    # as read and under its settings' variation, whether it is outside an experiment (variation default), and its
    # statement and variation (as read, and by settings) as codes of `names`, and its input's digest.
    verdicts: dict[_Key, tuple[array[int], ...]] = {}
    modes: dict[_Key, str] = {}
    names: dict[str, int] = {}
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
            by_settings_variation = settings_variation(row.candidate_settings) if default else row.variation
            apart = item_id(row, by_settings_variation) if default else plain
            for by_settings, item in ((False, plain), (True, apart)):
                if item in wanted:
                    matched[(key, default, by_settings)].add(item)
            verdict = tally_verdict(row)
            if verdict is not None:
                modes[key] = row.mode
                columns = verdicts.setdefault(
                    key,
                    (array("b"), array("i"), array("i"), array("b"), array("i"), array("q"), array("i"), array("i")),
                )
                f, as_read, as_settings, outside, statement, text, variation, settings = columns
                f.append(verdict)
                as_read.append(wanted.get(plain, _NONE))
                as_settings.append(wanted.get(apart, _NONE))
                outside.append(int(default))
                text.append(input_digest(row.spec, row.statement_id, row.input))  # 8 bytes, no text kept
                for column, value in (
                    (statement, row.statement_id),
                    (variation, row.variation),
                    (settings, by_settings_variation),
                ):
                    column.append(names.setdefault(value, len(names)))
    mixed = mixed_settings(kinds)  # the variations the report's fold gave these verdicts (it warned already)
    known: set[str] = set()
    for (key, default, by_settings), items in matched.items():
        if by_settings == (default and key in mixed):
            known |= items
    labels = checked_labels(labels_path, records, known)
    label_names, texts = list(wanted), list(names)
    tally = LabelTally(guides=design.expected_errors() if design is not None else None, designed=design is not None)
    for key, columns in sorted(verdicts.items()):
        for verdict, read_code, settings_code, was_outside, statement, text, variation, settings in zip(
            *columns, strict=True
        ):
            apart_here = was_outside and key in mixed
            code = settings_code if apart_here else read_code
            tally.add(
                (*key, texts[settings if apart_here else variation]),
                verdict,
                None if code == _NONE else labels.get(label_names[code]),
                texts[statement],
                text,
                modes[key],
            )
    return tally


def _not_read(file: Path, rows: Iterable[object], offsets: object) -> None:
    """Rankings carry no compliance verdict a label could name (the report's fold read and checked them)."""
