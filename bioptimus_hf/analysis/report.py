"""The representation-analysis table of a study's results.md."""

from __future__ import annotations

from typing import Any


COLUMNS = (("mean_cosine", "mean cos"), ("partition_ratio", "I(W)"), ("separation", "rare↔frequent separation"))


def analysis_table(analysis: dict[str, Any]) -> str:
    header = (
        ["row", "model"] + [f"input {label}" for _, label in COLUMNS] + [f"contextual {label}" for _, label in COLUMNS]
    )
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row, targets in analysis.items():
        for target, measures in targets.items():
            cells = [row, target]
            for kind in ("input", "contextual"):
                cells += [f"{measures[kind][key]:.3f}" for key, _ in COLUMNS]
            lines.append("| " + " | ".join(cells) + " |")
    lines += [
        "",
        "mean cos: mean pairwise cosine of the rare and frequent tokens' vectors (0 = isotropic); I(W): "
        "Mu & Viswanath's partition-function ratio (1 = isotropic); separation: distance between the rare and "
        "the frequent tokens' centroids over their RMS spread (rare/frequent: the 20% least/most frequent "
        "tokens seen in the corpus; contextual: last-layer states averaged over a corpus sample).",
    ]
    return "\n".join(lines)
