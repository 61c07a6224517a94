"""`speceval report PATH... [--out DIR]` and `speceval export PATH... --format jsonl|parquet [--out FILE]`."""

from __future__ import annotations

import argparse
import itertools
from pathlib import Path
from typing import Any

from speceval.errors import ConfigError
from speceval.ranges import LIKERT_DROP, SAMPLE_SIZE, SEED, flag_type


def register(commands: Any) -> None:
    """Add the `report` and `export` subcommands."""
    report = commands.add_parser("report", help="HTML report with plots, and CSVs, from judged runs")
    report.add_argument("paths", nargs="+", type=Path, help="folders holding compliance and ranking runs")
    report.add_argument("--out", type=Path, default=Path("report"), help="output folder (default ./report)")
    report.add_argument("--prices", type=Path, help="price table overriding the shipped one")
    report.add_argument(
        "--labels",
        type=Path,
        help="a filled label sheet (speceval label-sheet): adds human agreement and prediction-powered rates",
    )
    report.add_argument(
        "--min-canary-accuracy",
        type=_share,
        metavar="SHARE",
        help="flag judges that get less than this share (0–1) of the spec's own example responses right",
    )
    report.add_argument(
        "--likert-drop",
        type=flag_type(LIKERT_DROP),
        metavar="K",
        help="a Likert turn judge's flip: a later turn rated K points or more below turn 1 (default 2)",
    )
    report.add_argument(
        "--no-figures",
        dest="figures",
        action="store_false",
        help="draw no figures (faster; the page says so): the same tables, CSVs and summary.md",
    )
    for name, rule in _HEALTH_FLAGS.items():
        report.add_argument(
            f"--health-{name.replace('_', '-')}",
            dest=f"health_{name}",
            type=_share,
            metavar="SHARE",
            help=f"spec health: {rule} (docs/spec-health.md)",
        )
    report.set_defaults(handler=_report)
    sheet = commands.add_parser("label-sheet", help="a CSV of sampled answers for a person to label")
    sheet.add_argument("paths", nargs="+", type=Path, help="folders holding compliance runs")
    sheet.add_argument("--n", type=flag_type(SAMPLE_SIZE), required=True, help="how many distinct answers to sample")
    sheet.add_argument("--seed", type=flag_type(SEED), default=0, help="seed of the stratified sample (default 0)")
    sheet.add_argument(
        "--out",
        type=Path,
        default=Path("labels.csv"),
        help="the CSV to write (default labels.csv; never over an existing file)",
    )
    sheet.add_argument("--force", action="store_true", help="replace an existing --out file (its labels are lost)")
    # Aim the labels where they pay: the headline judge's answers, one scope, candidate or variation.
    sheet.add_argument("--judge", metavar="ENTRY", help="only answers this judge entry judged (its name in the tables)")
    sheet.add_argument("--scope", choices=("conversation", "turn"), help="only whole answers, or only turn verdicts")
    sheet.add_argument("--candidate", metavar="C", help="only this candidate's answers")
    sheet.add_argument("--variation", metavar="V", help="only answers of this variation")
    sheet.add_argument(
        "--allocation",
        choices=("equal", "proportional", "neyman"),
        default="equal",
        help="labels per statement: equal (default), proportional to its answers, or neyman: to its answers x "
        "the judge's error spread there (from --pilot labels, else the judges' disagreement)",
    )
    sheet.add_argument("--pilot", type=Path, metavar="SHEET", help="neyman: a filled sheet whose labels estimate it")
    sheet.set_defaults(handler=_label_sheet)
    export = commands.add_parser("export", help="a flat table of every judged answer")
    export.add_argument("paths", nargs="+", type=Path)
    export.add_argument(
        "--format",
        choices=("jsonl", "parquet", "original", "inspect"),
        default="jsonl",
        help="jsonl or parquet: one row per verdict; original: the original SpecEval's folders and "
        "file shapes, for its analysis scripts; inspect: Inspect AI eval logs, one per spec, "
        "candidate, variation and run (needs speceval[inspect])",
    )
    export.add_argument(
        "--out",
        type=Path,
        help="output file (default verdicts.jsonl / verdicts.parquet), or for "
        "--format original / inspect a new folder (default original_layout "
        "/ inspect_logs)",
    )
    export.add_argument(
        "--log-format",
        choices=("eval", "json"),
        default="eval",
        help="--format inspect: Inspect's .eval (zip, the default) or .json log files",
    )
    export.add_argument(
        "--max-samples-per-log",
        type=int,
        default=None,
        help="--format inspect: a log of more samples is written as parts of at most this many, each its own "
        "file carrying the whole log's rates (default 2000: keeps memory flat; see docs/inspect.md)",
    )
    export.add_argument(
        "--labels",
        type=Path,
        help="--format inspect: a filled label sheet (speceval label-sheet): each log carries its judges' human "
        "accuracy beside their canary accuracy (a study's own labels file is read without it)",
    )
    export.add_argument(
        "--min-canary-accuracy",
        type=_share,
        metavar="SHARE",
        help="--format inspect: the line a judge's canary accuracy is held to, as speceval report's (a study's "
        "own judge_card / min_canary_accuracy is read without it)",
    )
    export.set_defaults(handler=_export)


