"""The flags every fine-tuning run takes (``bioptimus ner``, ``bioptimus blurb-task``): the model and precision
(:class:`FineTuningModelArguments`; :func:`bioptimus_hf.utils.hardware.resolve_bf16` owns what the precision flags do)
and Tinn et al.'s stabilisation with the seeds (:class:`StabilisationArguments`, applied by :mod:`.stabilisation`).
Light imports only: a command imports this module to print its ``--help``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from ..releases.lineage import base_model_hub_id_field


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
    base_model_hub_id: str | None = base_model_hub_id_field()

    @property
    def name(self) -> str:
        """The model's name in tables and cards: ``--model_name``, else the path's basename."""
        return self.model_name or os.path.basename(os.path.normpath(self.model_name_or_path))


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
        metadata={
            "help": "Seeds, e.g. --seeds 1 2 3: one full fine-tune per seed (default: --seed; bioptimus blurb-task: "
            "the dataset's recipe, 1-10 for BIOSSES, PubMedQA and BioASQ, 1-5 for the others)."
        },
    )

    def seed_list(self, default: int) -> list[int]:
        return list(self.seeds) if self.seeds else [default]
