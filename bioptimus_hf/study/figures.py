"""The study's PNG figures, drawn from ``results.json`` and each arm's ``trainer_state.json``: each arm's loss curves
(``loss_<arm>.png``), every arm's held-out loss (``heldout_loss.png``), each phase's realised masked fraction
(``masked_fraction.png``), each row's test F1 (``ner_f1.png``) and along each arm's checkpoints
(``ner_f1_per_checkpoint.png``, paper Figure 3).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..utils.files import read_json
from ..utils.plots import loss_series, plot_training_curves, pyplot
from .runner import StudyLayout


def _trainer_state(run_dir: Path) -> dict[str, Any] | None:
    """The newest trainer state of a run: the final one, else its newest checkpoint's (a run in progress)."""
    candidates = [run_dir / "trainer_state.json"] + sorted(
        run_dir.glob("checkpoint-*/trainer_state.json"), key=lambda p: int(p.parent.name.split("-")[1]), reverse=True
    )
    for path in candidates:
        if path.is_file():
            return read_json(path)
    return None


def _releases(rows: dict[str, Any], references: bool = False) -> dict[str, list[dict[str, Any]]]:
    """Each row's releases (of the rows with any; ``references``: a reference study's only)."""
    releases = {
        n: (r.get("pretraining") or {}).get("releases")
        for n, r in rows.items()
        if r.get("reference") or not references
    }
    return {name: row_releases for name, row_releases in releases.items() if row_releases}


def _phase_ends(row: dict[str, Any]) -> tuple[list[int], list[str]]:
    releases = (row.get("pretraining") or {}).get("releases") or []
    return [r["global_step"] for r in releases], [r["version"] for r in releases]


def draw_figures(results: dict[str, Any], output_dir: str | Path, figures_dir: str | Path) -> list[Path]:
    """Write every figure that the finished work allows; returns the files written."""
    plt = pyplot()
    layout, figures_dir = StudyLayout(output_dir), Path(figures_dir)
    figures_dir.mkdir(parents=True, exist_ok=True)
    rows, datasets = results["rows"], results["study"]["ner_datasets"]
    states = {
        n: _trainer_state(layout.pretraining(n))
        for n, r in rows.items()
        if r.get("pretraining") and not r.get("reference")
    }
    histories = {name: state["log_history"] for name, state in states.items() if state is not None}
    written = _loss_figures(rows, histories, figures_dir) + [
        _heldout_figure(plt, rows, histories, figures_dir),
        _masked_fraction_figure(plt, rows, figures_dir),
        _ner_f1_figure(plt, rows, datasets, figures_dir),
        _checkpoint_figure(plt, rows, datasets, figures_dir),
    ]
    return [path for path in written if path]


def _loss_figures(rows: dict[str, Any], histories: dict[str, list], figures_dir: Path) -> list[Path]:
    """``loss_<arm>.png``: each arm's training curves with its phase ends."""
    written = []
    for name, history in histories.items():
        row, path = rows[name], figures_dir / f"loss_{name}.png"
        title = f"{name}: {row['init_strategy']}, {row.get('curriculum')}"
        written.append(plot_training_curves(history, path, *_phase_ends(row), title=title))
    return [path for path in written if path]


def _heldout_figure(plt, rows: dict[str, Any], histories: dict[str, list], figures_dir: Path) -> Path | None:
    """``heldout_loss.png``: every arm's held-out loss on one axis."""
    # A reference study's rows keep no log history here: their releases' held-out losses are drawn instead.
    released = {
        name: [(r["global_step"], r["heldout_mlm_loss"]) for r in releases if r.get("heldout_mlm_loss") is not None]
        for name, releases in _releases(rows, references=True).items()
    }
    if not (histories or released):
        return None
    figure, ax = plt.subplots(figsize=(7, 4))
    for name, history in histories.items():
        points = loss_series(history)["eval_loss"]
        if points:
            ax.plot(*zip(*points), "o-", markersize=3, label=name)
    for name, points in released.items():
        ax.plot(*zip(*points), "s--", markersize=6, fillstyle="none", label=f"{name} (releases)")
    ax.set_xlabel("optimizer step")
    ax.set_ylabel("held-out masked-LM loss (phase's own masking)")
    ax.legend(fontsize=8)
    return _save(plt, figure, figures_dir / "heldout_loss.png")


