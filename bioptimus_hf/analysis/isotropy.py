"""Isotropy of a set of vectors (rows), and how far two sets lie apart: :func:`mean_pairwise_cosine` (0 for
directions spread evenly, 1 when all point the same way: Ethayarajh 2019's anisotropy); :func:`partition_ratio`
(Mu & Viswanath, ICLR 2018: ``min_c Z(c) / max_c Z(c)``, ``Z(c) = sum_i exp(c . x_i)``, over the eigenvectors of
``X^T X`` of both signs: 1 isotropic, towards 0 stretched along a few directions); :func:`centroid_separation` (the
distance between the sets' centroids over their RMS spread: 0 the same centre, > 1 further apart than wide).
"""

from __future__ import annotations

import numpy as np


def _matrix(vectors) -> np.ndarray:
    if hasattr(vectors, "detach"):  # a torch tensor
        vectors = vectors.detach().float().cpu().numpy()
    matrix = np.asarray(vectors, dtype=np.float64)
    if matrix.ndim != 2 or len(matrix) < 2:
        raise ValueError(f"need a 2-D array of at least 2 vectors, got shape {matrix.shape}")
    return matrix


def mean_pairwise_cosine(vectors) -> float:
    matrix = _matrix(vectors)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    units = matrix / np.where(norms == 0, 1, norms)
    total = units.sum(axis=0)
    n = len(units)
    return float((total @ total - (units * units).sum()) / (n * (n - 1)))


def partition_ratio(vectors) -> float:
    matrix = _matrix(vectors)
    _, eigenvectors = np.linalg.eigh(matrix.T @ matrix)
    directions = np.concatenate([eigenvectors, -eigenvectors], axis=1)
    projections = matrix @ directions  # (n, 2d)
    peak = projections.max(axis=0)
    log_z = peak + np.log(np.exp(projections - peak).sum(axis=0))  # log-sum-exp: no overflow
    return float(np.exp(log_z.min() - log_z.max()))


def centroid_separation(first, second) -> float:
    a, b = _matrix(first), _matrix(second)
    ca, cb = a.mean(axis=0), b.mean(axis=0)
    spread = np.sqrt((((a - ca) ** 2).sum(axis=1).mean() + ((b - cb) ** 2).sum(axis=1).mean()) / 2)
    return float(np.linalg.norm(ca - cb) / spread) if spread > 0 else float("inf")
