"""How a recorded command or result names a local path: never someone's file system, and runnable as written. Inside a
checkout: repository-relative; the shared data ``../shared/...``; an installed package's files through ``python -c``;
a scratch folder ``$SCRATCH/x``. In a result's values a local path outside a checkout is its last component."""

from __future__ import annotations

import functools
import os
import re
from pathlib import Path


# The checkout this package runs from (its parent folder; site-packages for a wheel).
CHECKOUT = Path(__file__).resolve().parents[2]
# Folders a path inside some checkout of this repository passes through, from which it is kept.
REPOSITORY_TOP = ("benchmarks", "configs", "docs", "outputs", "scripts", "tests", "model_cards")
# An absolute path on someone's machine: never part of a record as it is.
_PATH_REST = r"[^\s\"'`,;:()\[\]{}<>=]"
_LOCAL_TOPS = rf"/(?:tmp|work|root|home|scratch|mnt|var/tmp)(?:/{_PATH_REST}*)?"
LOCAL_PATH = re.compile(rf"(?<![\w.~-]){_LOCAL_TOPS}")
SCRATCH = "$SCRATCH"


@functools.lru_cache(maxsize=8)
def local_path_pattern(root: Path = CHECKOUT) -> re.Pattern:
    """:data:`LOCAL_PATH`, plus any path under the folder holding the checkout ``root`` (and the shared data beside
    it), wherever a machine keeps it (a CI machine's ``/check/work/main``)."""
    if len(Path(root).parts) <= 2:
        return LOCAL_PATH
    return re.compile(rf"(?<![\w.~-])(?:{re.escape(str(Path(root).parent))}/{_PATH_REST}*|{_LOCAL_TOPS})")


def checkout_relative(path: str, root: Path = CHECKOUT) -> str | None:
    """``path`` relative to the checkout ``root`` or another checkout of the repository (from its top folder), else
    None."""
    parts = Path(os.path.normpath(path)).parts
    try:
        return str(Path(os.path.normpath(path)).relative_to(root))
    except ValueError:
        pass
    top = next((i for i, part in enumerate(parts) if part in REPOSITORY_TOP and i > 1), None)
    if top is not None and ".venv" not in parts:
        return "/".join(parts[top:])
    return None


def public_path(path: str, root: Path = CHECKOUT) -> str:
    """How a result names a local path: repository-relative inside a checkout (``configs/x.yaml``), ``../shared/...``
    for the shared data beside it, else its last component."""
    parts = Path(os.path.normpath(path)).parts
    if "shared" in parts:
        return "/".join(("..", *parts[parts.index("shared") :]))
    inside = checkout_relative(path, root)
    return inside if inside is not None else Path(os.path.normpath(path)).name or path


def command_path(path: str, root: Path = CHECKOUT) -> str:
    """How a recorded command names a local path so that it runs as written (the module docstring's rules)."""
    parts = Path(os.path.normpath(path)).parts
    if "site-packages" in parts[:-1]:
        package, rest = parts[parts.index("site-packages") + 1], parts[parts.index("site-packages") + 2 :]
        if package.isidentifier():
            where = f'$(python -c "import {package}, os; print(os.path.dirname({package}.__file__))")'
            return "/".join((where, *rest))
    if "shared" in parts or checkout_relative(path, root) is not None:
        return public_path(path, root)
    names = [part for part in parts if part != os.sep]
    skip = 2 if names[:2] == ["var", "tmp"] or names[0] in ("home", "work") else 1
    return "/".join((SCRATCH, *names[skip:]))


def public_command(command: str, root: Path = CHECKOUT) -> str:
    """``command`` with every local path made runnable as written (:func:`command_path`)."""
    return local_path_pattern(root).sub(lambda match: command_path(match.group(0), root), command)


def public_value(value, root: Path = CHECKOUT):
    """``value`` (JSON-like) with every local path in its strings replaced by :func:`public_path`."""
    if isinstance(value, str):
        return local_path_pattern(root).sub(lambda match: public_path(match.group(0), root), value)
    if isinstance(value, dict):
        return {public_value(key, root): public_value(item, root) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [public_value(item, root) for item in value]
    return value
