"""2-D pictures of token representations coloured by corpus frequency: t-SNE (scikit-learn, when installed)
or PCA, one panel per model (e.g. per curriculum phase), as a PNG."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np


def project_2d(vectors, method: str = "auto", seed: int = 0) -> tuple[np.ndarray, str]:
    """(n, 2) coordinates and the method used: ``tsne`` if requested/available (auto), else ``pca``."""
    matrix = np.asarray(vectors, dtype=np.float64)
    if method in ("auto", "tsne"):
        try:
            from sklearn.manifold import TSNE
        except ImportError:
            if method == "tsne":
                raise ValueError("t-SNE needs scikit-learn (pip install scikit-learn); use method='pca'") from None
        else:
            perplexity = min(30.0, max(2.0, (len(matrix) - 1) / 3))
            return TSNE(2, perplexity=perplexity, init="pca", random_state=seed).fit_transform(matrix), "tsne"
    centred = matrix - matrix.mean(axis=0)
    _, _, components = np.linalg.svd(centred, full_matrices=False)
    return centred @ components[:2].T, "pca"


def plot_projection_panels(
    panels: Sequence[dict], path: str | Path, title: str, rows: Sequence[str] = ("input",)
) -> Path:
    """``panels``: dicts with ``title`` and, for each entry of ``rows``, ``<row>_points`` (n, 2) and
    ``<row>_log_counts`` (n,). One column per panel, one row per representation kind."""
    from ..utils.plots import pyplot

    plt = pyplot()
    figure, axes = plt.subplots(len(rows), len(panels), figsize=(3.2 * len(panels), 3.0 * len(rows)), squeeze=False)
    scatter = None
    for column, panel in enumerate(panels):
        for row, kind in enumerate(rows):
            ax = axes[row][column]
            points = np.asarray(panel.get(f"{kind}_points") or np.zeros((0, 2)))
            if len(points):
                scatter = ax.scatter(points[:, 0], points[:, 1], c=panel[f"{kind}_log_counts"], s=3, cmap="viridis")
            ax.set_xticks([])
            ax.set_yticks([])
            if row == 0:
                ax.set_title(panel["title"], fontsize=9)
            if column == 0:
                ax.set_ylabel(kind, fontsize=9)
    if scatter is not None:
        figure.colorbar(scatter, ax=axes, label="log10 corpus count", shrink=0.8)
    figure.suptitle(title, fontsize=10)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return path
