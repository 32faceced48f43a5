"""Every setting of a BIOptimus pre-training run, defined once: :class:`BioptimusConfig`, ``TrainingArguments`` with
the curriculum run's fields (as TRL's ``SFTConfig`` is ``SFTTrainer``'s), and :class:`PretrainingModelArguments`.

    config = BioptimusConfig(output_dir="out", max_steps=1000, max_seq_length=128, init_strategy="continued")

``help_groups`` names each field's ``--help`` group; each group's checks are one function of ``__post_init__``. A
command that takes some groups parses the dataclass :func:`settings_group` makes of their fields. Light to import.
"""

from __future__ import annotations

import typing
from dataclasses import dataclass, field, fields, make_dataclass
from typing import Any, ClassVar

from transformers import TrainingArguments

from ..releases.lineage import base_model_hub_id_field
from ..releases.naming import normalise_version
from ..releases.publish_config import MODES
from ..utils.bulk_dropout import BULK_DROPOUT_HELP
from ..utils.corpus_reader import DEFAULT_MAX_UNDECODABLE_FRACTION
from ..utils.hardware import PRECISION_CHOICES
from ..vocabulary.init_config import INIT_STRATEGIES
from .phases import Curriculum


GROUPS = ("model", "initialisation", "corpus", "curriculum", "lexical warm-up", "releases", "masked LM")
# Where each batch's masking randomness comes from (the collator's docstring says how each works); the first is the
# default.
MASKING_STREAMS = ("keyed", "sequential")
DEFAULT_MASKING_STREAM = MASKING_STREAMS[0]
ALL_PHASES = "all"  # --single_phase all: every phase of the curriculum
# File suffixes and the `datasets` builder that reads them (".gz" means compressed text; ".parquet": the shards of a
# prepared corpus, whose directory is given as itself).
CORPUS_BUILDERS = {
    ".txt": "text",
    ".text": "text",
    ".gz": "text",
    ".json": "json",
    ".jsonl": "json",
    ".csv": "csv",
    ".parquet": "parquet",
}
# The shuffle buffer of a streaming run whose corpus is not a prepared one with shuffled rows.
DEFAULT_SHUFFLE_BUFFER_SIZE = 10_000


class FieldGroup:
    """The field maker of one help group (``name: type = _corpus(default, "help", choices=[...])``); it keeps the
    fields it made, so the dataclass can name each field's group in ``help_groups`` once it is built."""

    def __init__(self, title: str) -> None:
        self.title, self.made = title, []

    def __call__(self, default: Any = None, help: str | None = None, **metadata: Any) -> Any:
        made = field(default=default, metadata={**({"help": help} if help else {}), **metadata})
        self.made.append(made)
        return made


FIELD_GROUPS = tuple(map(FieldGroup, GROUPS))
_model, _initialisation, _corpus, _curriculum, _warmup, _releases, _masked_lm = FIELD_GROUPS


@dataclass
class PretrainingModelArguments:
    """The model and tokenizer a pre-training run starts from (``BioptimusTrainer``'s ``model`` and
    ``processing_class``)."""

    model_name_or_path: str | None = _model(
        None, "Base model (Hub id or directory). Required unless --init_strategy scratch."
    )
    tokenizer_name: str | None = _model(
        None, "Tokenizer of the run: the new (biomedical) vocabulary for every strategy but continued."
    )


