#!/usr/bin/env python
"""How fast the command line answers ``--help``: ``bioptimus --help`` and every ``bioptimus <command> --help``,
against transformers' own ``HfArgumentParser(TrainingArguments)`` help on the same machine.

Each arm is one fresh process (``python -m bioptimus_hf.commands ...`` from this checkout; the reference:
``python -c "HfArgumentParser(TrainingArguments).parse_args_into_dataclasses(['--help'])"``), timed wall-clock
from start to exit. Rounds alternate every arm (reference, bioptimus, then each command, in registry order), so
load on the machine falls on all of them alike. Per arm: the median seconds over the rounds and its ratio to the
reference's median (what the 1.1x target of a command's help is measured against). The record goes to
``benchmarks/results/<machine kind>/cli_help.json``::

    HF_HUB_OFFLINE=1 PYTHONPATH=. python benchmarks/cli_help.py --rounds 3
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field

from _results import ROOT, ResultTarget
from bioptimus_hf.commands import COMMANDS, parse_args


RESULTS_NAME = "cli_help"
REFERENCE = "HfArgumentParser(TrainingArguments)"
REFERENCE_CODE = (
    "from transformers import HfArgumentParser, TrainingArguments; "
    "HfArgumentParser(TrainingArguments).parse_args_into_dataclasses(['--help'])"
)


@dataclass
class CliHelpArguments:
    rounds: int = field(default=3, metadata={"help": "alternating rounds (one run of every arm each)"})
    output_json: str = field(
        default=RESULTS_NAME,
        metadata={"help": "results name (benchmarks/results/<machine kind>/<name>.json) or a .json path"},
    )

    def __post_init__(self):
        if self.rounds < 1:
            raise ValueError(f"--rounds {self.rounds}: must be at least 1")


def arms() -> dict[str, list[str]]:
    """Arm name -> the command line it times."""
    command = [sys.executable, "-m", "bioptimus_hf.commands"]
    named = {REFERENCE: [sys.executable, "-c", REFERENCE_CODE], "bioptimus": [*command, "--help"]}
    named.update({f"bioptimus {name}": [*command, name, "--help"] for name in COMMANDS})
    return named


def time_once(argv: list[str]) -> float:
    env = dict(os.environ, PYTHONPATH=str(ROOT), HF_HUB_OFFLINE="1")
    start = time.perf_counter()
    subprocess.run(argv, env=env, cwd=ROOT, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> dict:
    (args,) = parse_args((CliHelpArguments,), argv, description=__doc__)
    target = ResultTarget(args.output_json)
    named = arms()
    seconds: dict[str, list[float]] = {name: [] for name in named}
    for round_index in range(args.rounds):
        for name, command in named.items():
            seconds[name].append(time_once(command))
        print(f"round {round_index + 1}/{args.rounds}: " + ", ".join(f"{n} {s[-1]:.2f}s" for n, s in seconds.items()))
    reference = statistics.median(seconds[REFERENCE])
    figures = {
        name: {"median_s": round(statistics.median(runs), 3), "ratio": round(statistics.median(runs) / reference, 3)}
        for name, runs in seconds.items()
    }
    for name, figure in figures.items():
        print(f"{name:<32} {figure['median_s']:7.2f} s  {figure['ratio']:5.2f}x")
    detail = {"rounds": args.rounds, "seconds": {name: [round(s, 3) for s in runs] for name, runs in seconds.items()}}
    target.write(figures, detail=detail)
    return figures


if __name__ == "__main__":
    main()
