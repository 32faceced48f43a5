"""Writing a release directory so that, whatever moment a run is killed at, a complete release survives.

A release is first written whole into ``v0.k.partial`` (weights, tokenizer, ``bioptimus_phase.json``,
model card). It then takes the place of ``v0.k``:

* first write: one ``rename`` — before it readers see no release, after it the complete one;
* replacing an existing release (a run re-doing a phase end): on Linux, ``renameat2(RENAME_EXCHANGE)``
  swaps the two directories in one step, so ``v0.k`` is at every moment either the old or the new
  complete release; elsewhere the old one is first renamed to ``v0.k.old`` and restored by
  :func:`recover_interrupted_replacements` if the process dies before the new one is in place.

Readers (``find_releases``, the Hub publisher, ``run_pretraining``'s summary) ignore ``.partial`` and
``.old`` directories.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os
import shutil
from pathlib import Path
from typing import Any

from .record import PHASE_FILE, ReleaseInfo, is_release_dir

logger = logging.getLogger(__name__)

PARTIAL_SUFFIX = ".partial"
OLD_SUFFIX = ".old"
_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _exchange(first: Path, second: Path) -> bool:
    """Atomically swap two directories (Linux renameat2); False where the system cannot."""
    if not hasattr(os, "uname") or os.uname().sysname != "Linux":
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    result = renameat2(_AT_FDCWD, os.fsencode(first), _AT_FDCWD, os.fsencode(second), _RENAME_EXCHANGE)
    return result == 0


def recover_interrupted_replacements(releases_dir: str | os.PathLike) -> list[Path]:
    """Put back ``v0.k.old`` releases whose replacement was interrupted; remove stale temporaries.

    Returns the releases restored. A ``.partial`` directory is always an unfinished write of this
    module's (its content may be incomplete) and is removed; an ``.old`` directory is a complete
    release that was being replaced: restored if ``v0.k`` is missing, else removed.
    """
    releases_dir = Path(releases_dir)
    restored = []
    if not releases_dir.is_dir():
        return restored
    for path in sorted(releases_dir.iterdir()):
        if path.name.endswith(OLD_SUFFIX) and (path / PHASE_FILE).is_file():
            final = path.with_name(path.name[: -len(OLD_SUFFIX)])
            if not final.exists():
                path.rename(final)
                restored.append(final)
                logger.warning("release %s: restored the previous copy (its replacement was interrupted)", final)
            else:
                shutil.rmtree(path)
        elif path.name.endswith(PARTIAL_SUFFIX) and path.is_dir():
            shutil.rmtree(path)
    return restored


def write_release(release_dir: str | os.PathLike, model: Any, tokenizer: Any, info: ReleaseInfo,
                  render_card: bool = True, require_version_name: bool = True) -> Path:
    """Save model (safetensors), tokenizer, config, ``bioptimus_phase.json`` and the model card, atomically.

    A curriculum release lives in ``v<version>/``; ``require_version_name=False`` lets a release that is not
    one of a run's versions (a distilled student, ``<output_dir>/student/``) use another directory name.
    """
    from .card import render_release_card

    release_dir = Path(release_dir)
    if require_version_name and release_dir.name != info.dir_name:
        raise ValueError(f"release of version {info.version} must be written to {info.dir_name}/, not {release_dir.name}/")
    release_dir.parent.mkdir(parents=True, exist_ok=True)
    recover_interrupted_replacements(release_dir.parent)
    staging = release_dir.with_name(release_dir.name + PARTIAL_SUFFIX)
    if staging.exists():
        shutil.rmtree(staging)
    staging.mkdir()
    model.save_pretrained(staging, safe_serialization=True)
    if tokenizer is not None:
        tokenizer.save_pretrained(staging)
    info.save(staging)
    if render_card:
        (staging / "README.md").write_text(render_release_card(staging), encoding="utf-8")
    _sync_tree(staging)
    replace_directory(staging, release_dir)
    return release_dir


def replace_directory(new: Path, target: Path) -> None:
    """Move the complete directory ``new`` to ``target``, replacing any ``target`` without a moment with neither."""
    if not target.exists():
        new.rename(target)
    elif _exchange(new, target):
        shutil.rmtree(new)  # now holds the previous release
    else:
        old = target.with_name(target.name + OLD_SUFFIX)
        if old.exists():
            shutil.rmtree(old)
        target.rename(old)
        new.rename(target)
        shutil.rmtree(old)
    _fsync_directory(target.parent)


def _sync_tree(directory: Path) -> None:
    """Flush the files' contents to disk before the rename publishes them."""
    for path in directory.rglob("*"):
        if path.is_file():
            with open(path, "rb") as handle:
                os.fsync(handle.fileno())
    _fsync_directory(directory)


def _fsync_directory(directory: Path) -> None:
    try:
        handle = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(handle)
    except OSError:
        pass
    finally:
        os.close(handle)


__all__ = ["write_release", "replace_directory", "recover_interrupted_replacements", "is_release_dir"]
