"""A NER run's outputs beside ``all_results.json`` (:mod:`bioptimus_hf.finetuning.results`): ``results.md``, one row
per seed then mean ± std, and ``model_index.json``, built by the card's own
:func:`~bioptimus_hf.releases.ner_results.model_index`.
"""

from __future__ import annotations

import math
import os
from typing import Any, Dict

from ..finetuning.results import write_results
from ..releases.ner_results import model_index


def write_run_outputs(output_dir: str, results: Dict[str, Any]) -> str:
    """``all_results.json``, ``results.md`` and (with test scores) ``model_index.json`` of one model on one
    dataset; returns the markdown table."""
    from ..utils.files import write_json_atomic, write_text_atomic

    write_results(output_dir, results)
    table = markdown_table(results)
    title = (
        f"# {results['model_name']} on {results['dataset']} ({results['tagging_scheme']} training, entity-level, %)"
    )
    write_text_atomic(os.path.join(output_dir, "results.md"), f"{title}\n\n{table}")
    if results.get("test_f1") is not None:
        write_json_atomic(
            os.path.join(output_dir, "model_index.json"),
            model_index(results, results["model_name"], results["dataset"]),
        )
    return table


def _pct(value: float | None) -> str:
    return "–" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{100 * value:.2f}"


def markdown_table(results: Dict[str, Any]) -> str:
    """Per-seed rows plus a mean ± std row (percentages)."""
    lines = [
        "| seed | devel F1 | test P | test R | test F1 |",
        "|---|---|---|---|---|",
    ]
    for run in results["per_seed"]:
        lines.append(
            f"| {run['seed']} | {_pct(run.get('eval_f1'))} | {_pct(run.get('test_precision'))} | "
            f"{_pct(run.get('test_recall'))} | {_pct(run.get('test_f1'))} |"
        )

    def mean_std(key: str) -> str:
        if results.get(key) is None:
            return "–"
        return f"{_pct(results[key])} ± {_pct(results.get(key + '_std', 0.0))}"

    lines.append(
        f"| mean ± std | {mean_std('eval_f1')} | {mean_std('test_precision')} | {mean_std('test_recall')} | "
        f"**{mean_std('test_f1')}** |"
    )
    return "\n".join(lines) + "\n"
