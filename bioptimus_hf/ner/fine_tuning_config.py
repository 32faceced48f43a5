"""The flags of a fine-tuning run (``bioptimus ner``, ``run_blurb.py``): the one place each is set.

* :class:`FineTuningModelArguments`: the model and precision flags, ``run_blurb.py``'s model dataclass as it stands
  and the base of :class:`NerModelArguments` (``bioptimus ner``'s, which adds ``--bulk_dropout``). The precision flags
  are read by :func:`bioptimus_hf.utils.hardware.resolve_bf16`, which owns what they do.
* :class:`NerDataArguments`: a NER run's data (a CoNLL directory or a ``datasets`` dataset), its tagging scheme and
  windows.
* :class:`StabilisationArguments`: Tinn et al.'s stabilisation and the seeds (:mod:`.stabilisation` applies them).

Light imports only: a command imports this module to print its ``--help``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from transformers import TrainingArguments

from ..releases.lineage import base_model_hub_id_field
from ..utils.bulk_dropout import BULK_DROPOUT_HELP


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


@dataclass
class NerModelArguments(FineTuningModelArguments):
    """``bioptimus ner``'s model flags: :class:`FineTuningModelArguments`, how dropout masks are drawn and the base
    model's Hub id for the cards."""

    bulk_dropout: bool = field(
        default=False,
        metadata={
            "help": BULK_DROPOUT_HELP + " Default: off here, so a seed's fine-tuning follows torch's stream as "
            "transformers' own scripts do: the gain is small (1.06-1.08x on 2 cores, "
            "benchmarks/ner_training_dropout.py)."
        },
    )
    base_model_hub_id: str | None = base_model_hub_id_field()


@dataclass
class NerDataArguments:
    """A NER run's data, tagging scheme and windows."""

    data_dir: str | None = field(
        default=None, metadata={"help": "Directory with train.tsv, devel.tsv and test.tsv (token<TAB>label)."}
    )
    dataset_name: str | None = field(
        default=None, metadata={"help": "A `datasets` name (or a save_to_disk directory) instead of data_dir."}
    )
    dataset_config_name: str | None = field(default=None, metadata={"help": "The `datasets` configuration."})
    text_column_name: str = field(default="tokens", metadata={"help": "Column of word lists (datasets only)."})
    label_column_name: str = field(default="ner_tags", metadata={"help": "Column of tags (datasets only)."})
    tagging_scheme: str = field(
        default="BIO", metadata={"help": "Training tagging scheme: IO, BIO (IOB2) or BIOUL. Evaluation is span-level."}
    )
    max_seq_length: int = field(
        default=512, metadata={"help": "Window size in sub-tokens; longer sentences are split, never truncated."}
    )
    window_stride: int = field(
        default=32, metadata={"help": "Maximum overlap, in sub-tokens, of consecutive windows."}
    )
    label_all_tokens: bool = field(
        default=False, metadata={"help": "Label every sub-token (default: only the first sub-token of each word)."}
    )
    strict_iob: bool = field(
        default=False, metadata={"help": "Make `I-` without `B-` an error instead of starting a new entity."}
    )
    max_train_samples: int | None = field(default=None, metadata={"help": "Use only the first N training sentences."})
    max_eval_samples: int | None = field(default=None, metadata={"help": "Use only the first N devel sentences."})
    max_test_samples: int | None = field(default=None, metadata={"help": "Use only the first N test sentences."})


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


# The arguments of a NER run, in the order ``bioptimus ner`` parses them and :func:`~.run.fine_tune_ner` takes them.
NER_ARGUMENT_TYPES = (NerModelArguments, NerDataArguments, StabilisationArguments, TrainingArguments)
