"""The flags of a NER run (``bioptimus ner``), the one place each is set: the model (:class:`NerModelArguments`),
the data, tagging scheme and windows (:class:`NerDataArguments`), and every fine-tuning run's stabilisation and seeds
(:class:`~bioptimus_hf.finetuning.finetuning_config.StabilisationArguments`). Light imports only: a command imports
this module to print its ``--help``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from transformers import TrainingArguments

from ..finetuning.finetuning_config import FineTuningModelArguments, StabilisationArguments
from ..utils.bulk_dropout import BULK_DROPOUT_HELP


@dataclass
class NerModelArguments(FineTuningModelArguments):
    """``bioptimus ner``'s model flags: every fine-tuning run's and how dropout masks are drawn."""

    bulk_dropout: bool = field(
        default=False,
        metadata={
            "help": BULK_DROPOUT_HELP + " Default: off here, so a seed's fine-tuning follows torch's stream as "
            "transformers' own scripts do: the gain is small (1.06-1.08x on 2 cores, "
            "benchmarks/ner_training_dropout.py)."
        },
    )


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


# The arguments of a NER run, in the order ``bioptimus ner`` parses them and :func:`~.run.fine_tune_ner` takes them.
NER_ARGUMENT_TYPES = (NerModelArguments, NerDataArguments, StabilisationArguments, TrainingArguments)
