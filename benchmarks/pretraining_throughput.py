#!/usr/bin/env python
"""Pre-training tokens/s of several arms, run alternately (a, b, ..., a, b, ...) in fresh processes.

Arms are ``recipe[+bf16][+tf32][+compile]`` (see ``benchmarks/_pretraining_bench.py``); load from other
processes hits every arm alike. Each run reports tokens/s, useful and nominal model TFLOP/s and the useful MFU
against the device's matmul peak in the arm's precision, measured at the start (``benchmarks/_mfu.py``; or
--peak_tflops), with the machine it ran on. Runs on CUDA when a GPU is visible.

    HF_HUB_OFFLINE=1 PYTHONPATH=. nice python benchmarks/pretraining_throughput.py                    # plain vs ours
    HF_HUB_OFFLINE=1 PYTHONPATH=. nice python benchmarks/pretraining_throughput.py \\
        --arms plain,plain+bf16,ours,ours+bf16 --section precision_throughput
    HF_HUB_OFFLINE=1 PYTHONPATH=. nice python benchmarks/pretraining_throughput.py \\
        --architecture roberta --model_size minilm --section roberta_minilm     # a random RoBERTa, MiniLM's shape
"""

from __future__ import annotations

from dataclasses import dataclass, field

from _pretraining_bench import BenchmarkArguments, run_arms, save_section, speedup, summarize_arms, with_global_options
from bioptimus_hf.commands import parse_args


@dataclass
class ThroughputArguments:
    arms: str = field(default="plain,ours", metadata={"help": "comma-separated arms, run in this order each round"})
    rounds: int = field(default=2, metadata={"help": "alternating rounds (one run of every arm each)"})
    timed_steps: int = field(default=10, metadata={"help": "timed steps per run (after --warmup_steps)"})
    section: str = field(default="throughput", metadata={"help": "key of the results in --output_json"})


def main():
    args, script = parse_args((BenchmarkArguments, ThroughputArguments), description=__doc__)
    arms = with_global_options([arm.strip() for arm in script.arms.split(",") if arm.strip()], args)
    steps = args.warmup_steps + script.timed_steps
    jobs = [(arm, steps, f"round{i}_{arm}") for i in range(script.rounds) for arm in arms]
    runs = run_arms(args, jobs)
    result = {"arms": arms, "summary": summarize_arms(runs), "runs": runs}
    # Every arm against every arm listed before it (the first arm is the baseline of all).
    result["speedups"] = {
        f"{faster} / {baseline}": speedup(runs, faster, baseline)
        for i, faster in enumerate(arms)
        for baseline in arms[:i]
    }
    save_section(args, script.section, result)
    for name, value in result["speedups"].items():
        rounds = ", ".join(f"{r:.2f}" for r in value["round_ratios"])
        print(f"{name}: {value['ratio_of_medians']:.2f}x (rounds {rounds})")


if __name__ == "__main__":
    main()
