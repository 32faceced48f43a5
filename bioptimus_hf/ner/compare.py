"""Evaluate several models on several NER datasets with run_ner.py and write one comparison table
(the layout of the BIOptimus paper's Table 5: one row per model, one column per dataset, test F1
mean ± std over seeds, and the average over datasets).

    python -m bioptimus_hf.ner.compare --config configs/ner_blurb.yaml \\
        --models v0.1=out/releases/v0.1,v0.2=out/releases/v0.2,baseline=path/to/bert \\
        --datasets ../shared/data/ner/NCBI-disease-IOB,../shared/data/ner/BC5CDR-chem-IOB \\
        --output_dir ner_comparison -- --seeds 1,2,3

Everything after ``--`` is passed to every run_ner.py call (overriding the config). Runs whose
``all_results.json`` already exists are not repeated (pass ``--rerun`` to force), so an interrupted
comparison resumes. ``--results_only`` only rebuilds the table.
"""

from __future__ import annotations

import argparse
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


def main(argv: List[str] | None = None) -> str:
    argv = list(sys.argv[1:] if argv is None else argv)
    passthrough: List[str] = []
    if "--" in argv:
        cut = argv.index("--")
        argv, passthrough = argv[:cut], argv[cut + 1 :]
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", required=True, help="comma-separated name=path (or path) list")
    parser.add_argument("--datasets", required=True, help="comma-separated data directories (train/devel/test.tsv)")
    parser.add_argument("--output_dir", required=True)
    parser.add_argument("--config", help="yaml/json run_ner.py config shared by all runs")
    parser.add_argument("--run_ner", default=DEFAULT_RUN_NER, help="path to run_ner.py")
    parser.add_argument("--rerun", action="store_true", help="repeat runs that already have all_results.json")
    parser.add_argument("--results_only", action="store_true", help="only rebuild the table from existing runs")
    args = parser.parse_args(argv)

    models = parse_models(args.models)
    datasets = [d for d in (p.strip() for p in args.datasets.split(",")) if d]
    dataset_names = [os.path.basename(os.path.normpath(d)) for d in datasets]
    results: Dict[Tuple[str, str], dict] = {}
    for name, path in models:
        for dataset, dataset_name in zip(datasets, dataset_names):
            directory = run_dir(args.output_dir, name, dataset)
            done = os.path.isfile(os.path.join(directory, RESULTS_FILE))
            if not args.results_only and (args.rerun or not done):
                command = [sys.executable, args.run_ner] + ([args.config] if args.config else [])
                command += ["--model_name_or_path", path, "--model_name", name, "--data_dir", dataset,
                            "--output_dir", directory] + passthrough
                print("+", " ".join(command), flush=True)
                subprocess.run(command, check=True)
            if os.path.isfile(os.path.join(directory, RESULTS_FILE)):
                results[(name, dataset_name)] = load_results(directory)
    table = comparison_table(results, [name for name, _ in models], dataset_names)
    os.makedirs(args.output_dir, exist_ok=True)
    with open(os.path.join(args.output_dir, "comparison.md"), "w", encoding="utf-8") as handle:
        handle.write("Test entity-level F1 (%), mean ± std over seeds\n\n" + table)
    summary = [
        {"model": model, "dataset": dataset, **{k: r.get(k) for k in ("test_f1", "test_f1_std", "test_precision", "test_recall", "eval_f1", "seeds")}}
        for (model, dataset), r in results.items()
    ]
    with open(os.path.join(args.output_dir, "comparison.json"), "w", encoding="utf-8") as handle:
        json.dump(summary, handle, indent=2)
    print(table)
    return table


if __name__ == "__main__":
    main()
