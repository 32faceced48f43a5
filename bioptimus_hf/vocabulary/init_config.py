"""The initialisation settings: one list of strategies and one arguments dataclass for every entry point.

``run_pretraining.py``, the ``bioptimus init-embeddings`` command and the library's
:func:`~bioptimus_hf.vocabulary.embedding_init.build_initialized_model` all take an
:class:`EmbeddingInitArguments`, so a default (say norm matching) cannot differ between them, and the
model card describes a strategy with the text defined here. :class:`StartModelArguments` say what a start model is
built from and where it is written (``bioptimus init-embeddings``, a study's shared start models).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..utils.hardware import PRECISION_CHOICES


@dataclass(frozen=True)
class InitStrategy:
    name: str
    description: str  # one line for model cards
    new_vocabulary: bool  # whether the run's tokenizer replaces the base vocabulary


_STRATEGY_LIST = (
    InitStrategy("continued", "continued pre-training of the base model with its own vocabulary", False),
    InitStrategy("scratch", "all weights randomly initialised (pre-training from scratch)", True),
    InitStrategy(
        "random",
        "base model weights; embeddings of new vocabulary tokens drawn at random like the base model's own "
        "initialisation",
        True,
    ),
    InitStrategy(
        "averaged",
        "base model weights; embeddings of new vocabulary tokens initialised as the average of the base model's "
        "sub-token embeddings",
        True,
    ),
    InitStrategy(
        "contextualized",
        "base model weights; embeddings of new vocabulary tokens distilled from the base model's contextual "
        "representations of the sub-tokens inside corpus contexts where the new token occurs (the BIOptimus "
        "contextualized weight distillation)",
        True,
    ),
    InitStrategy(
        "mean_cov",
        "base model weights; embeddings of new vocabulary tokens drawn from a normal with the mean and (shrunk) "
        "covariance of the base model's embeddings (transformers' mean_resizing)",
        True,
    ),
    InitStrategy(
        "token_distillation",
        "base model weights; embeddings of new vocabulary tokens learnt by token distillation (Dobler, Elliott & de "
        "Melo): starting from the sub-token average, each row is trained so that the frozen base model's hidden "
        "states over corpus contexts containing the new token match those over its original sub-tokens",
        True,
    ),
    InitStrategy(
        "focus",
        "base model weights; embeddings of new vocabulary tokens initialised by FOCUS (Dobler & de Melo, 2023): sparse "
        "combinations of shared tokens' embeddings weighted by similarity in fastText embeddings trained on the corpus",
        True,
    ),
)
INIT_STRATEGIES: dict[str, InitStrategy] = {s.name: s for s in _STRATEGY_LIST}
# Strategies that map rows of a base model onto a new vocabulary (the initializer's work).
ROW_STRATEGIES = tuple(name for name, s in INIT_STRATEGIES.items() if s.new_vocabulary and name != "scratch")


@dataclass
class EmbeddingInitArguments:
    """How the model that training starts from is built (the paper's Table 1)."""

    init_strategy: str = field(
        default="continued",
        metadata={
            "help": "How to start: continued (base model and vocabulary), scratch (random weights, new vocabulary), "
            "random / averaged / contextualized / mean_cov / token_distillation / focus (base weights; new-token "
            "rows random, the mean of base sub-token embeddings, distilled from the base model in corpus contexts, "
            "drawn around the mean of the base embeddings, learnt by token distillation, or FOCUS combinations of "
            "shared rows; focus needs the [focus] extra).",
        },
    )
    init_corpus_files: list[str] | None = field(
        default=None,
        metadata={
            "help": "Corpus searched for contexts of new tokens (contextualized, token_distillation; the "
            "fastText corpus of focus; default: the training text files).",
        },
    )
    max_contexts_per_token: int = field(
        default=20, metadata={"help": "Contexts sampled per new token (the paper: 20)."}
    )
    init_norm_match: bool = field(
        default=True,
        metadata={
            "help": "Rescale contextualized rows to the norm statistics of the base input embeddings (last-layer "
            "states are ~5x larger, see docs/vocabulary_and_init.md); false = the paper's raw vectors.",
        },
    )
    init_batch_size: int = field(
        default=32,
        metadata={"help": "Sentences per base-model forward pass (contextualized)."},
    )
    init_device: str | None = field(
        default=None, metadata={"help": "Device of those forward passes (default: cuda if any)."}
    )
    init_precision: str = field(
        default="auto",
        metadata={
            "help": "Precision of those forward passes: auto (bf16 autocast where the device multiplies bf16 "
            "natively: CUDA with bf16, CPU with AMX/AVX-512 BF16; float32 elsewhere), bf16, float32. The averaged "
            "vectors are accumulated in float32 either way.",
            "choices": list(PRECISION_CHOICES),
        },
    )
    init_num_threads: int | None = field(
        default=None, metadata={"help": "Threads of the context search (default: all)."}
    )
    max_context_chars: int = field(
        default=1000, metadata={"help": "Longer sentences are cut into chunks (code points)."}
    )
    max_context_tokens: int | None = field(
        default=None, metadata={"help": "Longest base-token window encoded (default: the base model's maximum)."}
    )
    distill_steps: int = field(
        default=20,
        metadata={"help": "token_distillation: gradient steps per new token (each over all its sampled contexts)."},
    )
    distill_learning_rate: float = field(
        default=1e-2, metadata={"help": "token_distillation: Adam learning rate of the new rows."}
    )
    distill_layer: int = field(
        default=-1,
        metadata={
            "help": "token_distillation: hidden-state layer matched by the MSE (0 = embeddings output, "
            "-1 = last layer)."
        },
    )
    focus_fasttext_epochs: int = field(default=3, metadata={"help": "focus: epochs of the auxiliary fastText model."})
    focus_fasttext_dim: int = field(
        default=100, metadata={"help": "focus: dimension of the auxiliary fastText model."}
    )
    focus_fasttext_min_count: int = field(
        default=10, metadata={"help": "focus: rarer new tokens get no fastText vector and fall back to averaged."}
    )
    cache_dir: str | None = field(default=None, metadata={"help": "Where Hub downloads are cached."})
    model_revision: str = field(
        default="main", metadata={"help": "Revision (branch, tag or commit) of the base model."}
    )

    def __post_init__(self):
        if self.init_strategy not in INIT_STRATEGIES:
            raise ValueError(f"--init_strategy {self.init_strategy!r}: expected one of {list(INIT_STRATEGIES)}")
        if self.max_contexts_per_token < 1:
            raise ValueError(f"--max_contexts_per_token must be >= 1, got {self.max_contexts_per_token}")
        if self.init_batch_size < 1:
            raise ValueError(f"--init_batch_size must be >= 1, got {self.init_batch_size}")
        if self.init_precision not in PRECISION_CHOICES:
            raise ValueError(f"--init_precision {self.init_precision!r}: expected one of {list(PRECISION_CHOICES)}")
        if self.distill_steps < 1:
            raise ValueError(f"--distill_steps must be >= 1, got {self.distill_steps}")
        if self.distill_learning_rate <= 0:
            raise ValueError(f"--distill_learning_rate must be > 0, got {self.distill_learning_rate}")
        if self.max_context_chars < 1:
            raise ValueError(f"--max_context_chars must be >= 1, got {self.max_context_chars}")

    @property
    def strategy(self) -> InitStrategy:
        return INIT_STRATEGIES[self.init_strategy]


@dataclass
class StartModelArguments:
    """The base model and new vocabulary a start model is built from, and where it is written."""

    model_name_or_path: str = field(metadata={"help": "Base masked-LM (path or Hub id)."})
    output_dir: str = field(metadata={"help": "Where the initialised checkpoint and init_report.json go."})
    tokenizer_name: str | None = field(
        default=None,
        metadata={"help": "The new vocabulary (not needed for 'continued')."},
    )
    config_name: str | None = field(
        default=None, metadata={"help": "Architecture for 'scratch' (default: the base's)."}
    )
    seed: int = field(default=0, metadata={"help": "Seed of the context sample and of random rows."})
    disable_tqdm: bool = field(
        default=False,
        metadata={"help": "No progress bars (as the Trainer's flag); they are drawn on the main process only."},
    )
