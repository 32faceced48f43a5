#!/usr/bin/env python
"""Benchmark: the fine-tuning step of ``bioptimus blurb-task`` and ``bioptimus ner`` against the plain transformers
peer, in steps per second, on a model small enough that per-step work other than the model shows.

The arms are ``benchmarks/blurb_peer.py``'s, imported, not copied: ``plain`` (transformers' run_glue.py /
run_ner.py recipe: ``datasets.map`` tokenisation, the stock ``Trainer`` and collators) and ``ours``
(:func:`bioptimus_hf.blurb.run.run_blurb_task` for a sequence task, ``run_ner.py``'s ``main`` for NER), with the
same data rows, hyper-parameters, seed and float32 precision (blurb_peer.py pins ours to float32), in this process.
A step's figure is the Trainer's own ``train_steps_per_second`` (optimizer steps over the ``train()`` wall time
after the data loader is built: collation, forward, backward, clipping, optimizer, scheduler, callbacks and logging;
no prediction), read from the ``TrainOutput`` of the run's ``Trainer.train``; beside it the median time between
consecutive steps' ends (a callback added to both arms alike), which a burst of load from other processes moves
less. The sequence tasks' arms train on the same batches in the same order, so their ``train_loss`` must be equal
(``same_train_loss``); NER's differ (the plain recipe truncates a sentence, ours splits it into windows).

The model is a random BERT built here (``--hidden_size`` 64, ``--layers`` 2, all-MiniLM-L6-v2's tokenizer), so that
the model's share of a step is small (on a 2-core CPU at the recipes' batches the forward, backward and AdamW over
the 30,522-row embedding still take most of a step: what is left to compare is the rest). Arms alternate within
each round (the order flips every round), over ``--rounds``; the figures are each arm's median steps/s, the spread
(min, max) and ours / plain per task and overall (the geometric mean of the per-round ratios).

    export HF_HUB_OFFLINE=1 PYTHONPATH=. OMP_NUM_THREADS=1
    python benchmarks/finetune_step.py --rounds 3     # -> benchmarks/results/<machine kind>/finetune_step.json
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import math
import os
import statistics
import sys
import tempfile


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

import blurb_peer  # noqa: E402
from _results import ResultTarget, output_help  # noqa: E402
from blurb_peer import Budget  # noqa: E402


ARMS = ("plain", "ours")
# Per task: the dataset's recipe batch and length (GAD 32 x 128, PubMedQA 16 x 512; NER 32 x 128), one epoch over
# the first rows; dev and test cut short (prediction is not timed).
TASKS = {
    "relation_extraction": Budget("GAD", 3e-5, 32, 1, 128, train_rows=1024, eval_rows=64, test_rows=64),
    "question_answering": Budget("PubMedQA", 3e-5, 16, 1, 512, train_rows=320, eval_rows=32, test_rows=32),
    "ner": Budget("NCBI-disease-IOB", 5e-5, 32, 1, 128, train_rows=1024, eval_rows=64, test_rows=64),
}


def build_tiny_model(path: str, hidden_size: int, layers: int) -> str:
    """A random BERT (``hidden_size``, ``layers``, 2 heads) with all-MiniLM-L6-v2's tokenizer, saved at ``path``."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertModel

    tokenizer = AutoTokenizer.from_pretrained(blurb_peer.minilm_dir())
    config = BertConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=hidden_size,
        num_hidden_layers=layers,
        num_attention_heads=2,
        intermediate_size=2 * hidden_size,
        max_position_embeddings=512,
    )
    torch.manual_seed(0)
    BertModel(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


@contextlib.contextmanager
def train_metrics():
    """The metrics of every ``Trainer.train`` (subclasses included) run inside, in order, each with
    ``step_seconds``: the time between consecutive optimizer steps' ends (a ``TrainerCallback``'s ``on_step_end``),
    whose median shrugs off a burst of load on a shared machine."""
    import time

    import transformers

    collected, train = [], transformers.Trainer.train

    class StepClock(transformers.TrainerCallback):
        def __init__(self):
            self.ends = []

        def on_step_end(self, args, state, control, **kwargs):
            self.ends.append(time.perf_counter())

    def recording_train(self, *args, **kwargs):
        clock = StepClock()
        self.add_callback(clock)
        try:
            output = train(self, *args, **kwargs)
        finally:
            self.remove_callback(clock)
        steps = [b - a for a, b in zip(clock.ends, clock.ends[1:])]
        collected.append(dict(output.metrics, global_step=output.global_step, step_seconds=steps))
        return output

    transformers.Trainer.train = recording_train
    try:
        yield collected
    finally:
        transformers.Trainer.train = train


def run_arm(task: str, arm: str, model_path: str, seed: int) -> dict:
    """One fine-tune of ``arm`` on ``task``'s budget: its train metrics and dev score."""
    budget = TASKS[task]
    with tempfile.TemporaryDirectory() as output_dir, train_metrics() as metrics:
        if task == "ner":
            run = blurb_peer.plain_token_classification if arm == "plain" else blurb_peer.ours_ner
            outcome = run(budget, model_path, seed, output_dir)
        else:
            run = (
                blurb_peer.plain_sequence_classification if arm == "plain" else blurb_peer.ours_sequence_classification
            )
            outcome = run(task, budget, model_path, seed, output_dir)
    (train,) = metrics
    return {
        "task": task,
        "arm": arm,
        "steps": train["global_step"],
        "train_runtime_s": train["train_runtime"],
        "steps_per_s": train["train_steps_per_second"],
        "median_step_ms": round(1000 * statistics.median(train["step_seconds"]), 2),
        "train_loss": train["train_loss"],
        "dev": outcome["dev"],
    }


def geometric_mean(ratios: list[float]) -> float:
    return round(math.exp(statistics.fmean(math.log(r) for r in ratios)), 3)


def summarise(runs: list[dict], tasks: list[str]) -> dict:
    figures = {}
    all_ratios = []
    for task in tasks:
        by_arm = {arm: [r for r in runs if r["task"] == task and r["arm"] == arm] for arm in ARMS}
        ratios = [o["steps_per_s"] / p["steps_per_s"] for p, o in zip(by_arm["plain"], by_arm["ours"])]
        all_ratios += ratios
        figures[task] = {
            "dataset": TASKS[task].dataset,
            "steps": by_arm["ours"][0]["steps"],
            **{
                f"{arm}_steps_per_s": {
                    "median": round(statistics.median(r["steps_per_s"] for r in arm_runs), 2),
                    "min": round(min(r["steps_per_s"] for r in arm_runs), 2),
                    "max": round(max(r["steps_per_s"] for r in arm_runs), 2),
                }
                for arm, arm_runs in by_arm.items()
            },
            **{
                f"{arm}_median_step_ms": round(statistics.median(r["median_step_ms"] for r in arm_runs), 2)
                for arm, arm_runs in by_arm.items()
            },
            "ours_over_plain": geometric_mean(ratios),
            "ours_over_plain_median_step": round(
                statistics.median(r["median_step_ms"] for r in by_arm["plain"])
                / statistics.median(r["median_step_ms"] for r in by_arm["ours"]),
                3,
            ),
            "ours_over_plain_per_round": [round(r, 3) for r in ratios],
            "same_train_loss": all(
                p["train_loss"] == o["train_loss"] for p, o in zip(by_arm["plain"], by_arm["ours"])
            ),
        }
    figures["ours_over_plain"] = geometric_mean(all_ratios)
    return figures


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", default=",".join(TASKS), help=f"comma-separated, of {', '.join(TASKS)}")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--model_name_or_path", default=None, help="default: the random BERT built here")
    parser.add_argument("--hidden_size", type=int, default=64)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--data", default=None, help="the shared data folder (default ../shared/data)")
    parser.add_argument("--output", default="finetune_step", help=output_help("finetune_step"))
    args = parser.parse_args(argv)
    tasks = [task for task in args.tasks.split(",") if task]
    unknown = sorted(set(tasks) - set(TASKS))
    if unknown:
        parser.error(f"--tasks: unknown {', '.join(unknown)}; choose among {', '.join(TASKS)}")
    if args.data:
        blurb_peer.DATA = args.data
    target = ResultTarget(args.output)
    runs = []
    with tempfile.TemporaryDirectory() as scratch:
        model_path = args.model_name_or_path or build_tiny_model(
            os.path.join(scratch, "tiny_bert"), args.hidden_size, args.layers
        )
        for round_index in range(args.rounds):
            for task in tasks:
                for arm in ARMS if round_index % 2 == 0 else ARMS[::-1]:
                    run = dict(run_arm(task, arm, model_path, args.seed), round=round_index)
                    print(f"round {round_index} {task} {arm}: {run['steps_per_s']:.2f} steps/s", flush=True)
                    runs.append(run)
    figures = summarise(runs, tasks)
    figures["device"] = f"cpu, float32, OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}"
    detail = {
        "model": args.model_name_or_path
        or {"kind": "random BERT", "hidden_size": args.hidden_size, "layers": args.layers, "heads": 2},
        "budgets": {task: dataclasses.asdict(TASKS[task]) for task in tasks},
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "runs": runs,
    }
    target.write(figures, detail=detail)
    print(figures)
    return figures


if __name__ == "__main__":
    main()
