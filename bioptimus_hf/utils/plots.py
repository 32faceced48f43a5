"""The loss plot of a pre-training run (training and held-out loss per step, the learning rate, each curriculum
phase's end) drawn from the Trainer's ``log_history`` as a PNG: in every release (``training_loss.png``, linked from
its card), in a study's figures, and by ``bioptimus plot RUN_DIR``; and matplotlib's pyplot for every figure.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping, Sequence


LOSS_PLOT_NAME = "training_loss.png"


def pyplot():
    """matplotlib's pyplot on the file-only Agg backend (no display on servers and in tests)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def loss_series(log_history: Sequence[Mapping[str, Any]]) -> dict[str, list[tuple[int, float]]]:
    """(step, value) series of ``loss``, ``eval_loss`` and ``learning_rate`` from a Trainer log history."""
    series: dict[str, list[tuple[int, float]]] = {"loss": [], "eval_loss": [], "learning_rate": []}
    for entry in log_history:
        step = entry.get("step")
        for key in series:
            if step is not None and isinstance(entry.get(key), (int, float)):
                series[key].append((int(step), float(entry[key])))
    return series


def plot_training_curves(
    log_history: Sequence[Mapping[str, Any]],
    path: str | os.PathLike,
    phase_ends: Sequence[int] = (),
    versions: Sequence[str] = (),
    title: str | None = None,
) -> Path | None:
    """Draw the run's curves into ``path``; returns the file written, None without any logged loss."""
    series = loss_series(log_history)
    if not series["loss"] and not series["eval_loss"]:
        return None
    plt = pyplot()
    figure, ax = plt.subplots(figsize=(7, 4))
    for key, label, style in (("loss", "training loss", "-"), ("eval_loss", "held-out loss", "o-")):
        if series[key]:
            steps, values = zip(*series[key])
            ax.plot(steps, values, style, label=label, markersize=3)
    ax.set_xlabel("optimizer step")
    ax.set_ylabel("masked-LM loss")
    for index, (start, end) in enumerate(zip([0, *phase_ends], phase_ends)):
        ax.axvline(end, color="grey", linestyle=":", linewidth=1)
        if index < len(versions):
            where = dict(transform=ax.get_xaxis_transform(), ha="center", va="bottom", fontsize=8)
            ax.text((start + end) / 2, 1.0, f"v{versions[index]}", **where)
    if series["learning_rate"]:
        rate_axis = ax.twinx()
        steps, values = zip(*series["learning_rate"])
        rate_axis.plot(steps, values, color="tab:green", alpha=0.5, linewidth=1, label="learning rate")
        rate_axis.set_ylabel("learning rate", color="tab:green")
    ax.legend(loc="upper right", fontsize=8)
    if title:
        ax.set_title(title, pad=14)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path