@dataclass(repr=False)  # TrainingArguments' own repr, which masks hub_token
class BioptimusConfig(TrainingArguments):
    """``TrainingArguments`` of a curriculum run, with the settings below (see the module docstring)."""

    # How the model that training starts from is built (the paper's Table 1).
    init_strategy: str = _initialisation(
        "continued",
        "How to start: continued (base model and vocabulary), scratch (random weights, new vocabulary), "
        "random / averaged / contextualized / mean_cov / token_distillation / focus (base weights; new-token "
        "rows random, the mean of base sub-token embeddings, distilled from the base model in corpus contexts, "
        "drawn around the mean of the base embeddings, learnt by token distillation, or FOCUS combinations of "
        "shared rows; focus needs the [focus] extra).",
    )
    init_corpus_files: list[str] | None = _initialisation(
        None,
        "Corpus searched for contexts of new tokens (contextualized, token_distillation; the fastText corpus of "
        "focus; default: the training text files, or with --max_train_samples N the first N training rows).",
    )
    max_contexts_per_token: int = _initialisation(20, "Contexts sampled per new token (the paper: 20).")
    init_norm_match: bool = _initialisation(
        True,
        "Rescale contextualized rows to the norm statistics of the base input embeddings (last-layer states are "
        "~5x larger, see docs/vocabulary_and_init.md); false = the paper's raw vectors.",
    )
    init_batch_size: int = _initialisation(32, "Sentences per base-model forward pass (contextualized).")
    init_device: str | None = _initialisation(None, "Device of those forward passes (default: cuda if any).")
    init_precision: str = _initialisation(
        "auto",
        "Precision of those forward passes: auto (bf16 autocast where the device multiplies bf16 natively: CUDA "
        "with bf16, CPU with AMX/AVX-512 BF16; float32 elsewhere), bf16, float32. The averaged vectors are "
        "accumulated in float32 either way.",
        choices=list(PRECISION_CHOICES),
    )
    init_num_threads: int | None = _initialisation(None, "Threads of the context search (default: all).")
    max_context_chars: int = _initialisation(1000, "Longer sentences are cut into chunks (code points).")
    max_context_tokens: int | None = _initialisation(
        None, "Longest base-token window encoded (default: the base model's maximum)."
    )
    distill_steps: int = _initialisation(
        20, "token_distillation: gradient steps per new token (each over all its sampled contexts)."
    )
    distill_learning_rate: float = _initialisation(1e-2, "token_distillation: Adam learning rate of the new rows.")
    distill_layer: int = _initialisation(
        -1, "token_distillation: hidden-state layer matched by the MSE (0 = embeddings output, -1 = last layer)."
    )
    focus_fasttext_epochs: int = _initialisation(3, "focus: epochs of the auxiliary fastText model.")
    focus_fasttext_dim: int = _initialisation(100, "focus: dimension of the auxiliary fastText model.")
    focus_fasttext_min_count: int = _initialisation(
        10, "focus: rarer new tokens get no fastText vector and fall back to averaged."
    )
    cache_dir: str | None = _initialisation(None, "Where Hub downloads are cached.")
    model_revision: str = _initialisation("main", "Revision (branch, tag or commit) of the base model.")
    config_name: str | None = _initialisation(
        None, "Architecture for --init_strategy scratch (default: the base model's)."
    )

    # The corpus, its held-out share, block length and packing.
    dataset_name: str | None = _corpus(None, "A `datasets` dataset name.")
    dataset_config_name: str | None = _corpus(None, "Its configuration.")
    train_file: list[str] | None = _corpus(
        None,
        "Local corpus file(s): text (.txt, .gz; one document or sentence a line), JSON lines (.json/.jsonl) or "
        "CSV (.csv) with a --text_column_name column, Parquet (.parquet), or the directory of a prepared corpus "
        "(bioptimus prepare-corpus). One kind per run.",
    )
    validation_file: str | None = _corpus(None, "Held-out file, same kind as --train_file.")
    text_column_name: str = _corpus("text", "Column holding the text (json/csv/datasets).")
    validation_split_percentage: float = _corpus(
        5, "Held-out share of the training lines when there is no validation file (0 = none)."
    )
    max_train_samples: int | None = _corpus(
        None,
        "Train on the first N sequences only (packed blocks, or lines with --line_by_line; not with --streaming); "
        "without --init_corpus_files, the contexts of new tokens come from the first N training rows too.",
    )
    max_eval_samples: int | None = _corpus(None, "Evaluate on the first N held-out sequences only.")
    max_seq_length: int | None = _corpus(
        128, "Tokens per sequence (a packed block, or a line's chunk); at most what the model and tokenizer take."
    )
    line_by_line: bool = _corpus(False, "One sequence per line (long lines chunked) instead of packed blocks.")
    preprocessing_num_workers: int | None = _corpus(None, "Processes of the tokenization (datasets.map num_proc).")
    overwrite_cache: bool = _corpus(False, "Tokenize again instead of reading datasets' cache.")
    streaming: bool = _corpus(False, "Stream the corpus (never pre-tokenised whole).")
    shuffle_buffer_size: int | None = _corpus(
        None,
        "Shuffle buffer with --streaming; 0: none, the files (shards) read in a seeded order. Default: 0 for a "
        f"prepared corpus whose rows were shuffled when written, else {DEFAULT_SHUFFLE_BUFFER_SIZE}. A run with a "
        "buffer resumes with the buffer refilled (docs/pubmed.md).",
    )
    streaming_resume: str = _corpus(
        "state",
        "How a --streaming run resumes: state (the data loader's position saved in each checkpoint: seconds, "
        "whatever the step) or replay (transformers' skip: every batch trained is read again).",
        choices=["state", "replay"],
    )
    max_undecodable_fraction: float = _corpus(
        DEFAULT_MAX_UNDECODABLE_FRACTION,
        "Refuse a text file whose share of lines with bytes that are not UTF-8 is above this (such lines are "
        "otherwise kept with U+FFFD and counted); 1 disables the check.",
    )

    # The phases, their steps and masking.
    curriculum: str = _curriculum(
        "bioptimus",
        "'bioptimus' (the paper's four phases) or a json/yaml file with a list of phases ({version, masking_unit, "
        "masking_rate, corruption[, steps]}).",
    )
    phase_steps: list[float] | None = _curriculum(
        None, "Steps per phase: counts (100 200 ...) or fractions of max_steps (default 0.1 0.2 0.3 0.4)."
    )
    single_phase: str | None = _curriculum(
        None,
        "Train the whole run in this one phase of the curriculum (e.g. 0.1: token masking at 15%%) instead of "
        "walking through all of them ('all', the same as unset); --phase_steps is then ignored.",
    )
    mask_seed: int | None = _curriculum(None, "Masking seed (default: --seed).")
    masking_stream: str = _curriculum(
        DEFAULT_MASKING_STREAM,
        "Where each batch's masks come from: 'keyed' (default), a generator seeded by the masking seed, the "
        "phase, the epoch and the batch's token ids, so the masks do not depend on the DataLoader workers and a "
        "resumed run masks as the unbroken run did; 'sequential', one stream per rank and worker in collation "
        "order (to reproduce a run masked so).",
        choices=list(MASKING_STREAMS),
    )
    allow_schedule_change: bool = _curriculum(
        False,
        "Resume from a checkpoint trained under another schedule (max_steps, curriculum or phase steps): "
        "continue under the new one from the checkpoint's step; releases record the change.",
    )

    # A stage before the curriculum that trains the lexical parameters alone (docs/curriculum.md).
    lexical_warmup_steps: float | None = _warmup(
        None,
        "A lexical warm-up before the curriculum, as a number of steps (500) or a fraction of --max_steps (0.1): "
        "only the lexical parameters train (input embeddings, the MLM head, the embedding LayerNorm), the rest "
        "of the model frozen, on the first phase's masking; the curriculum then runs in the remaining steps "
        "(--phase_steps fractions are fractions of those). Default: none. See docs/curriculum.md.",
    )
    lexical_warmup_learning_rate: float | None = _warmup(
        None,
        "Peak learning rate of the lexical warm-up (default: --learning_rate), under the run's "
        "--lr_scheduler_type and --warmup_steps ratio over the warm-up's own steps; the curriculum after it has "
        "the same schedule over its steps, at --learning_rate.",
    )
    lexical_warmup_release: str | None = _warmup(
        None,
        "Also release the model at the end of the lexical warm-up, as this version (e.g. 0.0; not one of the "
        "curriculum's): the start model with only its lexical parameters trained. Default: none (the "
        "warm-up's end is not a release).",
    )

    # The base model's Hub id in the releases' records (with PretrainingModelArguments in the help).
    base_model_hub_id: str | None = base_model_hub_id_field()

    # Replacing a run's releases; their Hub layout.
    overwrite_output_dir: bool = _releases(
        False, "Write into an output_dir that holds a run without checkpoints, replacing its releases."
    )
    releases_hub_mode: str = _releases(
        "branches",
        "With --push_to_hub: 'branches' (one repository, a branch and tag v0.k per version, main = the latest) "
        "or 'repos' (a repository <hub_model_id>-v0.k per version).",
        choices=list(MODES),
    )

    # How the masked LM trains.
    masked_only_prediction: bool = _masked_lm(
        True,
        "Run the MLM head only at masked positions (exact loss and gradients; BERT, RoBERTa, XLM-RoBERTa, "
        "DistilBERT, ELECTRA, DeBERTa-v2, ModernBERT and any masked LM whose head passes the same checks; others "
        "keep the standard head with a warning). See docs/speed.md.",
    )
    static_masked_positions: bool | None = _masked_lm(
        None,
        "Gather the masked positions padded to a fixed size per phase (static shapes: --torch_compile compiles "
        "once per phase, no host sync on a GPU; nothing is dropped). Default: on with --torch_compile. Needs "
        "masked-only prediction. See docs/speed.md.",
    )
    bulk_dropout: bool | None = _masked_lm(
        None, BULK_DROPOUT_HELP + " Default: on, except on Intel CPUs, where torch draws them with MKL."
    )
    retain_freed_memory: bool = _masked_lm(
        True,
        "On a CPU with glibc, keep freed memory in the process between steps (mallopt) instead of mapping and "
        "page-faulting it again every step. See docs/speed.md.",
    )

    # Field name -> its group's title in --help (utils/config_mapping.py reads it; plain HfArgumentParser ignores it).
    help_groups: ClassVar[dict[str, str]] = {}

    def __post_init__(self):
        check_initialisation(self)
        check_corpus(self)
        check_lexical_warmup(self)
        super().__post_init__()


