"""Multi-seed NER results: ``all_results.json``, a markdown table, and the Hub ``model-index``.

``all_results.json`` keys are a contract (the Hub-publishing helper reads them; see docs/ner.md).
Means are over seeds; ``*_std`` is the sample standard deviation (ddof=1; 0.0 for a single seed).
"""

from __future__ import annotations

import json
import math
import os
from statistics import mean, stdev
from typing import Any, Dict, List, Sequence

RESULTS_FILE = "all_results.json"
METRICS = ("f1", "precision", "recall")


def _std(values: Sequence[float]) -> float:
    return stdev(values) if len(values) > 1 else 0.0


def aggregate_seed_results(per_seed: Sequence[Dict[str, Any]], run_info: Dict[str, Any] | None = None) -> Dict[str, Any]:
    """Combine per-seed metric dicts (keys ``seed``, ``eval_f1``, ``test_f1``, ...) into all_results."""
    if not per_seed:
        raise ValueError("no seed results to aggregate")
    results: Dict[str, Any] = dict(run_info or {})
    results["seeds"] = [run["seed"] for run in per_seed]
    results["num_seeds"] = len(per_seed)
    for split in ("eval", "test"):
        for metric in METRICS:
            key = f"{split}_{metric}"
            values = [run[key] for run in per_seed if run.get(key) is not None]
            if values:
                results[key] = mean(values)
                results[f"{key}_std"] = _std(values)
    times = [run["train_runtime_s"] for run in per_seed if run.get("train_runtime_s") is not None]
    if times:
        results["train_runtime_s"] = mean(times)
    results["per_seed"] = list(per_seed)
    return results


def write_results(output_dir: str, results: Dict[str, Any]) -> str:
    path = os.path.join(output_dir, RESULTS_FILE)
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(results, handle, indent=2, sort_keys=False)
        handle.write("\n")
    return path


def load_results(path: str) -> Dict[str, Any]:
    if os.path.isdir(path):
        path = os.path.join(path, RESULTS_FILE)
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


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


def model_index(
    results: Dict[str, Any], model_name: str, dataset_name: str | None = None, dataset_type: str | None = None
) -> List[Dict[str, Any]]:
    """The ``model-index`` list of a Hub model card for these results (test-set metrics, seed means).

    See https://huggingface.co/docs/hub/model-cards#evaluation-results for the layout.
    """
    dataset_name = dataset_name or results.get("dataset") or "unknown"
    seeds = results.get("num_seeds", len(results.get("per_seed", [])))
    metrics = []
    for metric in METRICS:
        value = results.get(f"test_{metric}")
        if value is None:
            continue
        metrics.append(
            {
                "type": metric,
                "value": round(float(value), 4),
                "name": f"Test {metric} (entity-level, mean of {seeds} seeds)",
            }
        )
    return [
        {
            "name": model_name,
            "results": [
                {
                    "task": {"type": "token-classification", "name": "Named Entity Recognition"},
                    "dataset": {"name": dataset_name, "type": dataset_type or dataset_name, "split": "test"},
                    "metrics": metrics,
                }
            ],
        }
    ]
