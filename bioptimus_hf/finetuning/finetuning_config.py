"""The flags every fine-tuning run takes (``bioptimus ner``, ``bioptimus blurb-task``): the one place each is set.

* :class:`FineTuningModelArguments`: the model and precision flags, the base of ``bioptimus ner``'s
  (:class:`~bioptimus_hf.ner.fine_tuning_config.NerModelArguments`) and of BLURB's
  (:class:`~bioptimus_hf.blurb.blurb_config.BlurbModelArguments`). The precision flags are read by
  :func:`bioptimus_hf.utils.hardware.resolve_bf16`, which owns what they do; ``--batched_seeds`` by
  :func:`bioptimus_hf.utils.hardware.resolve_batched_seeds` (its default) and :mod:`.seed_loop`.
* :class:`StabilisationArguments`: Tinn et al.'s stabilisation and the seeds (:mod:`.stabilisation` applies them).

Light imports only: a command imports this module to print its ``--help``.
"""

from __future__ import annotations

from dataclasses import dataclass, field


BATCHED_SEEDS_HELP = (
    "Train the run's unfinished seeds together as one batched model (torch.func.vmap: each seed its own head, data "
    "order, dropout, clipping and optimizer state), then evaluate and save each seed as alone. Default: on where "
    "the run is one process on a CUDA device (one K-times larger step), off on a CPU (a tiny model gains little "
    "wall time there: benchmarks/results/cpu-emeraldrapids-avx512bf16/batched_seeds_loop.json; its seeds' "
    "dropout masks are not those of separate runs). A model or setting that cannot "
    "run batched trains the seeds one after another, saying why in one line."
)


@dataclass
class FineTuningModelArguments:
    model_name_or_path: str = field(metadata={"help": "Pretrained model directory or Hub id (e.g. a release dir)."})
    tokenizer_name: str | None = field(default=None, metadata={"help": "Tokenizer, if not the model's."})
    model_name: str | None = field(
        default=None,
        metadata={
            "help": "Name for results tables and, where the run writes one, the model-index (default: the path's "
            "basename)."
        },
    )
    ignore_mismatched_sizes: bool = field(
        default=False, metadata={"help": "Allow loading a checkpoint whose classification head has another label set."}
    )
    save_model: bool = field(default=True, metadata={"help": "Save each seed's fine-tuned model in seed_<s>/."})
    keep_checkpoints: bool = field(
        default=False,
        metadata={
            "help": "Keep the Trainer's checkpoint-* directories in seed_<s>/ after the seed's training. Default: "
            "removed then (they hold candidate models and optimizer state; a seed is never resumed from them)."
        },
    )
    bf16_if_supported: bool = field(
        default=True,
        metadata={
            "help": "Train and predict in bf16 (autocast) where the device computes it natively (CPU with AMX or "
            "AVX512-BF16, Ampere+ GPU), else in float32: safe on any machine. Default: true (false: float32)."
        },
    )
    allow_emulated_bf16: bool = field(
        default=False,
        metadata={
            "help": "Use bf16 even where the device only emulates it (same numerics, slower): to check results. "
            "Default: bf16 falls back to float32 there, with a warning."
        },
    )
    batched_seeds: bool | None = field(default=None, metadata={"help": BATCHED_SEEDS_HELP})


@dataclass
class StabilisationArguments:
    freeze_embeddings: bool = field(default=False, metadata={"help": "Freeze the embedding layer."})
    freeze_layers: int = field(
        default=0, metadata={"help": "Freeze the lowest N transformer layers (and embeddings)."}
    )
    layerwise_lr_decay: float = field(
        default=1.0, metadata={"help": "Layer-wise LR decay factor (1.0 = off): layer l learns at lr * decay^(L+1-l)."}
    )
    reinit_layers: int = field(
        default=0, metadata={"help": "Re-initialise the top K transformer layers (and pooler)."}
    )
    seeds: list[int] | None = field(
        default=None,
        metadata={"help": "Seeds, e.g. --seeds 1 2 3: one full fine-tune per seed (default: --seed)."},
    )

    def seed_list(self, default: int) -> list[int]:
        return list(self.seeds) if self.seeds else [default]
