"""The argument parser every command uses: whole flag names only.

argparse by default takes any unambiguous prefix of a flag for the flag (`--temp 0.7` for `--temperature`), so a
typo, or a flag of another tool, silently sets something else. Every speceval parser refuses them instead.
"""

from __future__ import annotations

import argparse
from typing import Any


class StrictArgumentParser(argparse.ArgumentParser):
    """`argparse.ArgumentParser` with `allow_abbrev=False`, always.

    Subcommand parsers made by `add_subparsers().add_parser` are built with the parent's class, so they are
    strict too.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["allow_abbrev"] = False
        super().__init__(*args, **kwargs)
