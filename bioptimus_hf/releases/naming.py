"""The names of releases: a version as it may appear in a path, a branch or a tag, and everything derived from it.

A release of version ``0.3`` lives in ``<output_dir>/releases/v0.3/``, is published on the branch and tag ``v0.3``
(layout ``branches``) or to the repository ``<repo>-v0.3`` (layout ``repos``); versions sort as numbers where they
are numbers (``0.10`` after ``0.9``). A directory being written or replaced (``v0.3.partial``, ``v0.3.old``) is
never a release. These rules are defined here and nowhere else.
"""

from __future__ import annotations

import os
import re
from pathlib import Path


# Directories that are work in progress (a release being written, or the old copy being replaced).
TEMPORARY_SUFFIXES = (".partial", ".old")
# A version is used in directory, branch, tag and repository names: keep it to safe characters.
_VERSION_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def normalise_version(version: str | float) -> str:
    """``"v0.3"`` or ``"0.3"`` -> ``"0.3"``, refusing what is unsafe in a path, branch or tag name."""
    text = str(version)
    if text[:1] in ("v", "V"):
        text = text[1:]
    if not _VERSION_PATTERN.fullmatch(text) or ".." in text:
        raise ValueError(
            f"release version {version!r} is not allowed: use letters, digits, '.', '_' and '-' "
            "(it names a directory, a branch and a tag), e.g. 0.1"
        )
    return text


def release_dir_name(version: str) -> str:
    """Directory, branch and tag name of a version: ``v0.3``."""
    return f"v{normalise_version(version)}"


version_tag = release_dir_name


def version_repo_id(repo_id: str, version: str) -> str:
    """Repository id of one version in the one-repository-per-version layout: ``org/name-v0.3``."""
    return f"{repo_id}-{release_dir_name(version)}"


def version_sort_key(version: str) -> tuple:
    parts = re.split(r"[.\-_]", normalise_version(version))
    return tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in parts)


def is_temporary(path: str | os.PathLike) -> bool:
    """A release directory being written or replaced (never a release)."""
    return Path(path).name.endswith(TEMPORARY_SUFFIXES)