BioptimusConfig.help_groups = {made.name: group.title for group in FIELD_GROUPS for made in group.made}
BioptimusConfig.help_groups["base_model_hub_id"] = "model"


def check_initialisation(args: Any) -> None:
    """The initialisation settings' checks (ValueError naming the flag)."""
    if args.init_strategy not in INIT_STRATEGIES:
        raise ValueError(f"--init_strategy {args.init_strategy!r}: expected one of {list(INIT_STRATEGIES)}")
    if args.max_contexts_per_token < 1:
        raise ValueError(f"--max_contexts_per_token must be >= 1, got {args.max_contexts_per_token}")
    if args.init_batch_size < 1:
        raise ValueError(f"--init_batch_size must be >= 1, got {args.init_batch_size}")
    if args.init_precision not in PRECISION_CHOICES:
        raise ValueError(f"--init_precision {args.init_precision!r}: expected one of {list(PRECISION_CHOICES)}")
    if args.distill_steps < 1:
        raise ValueError(f"--distill_steps must be >= 1, got {args.distill_steps}")
    if args.distill_learning_rate <= 0:
        raise ValueError(f"--distill_learning_rate must be > 0, got {args.distill_learning_rate}")
    if args.max_context_chars < 1:
        raise ValueError(f"--max_context_chars must be >= 1, got {args.max_context_chars}")


