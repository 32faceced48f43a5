"""A BLURB task run's results: each seed's ``seed_<s>/seed_results.json`` merged into ``all_results.json`` (the
seed files, their merging and the refusal to mix settings are ``bioptimus_hf.finetuning.results``'), and ``results.md``.

Per seed, ``eval_<m>`` (dev) and ``test_<m>`` for each metric ``m`` of the task type, and ``eval_score`` /
``test_score``: BLURB's metric of the task (named by ``metric`` in the run's settings). ``all_results.json``
holds their means over seeds and ``*_std`` (sample standard deviation; 0.0 for one seed).
"""

from __future__ import annotations

import math
import os
from typing import Any

from ..finetuning.results import merge_seed_results, write_results
from ..utils.files import write_text_atomic


BLURB_METRICS = ("score", "f1", "precision", "recall", "pearson", "accuracy")


def _pct(value: float | None) -> str:
    return "–" if value is None or math.isnan(value) else f"{100 * value:.2f}"


def merge_blurb_results(output_dir: str) -> dict[str, Any]:
    return merge_seed_results(output_dir, BLURB_METRICS)


def markdown_table(results: dict[str, Any]) -> str:
    """Per-seed rows of BLURB's metric on dev and test, then mean ± std (0-100, as BLURB reports)."""
    lines = ["| seed | dev | test |", "|---|---|---|"]
    for run in results["per_seed"]:
        lines.append(f"| {run['seed']} | {_pct(run.get('eval_score'))} | {_pct(run.get('test_score'))} |")

    def mean_std(key: str) -> str:
        if results.get(key) is None:
            return "–"
        return f"{_pct(results[key])} ± {_pct(results.get(key + '_std', 0.0))}"

    lines.append(f"| mean ± std | {mean_std('eval_score')} | **{mean_std('test_score')}** |")
    return "\n".join(lines) + "\n"


def write_blurb_outputs(output_dir: str, results: dict[str, Any]) -> str:
    """``all_results.json`` and ``results.md``; returns the markdown table."""
    write_results(output_dir, results)
    table = markdown_table(results)
    title = f"# {results['model_name']} on {results['dataset']} ({results['metric']}, %)"
    write_text_atomic(os.path.join(output_dir, "results.md"), f"{title}\n\n{table}")
    return table
