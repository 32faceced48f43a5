#!/usr/bin/env python
"""Benchmark: K seeds of one fine-tuning trained as one batched model against K separate runs, on a tiny random BERT
built in code (step-bound: the per-step work, not the matrix products, decides its speed).

Arms, each round in fresh processes, their order rotated from round to round:

* ``batched``: one process, :func:`bioptimus_hf.finetuning.batched_seeds.train_seeds_batched` (one stacked model
  under ``vmap``);
* ``sequential``: one process, the seeds one after another, each in its own ``Trainer``
  (:func:`~bioptimus_hf.finetuning.batched_seeds.train_seeds_separately`);
* ``side_by_side``: K processes at once, one seed each, the threads divided among them (at least one each).

``--through loop`` runs the same three arms through the real seed loop, ``bioptimus blurb-task`` on a synthetic
relation-extraction set of the same rows (its recipe under the benchmark's batch, epochs, length and learning rate;
float32; dev and test predicted, seed files written): ``--batched_seeds true``, ``--batched_seeds false``, and K
processes of ``--seeds <s>`` each. ``--through core`` (the default) calls the training functions alone.

Threads: a one-process arm runs ``--threads`` torch threads (default: every core available), a side-by-side process
``--threads // K``, at least one (so with ``--threads 1`` the side-by-side arm runs K threads).

Every arm trains the same seeds on the same data with the same ``TrainingArguments`` (float32, dropout 0.1, clipping
at 1.0). Figures per arm (median over rounds): ``wall_s``, from the first process's start to the last one's end
(interpreter, imports, model building included); ``train_s``, the ``Trainer.train`` calls (side by side: the
slowest process's); ``seed_steps_per_s``, K × optimizer steps / ``train_s``; and the speed-up of ``batched`` over
each other arm, round by round.

    HF_HUB_OFFLINE=1 PYTHONPATH=. nice -n 10 python benchmarks/batched_seeds.py --rounds 3
    HF_HUB_OFFLINE=1 PYTHONPATH=. nice -n 10 python benchmarks/batched_seeds.py --rounds 3 --threads 1 \\
        --output batched_seeds_1thread
    HF_HUB_OFFLINE=1 PYTHONPATH=. nice -n 10 python benchmarks/batched_seeds.py --through loop --rounds 2 \\
        --output batched_seeds_loop
    # -> benchmarks/results/<machine kind>/batched_seeds.json
"""

from __future__ import annotations

import argparse
import json
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


