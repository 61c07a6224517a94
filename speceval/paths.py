"""Turning identifiers we do not control (statement ids, provider batch ids) into file names.

Statement ids come from spec files and provider ids from remote APIs; either may contain '/', '..', control
characters or names Windows reserves. `safe_filename` maps any such string to a name that:

* stays inside its directory: no separators, never '.', '..' or a leading dot, no control characters;
* is portable: only ASCII letters, digits, '_', '-', '.', ' ', '%' and '~'; no Windows reserved device name
  (CON, NUL, COM1, ...); no trailing dot or space; at most `MAX_NAME_LENGTH` characters;
* is collision-free, also on case-insensitive file systems (macOS, Windows), up to a sha256 prefix collision;
* stays readable for ordinary ids: `avoid_errors` and `no.dots here` map to themselves.

How: every character outside `[A-Za-z0-9_ .-]`, and a dot or space where it would be unsafe, is percent-encoded
(UTF-8 bytes, upper-case hex). A literal '%' is always encoded, so the encoding can be decoded unambiguously and
is therefore injective. Names that contain an upper-case letter, or that would be too long, get a '~' and 12
hex digits of the sha256 of the original name appended ('~' is always encoded elsewhere, so the suffix cannot be
mistaken for content): `Avoid` and `avoid` are the same file on a case-insensitive disk, the suffix keeps them
apart.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from speceval.errors import InputError

MAX_NAME_LENGTH = 150
"""Longest name `safe_filename` returns; leaves room for suffixes within the usual 255-byte limit."""

_HASH_CHARS = 12
_KEEP = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-. ")
_WINDOWS_RESERVED = frozenset(
    {"CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$"} | {f"COM{i}" for i in range(10)} | {f"LPT{i}" for i in range(10)}
)
_SUFFIX = re.compile(r"^(\.[A-Za-z0-9_-]+)*$")


def _encode_char(char: str) -> str:
    # surrogatepass: JSON may carry a lone surrogate ("\ud800"); it still needs a distinct, stable name.
    return "".join(f"%{byte:02X}" for byte in char.encode("utf-8", "surrogatepass"))


def _is_reserved(name: str) -> bool:
    # Windows treats "CON.txt" and "con .json" as the device too: compare the part before the first dot.
    return name.split(".", 1)[0].rstrip(" ").upper() in _WINDOWS_RESERVED


def _digest(name: str) -> str:
    return hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:_HASH_CHARS]


def safe_filename(name: str) -> str:
    """Map an arbitrary identifier to a safe, deterministic, collision-free file name (without suffix).

    See the module docstring for the exact guarantees.

    Args:
        name: any non-empty string, e.g. a statement id or a provider's batch id.

    Returns:
        A file name made of `[A-Za-z0-9_ .%~-]`, at most `MAX_NAME_LENGTH` characters long.

    Raises:
        ValueError: if `name` is empty (no file can stand for nothing).
    """
    if not name:
        raise ValueError("cannot make a file name from an empty string")
    encoded: list[str] = []
    last = len(name) - 1
    for position, char in enumerate(name):
        unsafe = (
            char not in _KEEP
            # A leading dot would hide the file or, as '.' or '..', name a directory.
            or (position == 0 and char in ". ")
            # Windows silently strips trailing dots and spaces, which would merge 'a' and 'a.'.
            or (position == last and char in ". ")
        )
        encoded.append(_encode_char(char) if unsafe else char)
    if _is_reserved(name) and encoded[0] == name[0]:
        encoded[0] = _encode_char(name[0])
    result = "".join(encoded)

    needs_digest = any("A" <= char <= "Z" for char in name)
    cut = MAX_NAME_LENGTH - _HASH_CHARS - 1
    if len(result) > (cut if needs_digest else MAX_NAME_LENGTH):
        needs_digest = True
        # Do not cut an escape in half: '%4' would read as garbage (harmless, but ugly).
        percent = result.rfind("%", cut - 2, cut)
        result = result[: percent if percent != -1 else cut]
    if needs_digest:
        result = f"{result}~{_digest(name)}"
    return result


PERCENT_NAMING = 1
"""`experiment.json` `naming` of folders started before readable names (the field is absent there): each
variation's folder is `safe_filename(name)`, e.g. `temperature_0.7%2Bplain`."""
READABLE_NAMING = 2
"""`experiment.json` `naming` of folders named by `readable_names`, e.g. `temperature-0.7_plain`."""

_READABLE_KEEP = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-.")
# Inside a variation name '_' joins an axis to its value and '+' joins axes: on disk the value joins with '-' and
# the axes with '_', which reads as `temperature-0.7_plain` and needs no escape on any file system.
_READABLE_MAP = str.maketrans({"_": "-", "+": "_", " ": "-"})
_READABLE_HASH_CHARS = 8


