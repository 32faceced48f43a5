#!/usr/bin/env python
"""Loss curves of two pre-training arms from the same seed, compared step by step.

    # the head's effect alone: identical pre-masked batches, standard vs masked-only head
    nice python benchmarks/pretraining_curves.py --arms same_batches_standard,same_batches_masked_only \\
        --section same_batch_curves --batch_size 4 --max_lines 3000
    # the two recipes (different collators, hence different masks)
    nice python benchmarks/pretraining_curves.py --arms plain,ours --section recipe_curves
    # bf16 against float32 on our recipe
    nice python benchmarks/pretraining_curves.py --arms ours,ours+bf16 --section bf16_curves

(``HF_HUB_OFFLINE=1 PYTHONPATH=.`` from the repository root.)
"""

from __future__ import annotations

from dataclasses import dataclass, field

from _pretraining_bench import BenchmarkArguments, compare_curves, run_arms, save_section, speedup, with_global_options

from bioptimus_hf.commands.config_parser import parse_args


@dataclass
class CurveArguments:
    arms: str = field(default="plain,ours", metadata={"help": "the two arms compared, comma-separated"})
    curve_steps: int = 100
    parallel: bool = field(default=True, metadata={"help": "run both side by side (their timings are then not compared)"})
    section: str = field(default="recipe_curves", metadata={"help": "key of the results in --output_json"})


def main():
    args, script = parse_args((BenchmarkArguments, CurveArguments), description=__doc__)
    arms = with_global_options([arm.strip() for arm in script.arms.split(",") if arm.strip()], args)
    if len(arms) != 2:
        raise ValueError(f"--arms {script.arms!r}: expected exactly two arms")
    a, b = run_arms(args, [(arm, script.curve_steps, f"curve_{arm}") for arm in arms], parallel=script.parallel)
    comparison = compare_curves(a, b)
    save_section(args, script.section, {
        "comparison": comparison,
        "speed": None if script.parallel else speedup([a, b], arms[1], arms[0]),
        "runs": {arms[0]: a, arms[1]: b},
    })
    print(
        f"{arms[0]} vs {arms[1]} over {comparison['steps']} steps: mean |diff| of 10-step smoothed curves "
        f"{comparison['mean_abs_diff_smoothed10']:.4f} (single-curve noise {comparison['single_curve_noise_mean_abs']:.4f})"
    )


if __name__ == "__main__":
    main()