ARMS = ("batched", "sequential", "side_by_side")
VOCAB = 200  # token ids 5..VOCAB-1 (0..4: BERT's special tokens)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--arms", nargs="+", default=list(ARMS), choices=ARMS)
    parser.add_argument("--task", default="seq", choices=("seq", "token"))
    parser.add_argument(
        "--through", default="core", choices=("core", "loop"), help="the training functions, or bioptimus blurb-task"
    )
    parser.add_argument("--rows", type=int, default=256, help="training rows (synthetic token ids)")
    parser.add_argument("--max_length", type=int, default=32, help="longest row, in tokens")
    parser.add_argument("--batch_size", type=int, default=16)
    parser.add_argument("--epochs", type=float, default=2)
    parser.add_argument("--hidden_size", type=int, default=64)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--attn_implementation", default="sdpa", choices=("sdpa", "eager"))
    parser.add_argument(
        "--threads", type=int, default=None, help="torch threads of a one-process arm (default: the cores available)"
    )
    parser.add_argument("--output", default="batched_seeds", help=output_help("batched_seeds"))
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)  # internal: one arm's process
    parser.add_argument("--work_dir", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.through == "loop" and args.task != "seq":
        parser.error("--through loop: only --task seq (bioptimus blurb-task's relation extraction)")
    return args


def _config(args, num_labels: int):
    from transformers import BertConfig

    return BertConfig(
        vocab_size=VOCAB,
        hidden_size=args.hidden_size,
        num_hidden_layers=args.layers,
        num_attention_heads=max(1, args.hidden_size // 32),
        intermediate_size=4 * args.hidden_size,
        max_position_embeddings=max(64, args.max_length),
        num_labels=num_labels,
        attn_implementation=args.attn_implementation,
    )


def _rows(args) -> list[list[int]]:
    """The benchmark's token ids, row by row (``[CLS] ... [SEP]``), the same in every process."""
    import torch

    generator = torch.Generator().manual_seed(0)
    rows = []
    for _ in range(args.rows):
        length = int(torch.randint(4, args.max_length - 1, (1,), generator=generator))
        rows.append([2, *(int(i) for i in torch.randint(5, VOCAB, (length,), generator=generator)), 3])
    return rows


def _task(args, work_dir: str):
    """(model_init, dataset, collator) of the benchmark's task, from the encoder and vocabulary in ``work_dir``."""
    import datasets
    from transformers import (
        BertForSequenceClassification,
        BertForTokenClassification,
        BertTokenizerFast,
        DataCollatorForTokenClassification,
        DataCollatorWithPadding,
    )

    tokenizer = BertTokenizerFast(vocab_file=os.path.join(work_dir, "vocab.txt"))
    rows = []
    for ids in _rows(args):
        row = {"input_ids": ids, "attention_mask": [1] * len(ids)}
        row.update(
            {"label": ids[1] % 3} if args.task == "seq" else {"labels": [-100, *(i % 5 for i in ids[1:-1]), -100]}
        )
        rows.append(row)
    token = args.task == "token"
    model_class = BertForTokenClassification if token else BertForSequenceClassification
    collator = (DataCollatorForTokenClassification if token else DataCollatorWithPadding)(tokenizer)
    config = _config(args, 5 if token else 3)

    def model_init(seed):
        return model_class.from_pretrained(os.path.join(work_dir, "encoder"), config=config)

    return model_init, datasets.Dataset.from_list(rows), collator


def _training_args(args, output_dir: str):
    from transformers import TrainingArguments

    return TrainingArguments(
        output_dir=output_dir,
        per_device_train_batch_size=args.batch_size,
        num_train_epochs=args.epochs,
        learning_rate=5e-5,
        weight_decay=0.01,
        warmup_steps=0.1,  # a fraction of the steps
        max_grad_norm=1.0,
        save_strategy="no",
        logging_strategy="no",
        report_to=[],
        disable_tqdm=True,
        use_cpu=True,
    )


def worker(args) -> dict:
    """One arm's process: trains ``args.seeds`` as ``args.worker`` says; prints its timings as JSON."""
    import torch
    from transformers import Trainer

    from bioptimus_hf.finetuning import batched_seeds

    if os.environ.get("BENCH_THREADS"):
        torch.set_num_threads(int(os.environ["BENCH_THREADS"]))
    train_s: list[float] = []
    steps: list[int] = []
    original = Trainer.train

    def timed(self, *a, **k):
        start = time.perf_counter()
        output = original(self, *a, **k)
        train_s.append(time.perf_counter() - start)
        steps.append(self.state.global_step)
        return output

    Trainer.train = timed
    if args.through == "loop":
        report = _loop(args)
    else:
        model_init, dataset, collator = _task(args, args.work_dir)
        training_args = _training_args(args, os.path.join(args.work_dir, f"out_{os.getpid()}"))
        batched = args.worker == "batched"
        train = batched_seeds.train_seeds_batched if batched else batched_seeds.train_seeds_separately
        trained = train(args.seeds, model_init, training_args, dataset, collator)
        report = {"batched": trained is not None and batched, "train_losses": [t.train_loss for t in trained or []]}
    return {**report, "train_s": sum(train_s), "steps": steps, "threads": torch.get_num_threads()}


def _loop(args) -> dict:
    """``bioptimus blurb-task`` over ``args.seeds`` (``--batched_seeds true`` in the batched arm): whether the seeds
    trained batched, each seed's training loss and test score, from its seed file."""
    from bioptimus_hf.commands import blurb_task

    output_dir = os.path.join(args.work_dir, f"loop_{os.getpid()}")
    argv = ["--model_name_or_path", os.path.join(args.work_dir, "encoder"), "--output_dir", output_dir]
    argv += ["--data_dir", os.path.join(args.work_dir, "data"), "--seeds", *map(str, args.seeds)]
    argv += ["--batched_seeds", "true" if args.worker == "batched" else "false"]
    argv += ["--per_device_train_batch_size", str(args.batch_size), "--num_train_epochs", str(args.epochs)]
    argv += ["--max_seq_length", str(args.max_length), "--learning_rate", "5e-5", "--weight_decay", "0.01"]
    argv += [
        "--warmup_steps",
        "0.1",
        "--max_grad_norm",
        "1.0",
        "--save_model",
        "false",
        "--bf16_if_supported",
        "false",
    ]
    argv += ["--report_to", "none", "--disable_tqdm", "true", "--use_cpu", "true", "--logging_strategy", "no"]
    blurb_task.run(argv)
    records = []
    for seed in args.seeds:
        with open(os.path.join(output_dir, f"seed_{seed}", "seed_results.json"), encoding="utf-8") as handle:
            records.append(json.load(handle))
    return {
        "batched": all(record["run_info"]["batched_seeds"] for record in records),
        "train_losses": [record["run"]["train_loss"] for record in records],
        "test_scores": [record["run"]["test_score"] for record in records],
    }


def _launch(args, arm: str, seeds: list[int], threads: int | None) -> subprocess.Popen:
    env = dict(os.environ, HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [ROOT, env.get("PYTHONPATH")]))
    if threads:
        env["BENCH_THREADS"] = env["OMP_NUM_THREADS"] = str(threads)
    argv = [sys.executable, os.path.abspath(__file__), "--worker", arm, "--work_dir", args.work_dir]
    argv += ["--seeds", *map(str, seeds), "--task", args.task, "--rows", str(args.rows)]
    argv += ["--max_length", str(args.max_length), "--batch_size", str(args.batch_size), "--epochs", str(args.epochs)]
    argv += ["--hidden_size", str(args.hidden_size), "--layers", str(args.layers)]
    argv += ["--attn_implementation", args.attn_implementation, "--through", args.through]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, text=True)


