#!/usr/bin/env python
"""torch.profiler tables of a few training steps of each arm (after --warmup_steps untimed steps).

HF_HUB_OFFLINE=1 PYTHONPATH=. nice python benchmarks/pretraining_profile.py --warmup_steps 1 --max_lines 2000
"""

from __future__ import annotations

from dataclasses import dataclass, field

from _pretraining_bench import BenchmarkArguments, run_arms, save_section, with_global_options
from bioptimus_hf.commands import parse_args


@dataclass
class ProfileArguments:
    arms: str = field(default="plain,ours", metadata={"help": "comma-separated arms"})
    profile_steps: int = 2
    section: str = "profile"


def main():
    args, script = parse_args((BenchmarkArguments, ProfileArguments), description=__doc__)
    arms = with_global_options([arm.strip() for arm in script.arms.split(",") if arm.strip()], args)
    steps = args.warmup_steps + script.profile_steps
    runs = run_arms(args, [(arm, steps, f"profile_{arm}", script.profile_steps) for arm in arms])
    for arm, run in zip(arms, runs):
        print(f"--- profile {arm} ---\n{run.get('profile_table')}", flush=True)
    profiles = {
        arm: {"profile": run.get("profile"), "table": run.get("profile_table")} for arm, run in zip(arms, runs)
    }
    figures = {arm: {"profiled_steps": script.profile_steps} for arm in arms}
    save_section(args, script.section, profiles, figures=figures)


if __name__ == "__main__":
    main()
