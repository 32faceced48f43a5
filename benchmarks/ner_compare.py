#!/usr/bin/env python
"""Compare models fine-tuned by benchmarks/ner.py: test F1 mean ± std and paired per-seed differences.

benchmarks/ner.py fine-tunes every model with the same seeds, data and settings, so seed s of one model
and seed s of another share their data order and head initialisation; the per-seed difference is the
fair comparison, and its mean ± standard error says whether a gap is larger than the seed noise. Each model's F1
is also given as a percentage of the reference's, per seed, with the mean of those and its 95 % t-interval.
A comparison is filed under the machine kind that measured its inputs (all of one kind).

    PYTHONPATH=. python benchmarks/ner_compare.py --reference averaged.json --models focus.json other.json \
        --output benchmarks/results/<machine kind>/ner_compare.json
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys


sys.path.append(os.path.dirname(os.path.abspath(__file__)))  # appended: its scripts never shadow packages
from _machine import git_state, machine_kind  # noqa: E402
from _results import ResultTarget, output_help, read_result  # noqa: E402


def dataset_row(result: dict, dataset: str, path: str) -> dict:
    """The row benchmarks/ner.py wrote for one dataset (mean and std over seeds already aggregated there)."""
    for row in result["results"]:
        if row["dataset"] == dataset:
            return row
    raise KeyError(f"{path}: no results for {dataset}")


def model_label(result: dict, path: str) -> str:
    """The model's name in a benchmarks/ner.py output. Outputs written before ner.py recorded the model (e.g.
    ner_ncbi_full.json, measured on its default MiniLM) have neither field: they are named by their file."""
    setting = result.get("setting", {})
    return setting.get("model_name") or result.get("model_name_or_path") or os.path.splitext(os.path.basename(path))[0]


def per_seed_f1(row: dict) -> dict[int, float]:
    return {entry["seed"]: entry["test_f1"] for entry in row["per_seed"]}


def paired(scores: dict[int, float], reference: dict[int, float], path: str) -> dict:
    if set(scores) != set(reference):
        raise ValueError(f"{path}: seeds {sorted(scores)} differ from the reference's {sorted(reference)}")
    differences = [scores[s] - reference[s] for s in sorted(scores)]
    standard_error = (
        statistics.stdev(differences) / math.sqrt(len(differences)) if len(differences) > 1 else float("nan")
    )
    return {"mean": statistics.mean(differences), "standard_error": standard_error, "per_seed": differences}


def percent_of_reference(scores: dict[int, float], reference: dict[int, float]) -> dict:
    """F1 as a percentage of the reference's: per seed (paired), their mean, range and 95 % t-interval, and the
    ratio of the two means."""
    ratios = [100 * scores[s] / reference[s] for s in sorted(scores)]
    mean = statistics.mean(ratios)
    result = {
        "per_seed": ratios,
        "mean": mean,
        "min": min(ratios),
        "max": max(ratios),
        "ratio_of_means": 100 * statistics.mean(scores.values()) / statistics.mean(reference.values()),
    }
    if len(ratios) > 1:
        from scipy.stats import t

        half = t.ppf(0.975, len(ratios) - 1) * statistics.stdev(ratios) / math.sqrt(len(ratios))
        result["ci95"] = [mean - half, mean + half]
    return result


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reference", required=True, help="benchmarks/ner.py output of the reference model")
    parser.add_argument("--models", nargs="+", required=True, help="benchmarks/ner.py outputs to compare with it")
    parser.add_argument("--dataset", default="NCBI-disease-IOB")
    parser.add_argument("--output", default="ner_compare", help=output_help("ner_compare"))
    args = parser.parse_args(argv)
    records = {path: read_result(path) for path in [args.reference, *args.models]}
    kinds = {machine_kind(record["machine"]) for record in records.values()}
    if len(kinds) > 1:
        raise SystemExit(f"error: the results compared were measured on machine kinds {sorted(kinds)}: compare one")
    # The measurements' machine; the comparison's own checkout (what computed it).
    target = ResultTarget(args.output, machine=dict(records[args.reference]["machine"], git=git_state()))

    loaded = {path: record["detail"] for path, record in records.items()}
    reference = per_seed_f1(dataset_row(loaded[args.reference], args.dataset, args.reference))
    report = {"dataset": args.dataset, "reference": model_label(loaded[args.reference], args.reference), "models": {}}
    for path, result in loaded.items():
        row = dataset_row(result, args.dataset, path)
        scores = per_seed_f1(row)
        entry = {
            "file": path,
            "load_average_1_5_15_min": result.get("load_average_1_5_15_min"),
            "test_f1_mean": row["test_f1"],
            "test_f1_std": row["test_f1_std"],
            "per_seed": scores,
        }
        if path != args.reference:
            entry["minus_reference"] = paired(scores, reference, path)
            entry["percent_of_reference"] = percent_of_reference(scores, reference)
        report["models"][model_label(result, path)] = entry
    target.write(
        {
            name: {
                "test_f1_pct": round(100 * entry["test_f1_mean"], 1),
                "test_f1_std_pct": round(100 * entry["test_f1_std"], 1),
            }
            for name, entry in report["models"].items()
        },
        detail=report,
    )
    for name, entry in report["models"].items():
        line = f"{name}: {100 * entry['test_f1_mean']:.2f} ± {100 * entry['test_f1_std']:.2f}"
        if "minus_reference" in entry:
            d = entry["minus_reference"]
            line += (
                f"  − reference {100 * d['mean']:+.2f} ± {100 * d['standard_error']:.2f} (per seed "
                + ", ".join(f"{100 * x:+.2f}" for x in d["per_seed"])
                + ")"
            )
        print(line)
    return report


if __name__ == "__main__":
    main()
