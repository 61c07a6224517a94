"""`--help` of every command loads no SDK, no pydantic, no rich and no pipeline (issue 14: help answers at once).

Each command runs in a fresh interpreter under `-X importtime`, which lists every module the process imported;
the test fails naming the heavy module and the chain that pulled it in. No timing is asserted: what makes help
slow is what it imports, and that is deterministic.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from speceval.cli.main import build_parser

# Each costs tens to hundreds of milliseconds to import; none is needed to print a parser's help.
HEAVY = (
    "openai",
    "anthropic",
    "google.genai",
    "google.cloud",
    "httpx",
    "pydantic",
    "pydantic_core",
    "rich",
    "yaml",
    "ray",
    "numpy",
    "pandas",
    "speceval.pipelines",
    "speceval.batch",
    "speceval.providers",
    "speceval.realtime",
    "speceval.raydata",
    "speceval.emulator",
    "speceval.experiments",
    "speceval.analysis",
    "speceval.judging",
    "speceval.batch.costs",
    "speceval.batch.manifest",
    "speceval.cli.console",
    "inspect_ai",
    "speceval.interop",
)
SCRIPTS = ("run_batched_generation", "run_batched_binary_compliance", "run_batched_ranking")


def _subcommands() -> list[str]:
    parser = build_parser()
    (commands,) = [action for action in parser._actions if action.dest == "command"]
    assert commands.choices is not None
    return sorted(commands.choices)


def _imports(module_args: list[str]) -> tuple[list[str], str]:
    """The modules `python -X importtime -m ...` imported, in order, with the help text it printed."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", *module_args], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr[-2000:]
    names = [line.rsplit("|", 1)[1].rstrip() for line in done.stderr.splitlines() if line.startswith("import time:")]
    return [name for name in names if name.strip() != "package"], done.stdout


def _is_heavy(module: str) -> bool:
    return any(module == heavy or module.startswith(heavy + ".") for heavy in HEAVY)


def _heavy(names: list[str]) -> list[str]:
    """The heavy modules a light module imported, each with that importer (importtime prints a module's imports
    before the module, deeper indented), so a failure names the import to make lazy."""
    found = []
    for index, name in enumerate(names):
        depth = len(name) - len(name.lstrip())
        importer = next((n.strip() for n in names[index + 1 :] if len(n) - len(n.lstrip()) < depth), "__main__")
        if _is_heavy(name.strip()) and not _is_heavy(importer):
            found.append(f"{name.strip()} (imported by {importer})")
    return found


def test_every_subcommand_is_checked() -> None:
    # A new subcommand is covered without editing this file; this guards the parametrization below.
    assert {"status", "run", "cost", "emulator", "cancel", "export-requests"} <= set(_subcommands())


@pytest.mark.parametrize("command", [[], *([name] for name in _subcommands())], ids=lambda c: " ".join(c) or "-")
def test_speceval_help_imports_nothing_heavy(command: list[str]) -> None:
    names, shown = _imports(["speceval", *command, "--help"])
    assert "usage: speceval" in shown
    heavy = _heavy(names)
    assert not heavy, "\n".join(heavy)


@pytest.mark.parametrize("script", SCRIPTS)
def test_script_help_imports_nothing_heavy(script: str) -> None:
    names, shown = _imports([f"batched_examples.{script}", "--help"])
    assert f"usage: python -m batched_examples.{script}" in shown
    heavy = _heavy(names)
    assert not heavy, "\n".join(heavy)


def test_the_light_list_of_built_in_orgs_is_the_registry_s() -> None:
    # The judge commands' help lists the providers from `speceval.defaults` (the registry imports pydantic).
    from speceval.defaults import BUILT_IN_ORGS
    from speceval.providers.registry import PROVIDERS

    assert tuple(PROVIDERS) == BUILT_IN_ORGS


def test_the_light_table_of_model_families_is_the_registry_s() -> None:
    # The report's self-preference column reads the families from `speceval.defaults` (it loads no provider code).
    from speceval.defaults import BUILT_IN_MODEL_FAMILIES
    from speceval.providers.registry import PROVIDERS

    claimed = {org: entry.model_prefixes for org, entry in PROVIDERS.items() if entry.model_prefixes}
    assert claimed == BUILT_IN_MODEL_FAMILIES
