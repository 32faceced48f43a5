"""Comparing several models on several NER datasets: one table in the layout of the BIOptimus paper's
Table 5 (one row per model, one column per dataset, test F1 mean ± std over seeds, and the average).

The command ``bioptimus-ner-compare`` (:mod:`bioptimus_hf.commands.compare_ner`) runs run_ner.py for
each model × dataset pair and builds the table with the functions here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from statistics import mean
from typing import Dict, List, Sequence, Tuple

from .results import RESULTS_FILE, load_results

DEFAULT_RUN_NER = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "run_ner.py")


def parse_models(text: str) -> List[Tuple[str, str]]:
    """``"a=path1,path2"`` -> ``[("a", "path1"), ("path2", "path2")]`` (name defaults to the basename)."""
    models = []
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, sep, path = item.partition("=")
        if not sep:
            name, path = os.path.basename(os.path.normpath(item)), item
        models.append((name, path))
    return models


def run_dir(output_dir: str, model: str, dataset: str) -> str:
    return os.path.join(output_dir, model, os.path.basename(os.path.normpath(dataset)))


def comparison_table(results: Dict[Tuple[str, str], dict], models: Sequence[str], datasets: Sequence[str]) -> str:
    """Markdown table of test F1 (%) mean ± std; missing runs show as a dash; last column = average."""
    header = "| model | " + " | ".join(datasets) + " | average |"
    lines = [header, "|---" * (len(datasets) + 2) + "|"]
    for model in models:
        cells, f1s = [], []
        for dataset in datasets:
            result = results.get((model, dataset))
            if result is None or result.get("test_f1") is None:
                cells.append("–")
                continue
            f1s.append(result["test_f1"])
            cells.append(f"{100 * result['test_f1']:.2f} ± {100 * result.get('test_f1_std', 0.0):.2f}")
        average = f"{100 * mean(f1s):.2f}" if f1s and len(f1s) == len(datasets) else "–"
        lines.append(f"| {model} | " + " | ".join(cells) + f" | {average} |")
    return "\n".join(lines) + "\n"


def compare_models(
    models: Sequence[Tuple[str, str]],
    datasets: Sequence[str],
    output_dir: str,
    config: str | None = None,
    run_ner: str = DEFAULT_RUN_NER,
    run_ner_args: Sequence[str] = (),
    rerun: bool = False,
    results_only: bool = False,
) -> str:
    """Fine-tune and evaluate every model on every dataset (skipping runs with results), write
    ``comparison.md`` and ``comparison.json`` in ``output_dir``, return the markdown table."""
    dataset_names = [os.path.basename(os.path.normpath(d)) for d in datasets]
    results: Dict[Tuple[str, str], dict] = {}
    for name, path in models:
        for dataset, dataset_name in zip(datasets, dataset_names):
            directory = run_dir(output_dir, name, dataset)
            done = os.path.isfile(os.path.join(directory, RESULTS_FILE))
            if not results_only and (rerun or not done):
                command = [sys.executable, run_ner] + ([config] if config else [])
                command += ["--model_name_or_path", path, "--model_name", name, "--data_dir", dataset,
                            "--output_dir", directory] + list(run_ner_args)
                print("+", " ".join(command), flush=True)
                subprocess.run(command, check=True)
            if os.path.isfile(os.path.join(directory, RESULTS_FILE)):
                results[(name, dataset_name)] = load_results(directory)
    table = comparison_table(results, [name for name, _ in models], dataset_names)
    os.makedirs(output_dir, exist_ok=True)
    with open(os.path.join(output_dir, "comparison.md"), "w", encoding="utf-8") as handle:
        handle.write("Test entity-level F1 (%), mean ± std over seeds\n\n" + table)
    summary = [
        {"model": model, "dataset": dataset,
         **{k: r.get(k) for k in ("test_f1", "test_f1_std", "test_precision", "test_recall", "eval_f1", "seeds")}}
        for (model, dataset), r in results.items()
    ]
    with open(os.path.join(output_dir, "comparison.json"), "w", encoding="utf-8") as handle:
        json.dump(summary, handle, indent=2)
    return table