def check_corpus(args: Any) -> None:
    """The corpus settings' checks (ValueError naming the flag)."""
    if not 0 <= args.validation_split_percentage < 100:
        raise ValueError("--validation_split_percentage must be in [0, 100)")
    if args.shuffle_buffer_size is not None and args.shuffle_buffer_size < 0:
        raise ValueError(f"--shuffle_buffer_size must be >= 0, got {args.shuffle_buffer_size}")
    if not 0 <= args.max_undecodable_fraction <= 1:
        raise ValueError("--max_undecodable_fraction must be in [0, 1]")


def check_lexical_warmup(args: Any) -> None:
    """The lexical warm-up settings' checks (ValueError naming the flag); the release's version normalised."""
    if args.lexical_warmup_learning_rate is not None and not args.lexical_warmup_learning_rate > 0:
        raise ValueError(f"--lexical_warmup_learning_rate {args.lexical_warmup_learning_rate}: must be > 0")
    if args.lexical_warmup_release is not None:
        if not args.lexical_warmup_steps:
            raise ValueError(
                f"--lexical_warmup_release {args.lexical_warmup_release}: there is no warm-up to release (give "
                "--lexical_warmup_steps)"
            )
        try:
            args.lexical_warmup_release = normalise_version(args.lexical_warmup_release)
        except ValueError as error:
            raise ValueError(f"--lexical_warmup_release: {error}") from None