def _masked_fraction_figure(plt, rows: dict[str, Any], figures_dir: Path) -> Path | None:
    """``masked_fraction.png``: each phase's realised masked fraction per arm, against its target rate."""
    fractions = _releases(rows)
    if not fractions:
        return None
    figure, ax = plt.subplots(figsize=(7, 3.5))
    width = 0.8 / len(fractions)
    phases: dict[str, dict[str, Any]] = {}  # every version any arm released, in order; a single-phase arm's
    for releases in fractions.values():  # one release sits above its own version
        for r in releases:
            phases.setdefault(r["version"], r)
    slots = sorted(phases, key=lambda v: [int(p) if p.isdigit() else p for p in v.split(".")])
    for index, (name, releases) in enumerate(fractions.items()):
        xs = [slots.index(r["version"]) + index * width for r in releases]
        ax.bar(xs, [r["realised_masked_fraction"] or 0 for r in releases], width, label=name)
        for x, r in zip(xs, releases):
            ax.plot([x - width / 2, x + width / 2], [r["masking_rate"]] * 2, color="black", linewidth=1)
    ax.set_xticks([i + 0.4 - width / 2 for i in range(len(slots))])
    ax.set_xticklabels([f"v{v}\n{phases[v]['masking_unit']} {phases[v]['masking_rate']:.2f}" for v in slots])
    ax.set_ylabel("realised masked fraction\n(black line: target rate)")
    ax.legend(fontsize=8)
    return _save(plt, figure, figures_dir / "masked_fraction.png")


def _ner_f1_figure(plt, rows: dict[str, Any], datasets: list[str], figures_dir: Path) -> Path | None:
    """``ner_f1.png``: each row's final test F1, mean ± std over seeds, one panel per dataset."""
    finals = {name: row["ner"].get("final", {}) for name, row in rows.items()}
    if not (datasets and any(finals.values())):
        return None
    figure, axes = _panels(plt, datasets)
    for ax, dataset in zip(axes, datasets):
        names = [n for n in finals if dataset in finals[n]]
        means = [100 * finals[n][dataset]["test_f1"] for n in names]
        stds = [100 * finals[n][dataset].get("test_f1_std", 0.0) for n in names]
        ax.bar(range(len(names)), means, yerr=stds, capsize=4, color="tab:blue")
        ax.set_xticks(range(len(names)))
        ax.set_xticklabels(names, rotation=30, ha="right", fontsize=8)
        if means:
            ax.set_ylim(max(0, min(means) - 5), min(100, max(means) + 3))
        ax.set_title(dataset)
        ax.set_ylabel("test F1 % (mean ± std over seeds)")
    return _save(plt, figure, figures_dir / "ner_f1.png")


def _checkpoint_figure(plt, rows: dict[str, Any], datasets: list[str], figures_dir: Path) -> Path | None:
    """``ner_f1_per_checkpoint.png``: test F1 along each arm's checkpoints and releases (paper Figure 3)."""
    curves = {}
    for name, row in rows.items():
        points = []
        for target, cells in row["ner"].items():
            step = _target_step(target, row)
            for dataset, cell in cells.items():
                if step is not None:
                    points.append((dataset, step, 100 * cell["test_f1"], 100 * cell.get("test_f1_std", 0.0)))
        if len({p[1] for p in points}) > 1:
            curves[name] = sorted(points)
    if not (curves and datasets):
        return None
    figure, axes = _panels(plt, datasets)
    for ax, dataset in zip(axes, datasets):
        for name, points in curves.items():
            mine = [p for p in points if p[0] == dataset]
            if mine:
                _, steps, f1, std = zip(*mine)
                ax.errorbar(steps, f1, yerr=std, marker="o", capsize=3, label=name)
        ax.set_xlabel("pre-training step")
        ax.set_ylabel("test F1 %")
        ax.set_title(dataset)
        ax.legend(fontsize=8)
    return _save(plt, figure, figures_dir / "ner_f1_per_checkpoint.png")


def _target_step(target: str, row: dict[str, Any]) -> int | None:
    """The pre-training step of an evaluated target (``step_400``, ``v0.2``, ``final``)."""
    if target.startswith("step_"):
        return int(target.split("_")[1])
    releases = (row.get("pretraining") or {}).get("releases") or []
    if target == "final":
        return row.get("max_steps", 0)  # the base row: step 0
    return next((r["global_step"] for r in releases if f"v{r['version']}" == target), None)


def _panels(plt, datasets: list[str]):
    """A figure with one panel per dataset, side by side."""
    figure, axes = plt.subplots(1, len(datasets), figsize=(4 + 2.5 * len(datasets), 3.8), squeeze=False)
    return figure, axes[0]


def _save(plt, figure, path: Path) -> Path:
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path
