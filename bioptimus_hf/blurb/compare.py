"""Models compared on the whole BLURB table, paired by seed: per dataset, task type and BLURB score, each model minus
the first, the mean ± std of the per-seed differences over the seeds (and datasets) both ran; the same seed gives
both the same data order, head and dropout (:func:`bioptimus_hf.finetuning.results.paired_seed_difference`)."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from ..finetuning.results import paired_seed_difference
from ..releases.blurb_results import HUB_TASKS, load_blurb_table
from ..utils.files import write_json_atomic, write_text_atomic


COMPARISON_FILE = "blurb_comparison"  # .json and .md


def parse_runs(items: Sequence[str]) -> dict[str, str]:
    """``["A=dir1", "dir2"]`` -> ``{"A": "dir1", "dir2": "dir2"}`` (the name defaults to the directory's)."""
    runs: dict[str, str] = {}
    for item in items:
        name, sep, path = item.partition("=")
        if not sep:
            name, path = os.path.basename(os.path.normpath(item)), item
        if name in runs:
            raise ValueError(f"--runs: {name!r} given twice")
        runs[name] = path
    if len(runs) < 2:
        raise ValueError("--runs: give at least two runs (NAME=DIR), the first is the reference")
    return runs


def _paired(ours: Mapping[str, float], theirs: Mapping[str, float]) -> dict[str, Any] | None:
    as_runs = [
        {"per_seed": [{"seed": int(seed), "score": value} for seed, value in side.items()]} for side in (ours, theirs)
    ]
    return paired_seed_difference(as_runs[0], as_runs[1], key="score")


def compare_tables(tables: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """Each table after the first minus the first: ``datasets``, ``task_types`` and ``score`` differences."""
    names = list(tables)
    reference = tables[names[0]]
    comparisons = {}
    for name in names[1:]:
        table = tables[name]
        rows = {row["dataset"]: row for row in table["datasets"]}
        shared = [row for row in reference["datasets"] if row["dataset"] in rows]
        if not shared:
            raise ValueError(f"{name} and {names[0]} have no dataset in common")
        shared_names = sorted(row["dataset"] for row in shared)
        same_datasets = shared_names == sorted(rows) == sorted(r["dataset"] for r in reference["datasets"])
        comparisons[name] = {
            "datasets": {row["dataset"]: _paired(rows[row["dataset"]]["per_seed"], row["per_seed"]) for row in shared},
            # averages over other datasets are not paired: only where both tables hold the same datasets
            "task_types": {
                task_type: _paired(table["task_types"][task_type]["per_seed"], entry["per_seed"])
                for task_type, entry in reference["task_types"].items()
                if same_datasets and task_type in table["task_types"]
            },
            "score": _paired(table["score_per_seed"], reference["score_per_seed"]) if same_datasets else None,
            "same_datasets": same_datasets,
        }
    return {"reference": names[0], "runs": names, "comparisons": comparisons}


def _cell(difference: dict[str, Any] | None) -> str:
    if difference is None:
        return "–"
    return f"{difference['mean']:+.2f} ± {difference['std']:.2f} (n={difference['num_seeds']})"


def comparison_markdown(comparison: Mapping[str, Any]) -> str:
    """One column per run compared with the reference: datasets, then task types, then the BLURB score."""
    others = list(comparison["comparisons"])
    lines = [
        "| | " + " | ".join(f"{name} − {comparison['reference']}" for name in others) + " |",
        "|---|" + "---:|" * len(others),
    ]
    keys = []
    for name in others:
        keys += [k for k in comparison["comparisons"][name]["datasets"] if k not in keys]
    for key in keys:
        lines.append(
            f"| {key} | " + " | ".join(_cell(comparison["comparisons"][n]["datasets"].get(key)) for n in others) + " |"
        )
    types = []
    for name in others:
        types += [t for t in comparison["comparisons"][name]["task_types"] if t not in types]
    for task_type in types:
        lines.append(
            f"| *{HUB_TASKS[task_type][1]}* | "
            + " | ".join(_cell(comparison["comparisons"][n]["task_types"].get(task_type)) for n in others)
            + " |"
        )
    lines.append(
        "| **BLURB score** | " + " | ".join(_cell(comparison["comparisons"][n]["score"]) for n in others) + " |"
    )
    return (
        "\n".join(lines) + "\n\nTest scores in %: mean ± std of the per-seed differences over the seeds both "
        "runs have (n); task types and the score only where both runs hold the same datasets.\n"
    )


def compare_runs(runs: Mapping[str, str], output_dir: str | None = None) -> dict[str, Any]:
    """Each run's ``blurb_results.json`` compared; ``blurb_comparison.json``/``.md`` written to ``output_dir``."""
    comparison = compare_tables({name: load_blurb_table(path) for name, path in runs.items()})
    comparison["markdown"] = comparison_markdown(comparison)
    if output_dir:
        os.makedirs(output_dir, exist_ok=True)
        write_json_atomic(
            os.path.join(output_dir, COMPARISON_FILE + ".json"),
            {k: v for k, v in comparison.items() if k != "markdown"},
        )
        write_text_atomic(os.path.join(output_dir, COMPARISON_FILE + ".md"), comparison["markdown"])
    return comparison


def compare_and_print(args) -> dict[str, Any]:
    """``bioptimus blurb-compare``: :func:`compare_runs` of ``--runs``, its table printed."""
    comparison = compare_runs(parse_runs(args.runs), args.output_dir)
    print(comparison["markdown"])
    return comparison
