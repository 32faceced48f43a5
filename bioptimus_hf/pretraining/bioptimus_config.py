"""The settings of a BIOptimus pre-training run: :class:`BioptimusConfig` (``TrainingArguments`` with the curriculum,
initialisation, corpus and release settings, the config of :class:`~.bioptimus_trainer.BioptimusTrainer`) and
:class:`PretrainingModelArguments` (the model and tokenizer a run starts from).

As TRL's ``SFTConfig`` extends ``TrainingArguments`` for ``SFTTrainer``, :class:`BioptimusConfig` extends it with
the fields of the library's argument dataclasses, each defined once in its own module:

* :class:`~bioptimus_hf.vocabulary.init_config.EmbeddingInitArguments`: how new-token rows are initialised;
* :class:`~.data_config.PretrainingDataArguments`: the corpus, its held-out share, block length and packing;
* :class:`~.curriculum_config.CurriculumArguments` and :class:`~.curriculum_config.LexicalWarmupArguments`: the
  phases, their steps and masking, and the lexical warm-up before them;
* :class:`~bioptimus_hf.releases.release_config.ReleaseArguments`: replacing a run's releases, the Hub layout;

and owns the fields that say how the masked LM trains (masked-only head, static shapes, dropout masks, the CPU
allocator), the architecture of a run from scratch and the base model's Hub id. ``bioptimus pretrain`` parses
``(PretrainingModelArguments, BioptimusConfig)``; every flag keeps its name, meaning and default.

    config = BioptimusConfig(output_dir="out", max_steps=1000, max_seq_length=128, init_strategy="continued")

This module imports dataclasses and ``TrainingArguments`` only (and the light argument modules above), so that a
command can import it to print its ``--help`` without loading ``datasets`` or a model.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from transformers import TrainingArguments

from ..releases.lineage import base_model_hub_id_field
from ..releases.release_config import ReleaseArguments
from ..utils.bulk_dropout import BULK_DROPOUT_HELP
from ..vocabulary.init_config import EmbeddingInitArguments
from .curriculum_config import CurriculumArguments, LexicalWarmupArguments
from .data_config import PretrainingDataArguments


@dataclass
class PretrainingModelArguments:
    """The model and tokenizer a pre-training run starts from (``BioptimusTrainer``'s ``model`` and
    ``processing_class``)."""

    model_name_or_path: str | None = field(
        default=None, metadata={"help": "Base model (Hub id or directory). Required unless --init_strategy scratch."}
    )
    tokenizer_name: str | None = field(
        default=None,
        metadata={"help": "Tokenizer of the run: the new (biomedical) vocabulary for every strategy but continued."},
    )


@dataclass(repr=False)  # TrainingArguments' own repr, which masks hub_token
class BioptimusConfig(
    TrainingArguments,
    ReleaseArguments,
    LexicalWarmupArguments,
    CurriculumArguments,
    PretrainingDataArguments,
    EmbeddingInitArguments,
):
    """``TrainingArguments`` of a curriculum run: every field of the argument dataclasses it extends (see the module
    docstring), and the masked LM's training switches below. The checks of each run in the order
    ``bioptimus pretrain`` has always parsed them: initialisation, corpus, lexical warm-up, then the Trainer's own."""

    config_name: str | None = field(default=None, metadata={"help": "Architecture for --init_strategy scratch."})
    base_model_hub_id: str | None = base_model_hub_id_field()
    masked_only_prediction: bool = field(
        default=True,
        metadata={
            "help": "Run the MLM head only at masked positions (exact loss and gradients; BERT, RoBERTa, "
            "XLM-RoBERTa, DistilBERT, ELECTRA, DeBERTa-v2, ModernBERT and any masked LM whose head "
            "passes the same checks; others keep the standard head with a warning). See docs/speed.md."
        },
    )
    static_masked_positions: bool | None = field(
        default=None,
        metadata={
            "help": "Gather the masked positions padded to a fixed size per phase (static shapes: "
            "--torch_compile compiles once per phase, no host sync on a GPU; nothing is dropped). "
            "Default: on with --torch_compile. Needs masked-only prediction. See docs/speed.md."
        },
    )
    bulk_dropout: bool | None = field(
        default=None,
        metadata={"help": BULK_DROPOUT_HELP + " Default: on, except on Intel CPUs, where torch draws them with MKL."},
    )
    retain_freed_memory: bool = field(
        default=True,
        metadata={
            "help": "On a CPU with glibc, keep freed memory in the process between steps (mallopt) instead "
            "of mapping and page-faulting it again every step. See docs/speed.md."
        },
    )

    def __post_init__(self):
        EmbeddingInitArguments.__post_init__(self)
        PretrainingDataArguments.__post_init__(self)
        LexicalWarmupArguments.__post_init__(self)
        TrainingArguments.__post_init__(self)


# The arguments of a pre-training run, in the order ``bioptimus pretrain`` parses them and
# :func:`~.run.run_pretraining` takes them.
PRETRAINING_ARGUMENT_TYPES = (PretrainingModelArguments, BioptimusConfig)