_HEALTH_FLAGS = {
    "disagreement": "flag judges_disagree when the judges' disagreement interval is above this (default 0.2)",
    "fail_below": "flag all_fail when every candidate's interval is below this rate (default 0.5)",
    "pass_above": "flag all_pass when every candidate's interval is above this rate (default 0.9)",
    "spread": "flag model_dependent when the highest − lowest candidate's interval is above this (default 0)",
    "split": "an input splits the candidates when the SD of their compliance on it is at least this (default 0.4)",
}
"""The spec-health thresholds as flags (`HealthThresholds` holds the defaults; kept light for --help)."""


def _share(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number between 0 and 1") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"{text} is outside 0–1 (a share of the examples, e.g. 0.8)")
    return value


def _report(args: argparse.Namespace) -> int:
    from rich.markup import escape
    from rich.table import Table

    from speceval.analysis.rendering.data import ReportOptions
    from speceval.analysis.rendering.experiment_options import report_settings
    from speceval.analysis.rendering.report import build_report
    from speceval.analysis.tables.flips import DEFAULT_LIKERT_DROP
    from speceval.analysis.tables.health_records import HealthThresholds
    from speceval.batch.costs import PriceTable
    from speceval.cli.console import console, stdout
    from speceval.paths import check_output_dir

    check_output_dir(args.out, "--out")
    given = {
        name: getattr(args, f"health_{name}") for name in _HEALTH_FLAGS if getattr(args, f"health_{name}") is not None
    }
    if given.get("split", 0.0) > 0.5:
        raise ConfigError(
            f"--health-split {given['split']} is above 0.5, the largest SD compliance values in 0–1 can have"
        )
    flags: dict[str, Any] = {"health": given} if given else {}
    flags.update({k: getattr(args, k) for k in ("labels", "min_canary_accuracy") if getattr(args, k) is not None})
    # An experiment folder's report is built with its own settings (its card gates this report as it gated its
    # own), each flag given in place of the experiment's value.
    recorded, notes = report_settings(args.paths, flags)
    for note in notes:
        console.print(f"[bold yellow]warning:[/] {escape(note)}")
    options: ReportOptions = (
        recorded.options()
        if recorded
        else {
            "labels": args.labels,
            "min_canary_accuracy": args.min_canary_accuracy,
            "health": HealthThresholds(**given),
        }
    )
    options["likert_drop"] = int(args.likert_drop) if args.likert_drop is not None else DEFAULT_LIKERT_DROP
    options["figures"] = args.figures
    min_canary_accuracy = options.get("min_canary_accuracy")
    summary = build_report(args.paths, args.out, PriceTable.load(args.prices), **options)
    if min_canary_accuracy is not None and not summary.data.judge_accuracy:
        # Asked for, but there is nothing to check: say so rather than pass in silence (the report is written).
        console.print(
            "[bold yellow]warning:[/] --min-canary-accuracy checked nothing: no judge under these "
            "folders judged the spec's example responses (canaries)"
        )
    if summary.data.data_banner:
        stdout.print(f"[bold red]{summary.data.data_banner}[/]")
    for skipped in summary.data.skipped:
        stdout.print(f"[yellow]Skipped (no verdicts): {escape(skipped)}[/]")
    table = Table(title="compliance by variation (judged answers only; 95% CI clustered by input)", header_style="bold")
    # A Likert judge has no compliant share: its rows show the mean rating (as summary.md's headline does).
    rated = any(r.mean_rating is not None for r in summary.data.variations)
    columns = ("spec", "judge", "candidate", "variation", "judged", "rate", "95% CI", "runs", "not judged")
    for column in columns + (("mean rating 1-5 [95% CI]",) if rated else ()):
        table.add_column(column, overflow="fold")  # wrap, never cut: a model name must stay whole
    for r in summary.data.variations:
        table.add_row(
            r.spec,
            r.judge,
            r.candidate,
            r.variation,
            str(r.judged),
            _fmt(r.rate),
            _interval(r.ci_low, r.ci_high),
            " ".join(_fmt(run.rate) for run in r.runs),
            ", ".join(f"{n} {o}" for o, n in sorted(r.not_judged.items())) or "0",
            *([f"{_fmt(r.mean_rating)} {_interval(r.rating_ci_low, r.rating_ci_high)}"] if rated else []),
        )
    stdout.print(table)
    strengths = summary.data.bradley_terry
    for (spec, judge, variation), group in itertools.groupby(strengths, lambda s: (s.spec, s.judge, s.variation)):
        order = ", ".join(f"{s.candidate} ({s.strength:.2f})" for s in sorted(group, key=lambda s: -s.strength))
        stdout.print(f"Bradley–Terry, spec {spec}, judge {judge}, {variation}: {order}")
    for row in summary.data.judge_card:
        if row.passes is False:
            stdout.print(
                f"[yellow]Judge card:[/] judge {escape(row.judge)} on spec {escape(row.spec)} is kept out of the "
                f"headline: failed {escape('; '.join(row.failed_checks))}"
            )
    # The line in force, as the report resolved it (the flag, else the study's own): the flag alone read "None"
    # when the line came from the study's experiment.json.
    line = summary.data.card_lines.get("min_canary_accuracy", min_canary_accuracy)
    for accuracy in summary.data.judge_accuracy:
        if accuracy.below_minimum:
            stdout.print(
                f"[bold red]Judge {accuracy.judge} (spec {accuracy.spec}) got {_fmt(accuracy.accuracy)} of "
                f"the spec's example responses right, below the minimum canary accuracy {line}[/]"
            )
    flagged = [s for s in summary.data.health.statements if s.flags]
    if flagged:
        stdout.print(
            f"Spec health: {len(flagged)} of {len(summary.data.health.statements)} statement(s) flagged "
            "(statement_health.csv; docs/spec-health.md): "
            + "; ".join(f"{s.statement_id} ({', '.join(s.flags)})" for s in flagged[:5])
            + (" ..." if len(flagged) > 5 else "")
        )
    drawn = "" if args.figures else "; no figures drawn (--no-figures)"
    stdout.print(f"Report: {summary.html_path}  (summary.md, variation_statistics.json and CSVs beside it{drawn})")
    return 0


def _label_sheet(args: argparse.Namespace) -> int:
    from speceval.analysis.reading.statement_texts import statement_texts
    from speceval.analysis.tables.human_labels import write_label_sheet
    from speceval.analysis.tables.label_design import SheetFilter, design_of, write_design
    from speceval.analysis.tables.label_sampling import streamed_label_sheet
    from speceval.cli.console import stdout
    from speceval.paths import check_output_file

    check_output_file(args.out, "--out")
    if args.out.exists() and not args.force:  # a filled sheet holds a person's work: never replaced by default
        raise ConfigError(
            f"--out {args.out} exists (a sheet being filled?); name another file, or add --force to replace it"
        )
    aim = SheetFilter(judge=args.judge, scope=args.scope, candidate=args.candidate, variation=args.variation)
    spreads = None
    if args.allocation == "neyman":
        from speceval.analysis.tables.human_labels import checked_labels, label_records
        from speceval.analysis.tables.label_sampling import statement_spreads

        pilot = checked_labels(args.pilot, label_records(args.pilot), None) if args.pilot is not None else None
        spreads = statement_spreads(args.paths, aim, pilot)
    elif args.pilot is not None:
        raise ConfigError("--pilot goes with --allocation neyman (it estimates the error spreads it allocates by)")
    texts = statement_texts(args.paths)
    sheet, population = streamed_label_sheet(args.paths, args.n, args.seed, texts, aim, args.allocation, spreads)
    if not sheet:
        raise ConfigError(
            f"nothing to label under {', '.join(str(path) for path in args.paths)}: its judges are "
            "categorical (a category is neither a yes/no nor a rating that a label could agree with)"
        )
    write_label_sheet(args.out, sheet)
    design = write_design(args.out, design_of(population, sheet, args.n, args.seed, aim, args.allocation, spreads))
    stdout.print(
        f"{len(sheet)} answer(s) to label written to {args.out} (fill human_compliant: yes/no; blank "
        f"leaves one unlabelled; how they were drawn: {design}), then: speceval report ... --labels " + str(args.out)
    )
    return 0


def _fmt(value: float | None) -> str:
    return f"{value:.3f}" if value is not None else "–"


def _export(args: argparse.Namespace) -> int:
    from speceval.analysis.rendering.exports.export import export_verdicts
    from speceval.cli.console import stdout
    from speceval.paths import check_output_file

    if args.format == "inspect":
        from speceval.cli.commands.interop_cmd import export_inspect_logs

        code = export_inspect_logs(
            args.paths,
            args.out or Path("inspect_logs"),
            args.log_format,
            args.max_samples_per_log,
            args.labels,
            args.min_canary_accuracy,
        )
        _say_never_judged(args.paths, "score")
        return code
    if args.labels is not None or args.min_canary_accuracy is not None:  # never silently ignored
        raise ConfigError(
            "--labels and --min-canary-accuracy go with --format inspect (its logs carry each judge's card; the "
            "flat tables carry verdicts only)"
        )
    if args.format == "original":
        from speceval.analysis.rendering.exports.original_export import export_original
        from speceval.paths import check_output_dir

        out = args.out or Path("original_layout")
        check_output_dir(out, "--out")
        if out.exists() and any(out.iterdir()):
            raise ConfigError(f"--out {out} is not empty; give a new folder (the export never mixes with other files)")
        done = export_original(args.paths, out)
        if not done.files:  # an exit 0 with an empty (absent) folder would read as an export that worked
            raise ConfigError(
                f"nothing to write in the original layout under {out}: it holds binary and Likert compliance "
                f"verdicts and rankings, and these folders have {done.categorical_left_out} categorical and "
                f"{done.turn_verdicts_left_out} per-turn verdict(s) only; --format jsonl or parquet keeps them"
            )
        stdout.print(
            f"{done.files} file(s) in the original layout written under {out}"
            + (
                f"; {done.categorical_left_out} categorical verdict(s) left out (no original shape)"
                if done.categorical_left_out
                else ""
            )
            + (
                f"; {done.turn_verdicts_left_out} per-turn verdict(s) left out (the original's scripts "
                "would count each turn as an answer; --format jsonl keeps them)"
                if done.turn_verdicts_left_out
                else ""
            )
        )
        if done.unsplittable:
            stdout.print(
                "warning: the original's scripts split these folders at an 'x' that is part of a model name "
                f"(rankings: at the first; ratings: skipped): {', '.join(done.unsplittable)}"
            )
        _say_never_judged(args.paths)
        return 0
    out = args.out or Path(f"verdicts.{args.format}")
    check_output_file(out, "--out")
    if args.format == "parquet":
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            raise ConfigError(
                "parquet export needs pyarrow: pip install 'speceval[parquet]' (or use --format jsonl)"
            ) from None
    count = export_verdicts(args.paths, out, args.format)
    stdout.print(f"{count} row(s) written to {out}")
    _say_never_judged(args.paths)
    return 0


def _say_never_judged(paths: list[Path], unit: str = "row") -> None:
    """The candidates' answers no judge saw (their generation failed) have no verdict `unit`: said, never dropped."""
    from speceval.analysis.reading.skipped_answers import answers_never_judged
    from speceval.cli.console import stdout

    never = answers_never_judged(paths)
    if never:
        kinds = ", ".join(f"{n} {outcome}" for outcome, n in sorted(never.items()))
        stdout.print(
            f"{sum(never.values())} judgement(s) were never asked for, their candidate answer having failed "
            f"(generation: {kinds}; once per judge) and have no {unit} here; the report counts them in each rate's "
            "not_judged (answer_<outcome>)"
        )


def _interval(low: float | None, high: float | None) -> str:
    return f"{low:.3f}–{high:.3f}" if low is not None and high is not None else "–"