def readable_names(names: Sequence[str]) -> dict[str, str]:
    """Folder names for sibling identifiers (an experiment's variations): readable, and distinct from each other.

    `temperature_0.7+plain` becomes `temperature-0.7_plain`. A name that would lose a character (anything outside
    letters, digits, '_', '+', '-', '.', ' '), start or end with a dot, name a Windows device or be too long, and
    every name that would share its folder with a sibling (compared case-insensitively, as macOS and Windows do),
    gets `~` and 8 hex digits of its sha256 instead: '~' appears in no other readable name, so a suffixed name
    cannot meet an unsuffixed one. The result depends on the whole set, so callers record it (`experiment.json`
    `folders`) and read it back rather than recompute it, and never parse a folder name for its meaning.

    Raises:
        ValueError: for an empty name, or (practically never) two names whose sha256 prefixes collide.
    """
    plain = {name: _readable(name) for name in names}
    taken = Counter(folder.casefold() for folder in plain.values() if folder is not None)
    result = {}
    for name, folder in plain.items():
        if folder is None or taken[folder.casefold()] > 1:
            folder = f"{_readable_stem(name)}~{_digest(name)[:_READABLE_HASH_CHARS]}"
        result[name] = folder
    if len({folder.casefold() for folder in result.values()}) != len(result):
        raise ValueError(f"two of {sorted(result)} map to one folder name; rename one of them")
    return result


def folder_names(names: Sequence[str], naming: int | None) -> dict[str, str]:
    """name → folder under the experiment folder's `naming` (None: a folder started before it was recorded)."""
    if naming is None or naming == PERCENT_NAMING:
        return {name: safe_filename(name) for name in names}
    if naming == READABLE_NAMING:
        return readable_names(names)
    raise ValueError(f"unknown folder naming {naming}; finish this folder with the speceval that started it")


def _readable(name: str) -> str | None:
    """The readable folder name, or None where it cannot stand alone (see `readable_names`)."""
    if not name:
        raise ValueError("cannot make a file name from an empty string")
    if any(char not in _KEEP for char in name.replace("+", "")):
        return None
    folder = name.translate(_READABLE_MAP)
    if folder.startswith(".") or folder.endswith(".") or _is_reserved(folder) or len(folder) > MAX_NAME_LENGTH:
        return None
    return folder


def _readable_stem(name: str) -> str:
    """The readable part before a hash suffix: what cannot be kept becomes '-', no dot at either end."""
    stem = "".join(char if char in _READABLE_KEEP else "-" for char in name.translate(_READABLE_MAP)).strip(".")
    stem = stem[: MAX_NAME_LENGTH - _READABLE_HASH_CHARS - 1]
    return f"_{stem}" if not stem or _is_reserved(stem) else stem


def safe_path(directory: Path, name: str, suffix: str) -> Path:
    """`directory / (safe_filename(name) + suffix)`, checked to be a direct child of `directory`.

    Args:
        directory: the folder the file must live in (need not exist yet).
        name: the untrusted identifier (statement id, batch id, idempotency key, ...).
        suffix: a file extension such as '.json' or '.jsonl' (or ''); it must be a constant of ours, not data.

    Returns:
        The path of the file.

    Raises:
        ValueError: if `name` is empty or `suffix` is not a plain extension. The final containment check raises
            too, although `safe_filename` makes that unreachable; it is a plain check rather than an `assert`
            so that `python -O` keeps it.
    """
    if not _SUFFIX.match(suffix):
        raise ValueError(f"not a plain file extension: {suffix!r}")
    file_name = safe_filename(name) + suffix
    path = Path(directory) / file_name
    if path.parent != Path(directory) or path.name != file_name or file_name in (".", ".."):
        raise ValueError(f"{name!r} does not map to a file inside {directory}")
    return path


def check_output_dir(path: Path, field: str) -> None:
    """Refuse, before anything is written, a folder that cannot be created or written: one that is a file, or sits
    below a regular file, or whose nearest existing folder is not writable (`field` names the flag or YAML key)."""
    path = Path(path)
    existing = path
    while not existing.exists():
        if existing.is_symlink():  # a dangling link: mkdir would fail on it
            raise InputError(path, f"{existing} is a broken symbolic link", field=field)
        if existing.parent == existing:
            break
        existing = existing.parent
    if existing.exists() and not existing.is_dir():
        where = "is a file" if existing == path else f"is below {existing}, which is a file"
        raise InputError(path, f"cannot write here: {where}; choose a folder", field=field)
    if existing.is_dir() and not os.access(existing, os.W_OK | os.X_OK):
        raise InputError(path, f"cannot write here: {existing} is not writable by this user", field=field)


def check_output_file(path: Path, field: str) -> None:
    """Refuse an output file path that is a folder, or whose folder cannot be created or written."""
    path = Path(path)
    if path.is_dir():
        raise InputError(path, "this is a folder; name a file to write", field=field)
    check_output_dir(path.parent, field)