def run_arm(args, arm: str) -> dict:
    """One arm once, in fresh processes: wall and training seconds, optimizer steps, seed-steps per second."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    start = time.perf_counter()
    threads = args.threads or cores
    if arm == "side_by_side":
        processes = [_launch(args, "sequential", [seed], max(1, threads // len(args.seeds))) for seed in args.seeds]
    else:
        processes = [_launch(args, arm, args.seeds, threads)]
    reports = []
    for process in processes:
        out, _ = process.communicate()
        if process.returncode != 0:
            raise SystemExit(f"error: the {arm} arm's process exited with status {process.returncode}")
        reports.append(json.loads(out.strip().splitlines()[-1]))
    wall = time.perf_counter() - start
    train_s = max(report["train_s"] for report in reports)
    seed_steps = sum(sum(report["steps"]) * (len(args.seeds) if report["batched"] else 1) for report in reports)
    return {
        "arm": arm,
        "wall_s": wall,
        "train_s": train_s,
        "seed_steps": seed_steps,
        "seed_steps_per_s": seed_steps / train_s,
        "processes": len(processes),
        "threads_per_process": reports[0]["threads"],
        "batched": any(report["batched"] for report in reports),
        "train_losses": [loss for report in reports for loss in report["train_losses"]],
        "test_scores": [score for report in reports for score in report.get("test_scores", [])],
    }


def _write_base(args) -> None:
    import torch
    from transformers import BertModel

    words = [f"w{i}" for i in range(VOCAB - 5)]
    with open(os.path.join(args.work_dir, "vocab.txt"), "w", encoding="utf-8") as handle:
        handle.write("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]))
    torch.manual_seed(0)
    BertModel(_config(args, 3)).save_pretrained(os.path.join(args.work_dir, "encoder"))
    if args.through == "loop":
        _write_loop_data(args, words)


def _write_loop_data(args, words: list[str]) -> None:
    """The encoder's tokenizer, and the rows as a relation-extraction set (``bioptimus blurb-task``'s data): the
    training rows, and the first 64 again as dev and test."""
    from transformers import BertTokenizerFast

    BertTokenizerFast(vocab_file=os.path.join(args.work_dir, "vocab.txt")).save_pretrained(
        os.path.join(args.work_dir, "encoder")
    )
    rows = [
        {"id": str(i), "sentence": " ".join(words[t - 5] for t in ids[1:-1]), "label": str(ids[1] % 3)}
        for i, ids in enumerate(_rows(args))
    ]
    os.makedirs(os.path.join(args.work_dir, "data"), exist_ok=True)
    for split, chosen in (("train", rows), ("dev", rows[:64]), ("test", rows[:64])):
        with open(os.path.join(args.work_dir, "data", f"{split}.jsonl"), "w", encoding="utf-8") as handle:
            handle.writelines(json.dumps(row) + "\n" for row in chosen)


def summarise(args, runs: list[dict]) -> dict:
    """Per arm the medians over rounds; the batched arm's speed-up over each other arm, round by round."""
    figures: dict = {}
    for arm in args.arms:
        mine = [run for run in runs if run["arm"] == arm]
        figures[arm] = {
            key: round(statistics.median(run[key] for run in mine), 3)
            for key in ("wall_s", "train_s", "seed_steps_per_s")
        }
    if "batched" in args.arms:
        batched = [run for run in runs if run["arm"] == "batched"]
        for arm in (a for a in args.arms if a != "batched"):
            others = [run for run in runs if run["arm"] == arm]
            figures[f"batched_vs_{arm}"] = {
                key: [round(o[key] / b[key], 2) for b, o in zip(batched, others)] for key in ("wall_s", "train_s")
            }
    return figures


def main(argv=None) -> None:
    args = parse_args(argv)
    if args.worker:
        print(json.dumps(worker(args)))
        return
    target = ResultTarget(args.output)
    runs = []
    with tempfile.TemporaryDirectory() as work_dir:
        args.work_dir = work_dir
        _write_base(args)
        for round_index in range(args.rounds):
            shift = round_index % len(args.arms)
            for arm in args.arms[shift:] + args.arms[:shift]:
                run = run_arm(args, arm)
                run["round"] = round_index
                print(json.dumps({k: round(v, 3) if isinstance(v, float) else v for k, v in run.items()}), flush=True)
                runs.append(run)
    settings = {k: v for k, v in vars(args).items() if k not in ("worker", "work_dir", "output")}
    target.write(summarise(args, runs), detail={"settings": settings, "runs": runs})


if __name__ == "__main__":
    main()
