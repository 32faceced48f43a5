"""Writing a release directory so that, whatever moment a run is killed at, a complete release survives: it is written
whole into ``v0.k.partial``, then takes the place of ``v0.k`` (:func:`~bioptimus_hf.utils.files.replace_directory`;
:func:`recover_interrupted_replacements` puts back a ``v0.k.old``). Readers ignore ``.partial`` and ``.old``."""

from __future__ import annotations

import itertools
import logging
import os
import shutil
from pathlib import Path
from typing import Any

from ..utils.files import writing_directory
from .naming import TEMPORARY_SUFFIXES
from .record import PHASE_FILE, ReleaseInfo


logger = logging.getLogger(__name__)

PARTIAL_SUFFIX, OLD_SUFFIX = TEMPORARY_SUFFIXES


def recover_interrupted_replacements(releases_dir: str | os.PathLike) -> list[Path]:
    """Put back the ``v0.k.old`` releases whose replacement was interrupted (the complete release being replaced:
    restored when ``v0.k`` is missing, else removed) and remove every ``.partial`` (an unfinished write); returns the
    releases restored."""
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


def write_release(
    release_dir: str | os.PathLike,
    model: Any,
    tokenizer: Any,
    info: ReleaseInfo,
    render_card: bool = True,
    require_version_name: bool = True,
    log_history: Any = None,
) -> Path:
    """Save model (safetensors), tokenizer, config, ``bioptimus_phase.json`` and the model card, atomically, into
    ``v<version>/`` (``require_version_name=False``: another name, e.g. ``student/``); ``log_history`` adds the
    loss plot."""
    from .card import render_release_card

    release_dir = Path(release_dir)
    if require_version_name and release_dir.name != info.dir_name:
        raise ValueError(
            f"release of version {info.version} must be written to {info.dir_name}/, not {release_dir.name}/"
        )
    release_dir.parent.mkdir(parents=True, exist_ok=True)
    recover_interrupted_replacements(release_dir.parent)
    with writing_directory(release_dir) as staging:  # a write that fails (a full disk) leaves no .partial
        model.save_pretrained(staging, safe_serialization=True)
        if tokenizer is not None:
            tokenizer.save_pretrained(staging)
        info.save(staging)
        if log_history:
            from ..utils.plots import LOSS_PLOT_NAME, plot_training_curves

            ends = list(itertools.accumulate(int(p["steps"]) for p in info.curriculum))
            try:
                plot_training_curves(
                    log_history,
                    staging / LOSS_PLOT_NAME,
                    ends,
                    [str(p["version"]) for p in info.curriculum],
                    title=f"release v{info.version}",
                )
            except Exception as error:  # a figure is never worth a lost release
                logger.warning("release %s: no loss plot (%s: %s)", release_dir, type(error).__name__, error)
        if render_card:
            (staging / "README.md").write_text(render_release_card(staging), encoding="utf-8")
    return release_dir
