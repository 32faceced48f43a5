#!/usr/bin/env python
"""Loss curves of two pre-training arms from the same seed, compared step by step.

    # the head's effect alone: identical pre-masked batches, standard vs masked-only head
    nice python benchmarks/pretraining_curves.py --arms same_batches_standard,same_batches_masked_only \\
        --section same_batch_curves --batch_size 4 --max_lines 3000
    # the two recipes (different collators, hence different masks)
    nice python benchmarks/pretraining_curves.py --arms plain,ours --section recipe_curves
    # bf16 against float32 on our recipe
    nice python benchmarks/pretraining_curves.py --arms ours,ours+bf16 --section bf16_curves
    # each run also draws <output_json stem>_<section>.png; --plot_only redraws it from the saved JSON

(``HF_HUB_OFFLINE=1 PYTHONPATH=.`` from the repository root.)
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from _pretraining_bench import (
    BenchmarkArguments,
    compare_curves,
    output_file,
    run_arms,
    save_section,
    speedup,
    with_global_options,
)
from bioptimus_hf.commands import parse_args
from bioptimus_hf.utils.plots import pyplot


@dataclass
class CurveArguments:
    arms: str = field(default="plain,ours", metadata={"help": "the two arms compared, comma-separated"})
    curve_steps: int = 100
    parallel: bool = field(
        default=True, metadata={"help": "run both side by side (their timings are then not compared)"}
    )
    section: str = field(default="recipe_curves", metadata={"help": "key of the results in --output_json"})
    plot_only: bool = field(
        default=False, metadata={"help": "only draw the PNG of --section already in --output_json"}
    )


def plot_curve_pair(section: dict, path: Path) -> Path:
    """Both arms' per-step losses (top) and their difference (bottom, its own scale: for bf16 against float32
    it is thousandths of the step-to-step noise, invisible on the top panel)."""
    (name_a, run_a), (name_b, run_b) = section["runs"].items()
    steps = [step for step, _ in run_a["losses"]][: min(len(run_a["losses"]), len(run_b["losses"]))]
    loss_a = [loss for _, loss in run_a["losses"]][: len(steps)]
    loss_b = [loss for _, loss in run_b["losses"]][: len(steps)]
    plt = pyplot()
    figure, (top, bottom) = plt.subplots(2, 1, figsize=(7, 5.5), sharex=True, height_ratios=(2, 1))
    top.plot(steps, loss_a, label=name_a)
    top.plot(steps, loss_b, "--", label=name_b)
    top.set_ylabel("masked-LM training loss")
    top.legend(fontsize=8)
    bottom.plot(steps, [b - a for a, b in zip(loss_a, loss_b)], color="tab:red")
    bottom.axhline(0, color="grey", linewidth=0.8)
    bottom.set_ylabel(f"{name_b} − {name_a}")
    bottom.set_xlabel("optimizer step (same seed, same batches and masks)")
    comparison = section["comparison"]
    top.set_title(
        f"{name_a} vs {name_b}: mean |diff| {comparison['mean_abs_diff_raw']:.4f}, "
        f"step-to-step noise {comparison['single_curve_noise_mean_abs']:.3f}",
        fontsize=9,
    )
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path


def main():
    args, script = parse_args((BenchmarkArguments, CurveArguments), description=__doc__)
    arms = with_global_options([arm.strip() for arm in script.arms.split(",") if arm.strip()], args)
    if len(arms) != 2:
        raise ValueError(f"--arms {script.arms!r}: expected exactly two arms")
    output = output_file(args)
    plot_path = output.with_name(f"{output.stem}_{script.section}.png")
    if script.plot_only:
        saved = json.loads(output.read_text()).get("detail", {}) if output.is_file() else {}
        if script.section not in saved:
            raise SystemExit(f"error: {output}: no section {script.section!r} to plot (run without --plot_only first)")
        print("wrote", plot_curve_pair(saved[script.section], plot_path))
        return
    a, b = run_arms(args, [(arm, script.curve_steps, f"curve_{arm}") for arm in arms], parallel=script.parallel)
    comparison = compare_curves(a, b)
    speed = None if script.parallel else speedup([a, b], arms[1], arms[0])
    figures = {
        key: comparison[key]
        for key in ("steps", "mean_abs_diff_smoothed10", "single_curve_noise_mean_abs")
        if key in comparison
    }
    if speed:
        figures[f"{arms[1]}_vs_{arms[0]}"] = round(speed["ratio_of_medians"], 2)
    save_section(
        args,
        script.section,
        {"comparison": comparison, "speed": speed, "runs": {arms[0]: a, arms[1]: b}},
        figures=figures,
    )
    plot_curve_pair({"comparison": comparison, "runs": {arms[0]: a, arms[1]: b}}, plot_path)
    print(
        f"{arms[0]} vs {arms[1]} over {comparison['steps']} steps: mean |diff| of 10-step smoothed curves "
        f"{comparison['mean_abs_diff_smoothed10']:.4f} (single-curve noise {comparison['single_curve_noise_mean_abs']:.4f})"
    )


if __name__ == "__main__":
    main()
