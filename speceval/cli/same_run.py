"""The same generation run asked for again: `--resume` with the flags repeated, or the whole command repeated.

Up-arrow and append `--resume RUN_DIR` is the usual way to resume, so flags that repeat what the run recorded are
accepted (paths compared after resolving) and only a real change is refused, naming each flag with both values.
Repeating a command whose identical run already finished reuses that run instead of paying for it again.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from speceval.batch.manifest import RunManifest
from speceval.batch.records import Outcome
from speceval.cli.console import console, stdout, summary_table, synthetic_banner
from speceval.conversations.simulated_user import read_instructions
from speceval.endpoint_keys import LIMIT_KEYS
from speceval.errors import ConfigError
from speceval.providers.registry import resolve_org


def _path(value: object) -> Path:
    return Path(str(value)).expanduser().resolve()


def _number(value: object) -> float | None:
    return None if value is None else float(str(value))


def _show(value: object) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def resume_changes(args: argparse.Namespace, manifest: RunManifest, run_dir: Path) -> list[str]:
    """Each flag given with `--resume` whose value differs from what the run recorded, as 'flag: was X, now Y'."""
    params = manifest.parameters.get("params", {})
    changes: list[str] = []

    def compare(flag: str, given: object, recorded: object, same: bool) -> None:
        if given is not None and not same:
            changes.append(f"{flag} was {_show(recorded)}, now {_show(given)}")

    compare(
        "--spec-path",
        args.spec_path,
        manifest.spec_path,
        args.spec_path is None or _path(args.spec_path) == _path(manifest.spec_path),
    )
    compare(
        "--pregenerated-inputs-dir",
        args.pregenerated_inputs_dir,
        manifest.inputs_path,
        args.pregenerated_inputs_dir is None or _path(args.pregenerated_inputs_dir) == _path(manifest.inputs_path),
    )
    compare("--model-name", args.model_name, manifest.model_name, args.model_name == manifest.model_name)
    if args.org is not None:
        given_org = resolve_org(args.model_name or manifest.model_name, args.org).org
        compare("--org", args.org, manifest.provider, given_org == manifest.provider)
    compare("--spec-name", args.spec_name, manifest.spec_name, args.spec_name == manifest.spec_name)
    compare(
        "--temperature",
        args.temperature,
        params.get("temperature"),
        _number(args.temperature) == _number(params.get("temperature")),
    )
    compare("--max-tokens", args.max_tokens, params.get("max_tokens"), args.max_tokens == params.get("max_tokens"))
    if args.output_base_dir is not None:
        inside = _path(run_dir).is_relative_to(_path(args.output_base_dir))
        compare("--output-base-dir", args.output_base_dir, f"a folder holding {run_dir}", inside)
    if args.allow_unknown_statements and not manifest.parameters.get("allow_unknown_statements", False):
        changes.append("--allow-unknown-statements was not given when the run started")
    user = manifest.parameters.get("simulated_user") or {}
    for flag, key in (
        ("--simulated-user-model", "model"),
        ("--simulated-user-org", "provider"),
        ("--simulated-user-stop-word", "stop_word"),
        ("--simulated-user-tier", "tier"),
        *((f"--simulated-user-{key.replace('_', '-')}", key) for key in LIMIT_KEYS),
        ("--max-turns", "max_turns"),
    ):
        given = getattr(args, flag[2:].replace("-", "_"), None)
        compare(flag, given, user.get(key), given == user.get(key))
    instructions = getattr(args, "simulated_user_instructions", None)
    if instructions is not None and read_instructions(instructions) != user.get("instructions"):
        changes.append("--simulated-user-instructions differ from those the run started with")
    if args.offline and not manifest.offline:
        changes.append("--offline: the run was made against a real provider")
    return changes


def check_resume_flags(args: argparse.Namespace, manifest: RunManifest, run_dir: Path) -> None:
    """A ConfigError naming every flag that would change what the run `run_dir` sends."""
    if args.new_run:
        raise ConfigError("--new-run starts a fresh run; it cannot be combined with --resume")
    changes = resume_changes(args, manifest, run_dir)
    if changes:
        raise ConfigError(
            f"cannot resume {run_dir} with different settings: {'; '.join(changes)}. A run keeps the settings it "
            "started with: drop the changed flags to resume it, or drop --resume to start a new run."
        )


def report_reused(run_dir: Path, manifest: RunManifest) -> None:
    """Tell the user an identical run already finished: where its results are, and how to pay again if meant."""
    if manifest.offline:
        console.print(synthetic_banner())
    console.print(
        f"An identical run already finished on {manifest.created_at:%Y-%m-%d %H:%M} UTC (same spec and inputs, "
        f"model {manifest.model_name} ({manifest.provider}), same settings). Nothing was submitted."
    )
    totals = manifest.totals
    if totals is not None:
        stdout.print(summary_table(totals, f"{manifest.model_name} on {manifest.spec_name} (earlier run)"))
    results = run_dir / "results"
    if not any(results.glob("*.json")):
        # Paid-for answers live there and nowhere else: say so rather than point at an empty folder.
        console.print(
            f"[yellow]Its results folder {results} is missing or empty (deleted or moved?). Restore it, "
            "or add --new-run to send the requests again and pay for them again.[/]"
        )
        return
    stdout.print(f"Results: {results}")
    failed = {o.value: n for o, n in (totals.outcome_counts.items() if totals else []) if o is not Outcome.SUCCEEDED}
    if any(failed.values()):
        counts = ", ".join(f"{n} {outcome}" for outcome, n in sorted(failed.items()) if n)
        console.print(f"[yellow]That run has requests without an answer ({counts}).[/]")
    console.print("To send the same requests again and pay for them again, add --new-run.")
