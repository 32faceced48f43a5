"""The initialisation strategies (:data:`INIT_STRATEGIES`, with the text a model card describes each with) and what
a start model is built from and where it is written (:class:`StartModelArguments`: ``bioptimus init-embeddings``, a
study's shared start models).

The initialisation settings are ``BioptimusConfig``'s (``bioptimus_hf.pretraining.bioptimus_config``):
``bioptimus pretrain``, ``bioptimus init-embeddings`` (their ``EmbeddingInitArguments``) and
:func:`~bioptimus_hf.vocabulary.embedding_init.build_initialized_model` take the same fields and defaults.
"""

from __future__ import annotations

from dataclasses import dataclass, field


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
class StartModelArguments:
    """The base model and new vocabulary a start model is built from, and where it is written."""

    model_name_or_path: str = field(metadata={"help": "Base masked-LM (path or Hub id)."})
    output_dir: str = field(metadata={"help": "Where the initialised checkpoint and init_report.json go."})
    tokenizer_name: str | None = field(
        default=None,
        metadata={"help": "The new vocabulary (not needed for 'continued')."},
    )
    seed: int = field(default=0, metadata={"help": "Seed of the context sample and of random rows."})
    disable_tqdm: bool = field(
        default=False,
        metadata={"help": "No progress bars (as the Trainer's flag); they are drawn on the main process only."},
    )