def build_curriculum(args: Any, lexical_warmup_steps: float | int | None = None) -> Curriculum:
    """The :class:`~.phases.Curriculum` the curriculum settings ``args`` describe (a ``BioptimusConfig`` or a
    :class:`CurriculumArguments`), after ``lexical_warmup_steps`` of lexical warm-up (None: none). Raises
    ValueError naming the flag or file."""
    if args.single_phase not in (None, ALL_PHASES):
        return Curriculum.from_spec(args.curriculum, lexical_warmup_steps=lexical_warmup_steps).only(args.single_phase)
    return Curriculum.from_spec(args.curriculum, args.phase_steps, lexical_warmup_steps=lexical_warmup_steps)


GROUP_CHECKS = {
    "initialisation": check_initialisation,
    "corpus": check_corpus,
    "lexical warm-up": check_lexical_warmup,
}


def settings_group(name: str, *groups: str, base: type | None = None, module: str = __name__) -> type:
    """A dataclass of :class:`BioptimusConfig`'s fields of ``groups`` (their names, types, defaults and help), whose
    ``__post_init__`` runs those groups' checks (then ``base``'s): the settings of a command that takes those groups
    only. With ``base`` (``TrainingArguments``), it extends it, keeping its repr (which masks ``hub_token``)."""
    hints = typing.get_type_hints(BioptimusConfig)
    specs = [
        (f.name, hints[f.name], field(default=f.default, metadata=f.metadata))
        for f in fields(BioptimusConfig)
        if BioptimusConfig.help_groups.get(f.name) in groups
    ]
    checks = [GROUP_CHECKS[group] for group in groups if group in GROUP_CHECKS]

    def __post_init__(self):
        for check in checks:
            check(self)
        if base is not None:
            base.__post_init__(self)

    namespace = {
        "__module__": module,
        "__doc__": f"``BioptimusConfig``'s {', '.join(groups)} settings.",
        "__post_init__": __post_init__,
        "help_groups": {name: BioptimusConfig.help_groups[name] for name, _, _ in specs},
    }
    return make_dataclass(name, specs, bases=(base,) if base else (), namespace=namespace, repr=base is None)


EmbeddingInitArguments = settings_group("EmbeddingInitArguments", "initialisation")
PretrainingDataArguments = settings_group("PretrainingDataArguments", "corpus")
CurriculumArguments = settings_group("CurriculumArguments", "curriculum")


def group_settings(config: BioptimusConfig, group_class: type) -> Any:
    """``config``'s settings of one group as ``group_class`` (one of the dataclasses above)."""
    return group_class(**{f.name: getattr(config, f.name) for f in fields(group_class)})


# The arguments of a pre-training run, in the order ``bioptimus pretrain`` parses them and
# :func:`~.run.run_pretraining` takes them.
PRETRAINING_ARGUMENT_TYPES = (PretrainingModelArguments, BioptimusConfig)
