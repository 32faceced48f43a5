"""A finished run's figures, drawn again from what the run left on disk (``bioptimus plot RUN_DIR``).

A pre-training (or distillation) run's figure is its loss plot (:func:`bioptimus_hf.utils.plots.plot_training_curves`:
training and held-out loss per step, the learning rate, where each curriculum phase ends): the release writer
draws it into every release as the run goes; :func:`draw_run_figures` draws the whole run's again, from the run's
``trainer_state.json`` (the final one, else its newest checkpoint's) and the phases its last release records.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..releases.record import ReleaseInfo, find_releases
from ..utils.files import read_json
from ..utils.plots import LOSS_PLOT_NAME, plot_training_curves
from .run_lifecycle import TRAINER_STATE


def trainer_state(run_dir: str | os.PathLike) -> dict[str, Any]:
    """The newest trainer state of a run: the final ``trainer_state.json``, else its newest checkpoint's."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise FileNotFoundError(f"{run_dir}: no such run directory")
    checkpoints = sorted(
        (p for p in run_dir.glob(f"checkpoint-*/{TRAINER_STATE}") if p.parent.name.split("-")[1].isdigit()),
        key=lambda p: int(p.parent.name.split("-")[1]),
        reverse=True,
    )
    for path in [run_dir / TRAINER_STATE, *checkpoints]:
        if path.is_file():
            return read_json(path)
    raise FileNotFoundError(
        f"{run_dir}: no {TRAINER_STATE} (give the output_dir of a run that trained, or one of its checkpoints)"
    )


def phase_ends(run_dir: str | os.PathLike) -> tuple[list[int], list[str]]:
    """Where each curriculum phase ends (cumulative steps) and its version, as the run's last release records
    them (what the release writer draws); empty for a run without releases."""
    try:
        releases = find_releases(run_dir)
    except FileNotFoundError:
        return [], []
    curriculum = ReleaseInfo.load(releases[-1]).curriculum
    steps = [int(phase["steps"]) for phase in curriculum]
    return [sum(steps[: i + 1]) for i in range(len(steps))], [str(phase["version"]) for phase in curriculum]


def draw_run_figures(run_dir: str | os.PathLike, output_dir: str | os.PathLike | None = None) -> list[Path]:
    """Draw a run's figures into ``output_dir`` (default ``run_dir``); returns the files written. Raises
    FileNotFoundError for a directory that is not a run, ValueError for a run that logged no loss."""
    run_dir = Path(run_dir)
    history = trainer_state(run_dir).get("log_history") or []
    ends, versions = phase_ends(run_dir)
    path = plot_training_curves(
        history, Path(output_dir or run_dir) / LOSS_PLOT_NAME, ends, versions, title=run_dir.resolve().name
    )
    if path is None:
        raise ValueError(f"{run_dir}: its {TRAINER_STATE} logs no loss to plot (--logging_steps)")
    return [path]


def plot_run(args) -> list[str]:
    """``bioptimus plot``: :func:`draw_run_figures` of ``--run_dir``, each file written printed."""
    written = [str(path) for path in draw_run_figures(args.run_dir, args.output_dir)]
    print("\n".join(written))
    return written


__all__ = ["draw_run_figures", "phase_ends", "plot_run", "trainer_state"]
