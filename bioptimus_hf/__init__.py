"""bioptimus-hf: BIOptimus-style biomedical BERT pre-training on top of the Hugging Face Trainer.

One sub-package (wing) per pipeline stage, each importing only from the layers below it (docs/ARCHITECTURE.md).
The names below load on first use, so importing a light module (``bioptimus_hf.vocabulary.qikfind``) never pulls
in torch.
"""

from __future__ import annotations

import importlib


__version__ = "0.1.0"

_EXPORTS = {
    "BIOPTIMUS_CURRICULUM": "bioptimus_hf.pretraining.phases",
    "BIOPTIMUS_PHASE_FRACTIONS": "bioptimus_hf.pretraining.phases",
    "Curriculum": "bioptimus_hf.pretraining.phases",
    "CurriculumPhase": "bioptimus_hf.pretraining.phases",
    "CurriculumBatch": "bioptimus_hf.pretraining.collator",
    "CurriculumDataCollator": "bioptimus_hf.pretraining.collator",
    "PhaseScheduleCallback": "bioptimus_hf.pretraining.callback",
    "add_callback_first": "bioptimus_hf.pretraining.callback",
    "BioptimusConfig": "bioptimus_hf.pretraining.bioptimus_config",
    "BioptimusTrainer": "bioptimus_hf.pretraining.bioptimus_trainer",
    "tokenize_with_word_ids": "bioptimus_hf.pretraining.tokenization",
    "group_texts": "bioptimus_hf.pretraining.tokenization",
    "enable_masked_only_prediction": "bioptimus_hf.pretraining.masked_lm",
    "ContextualizedEmbeddingInitializer": "bioptimus_hf.vocabulary.embedding_init",
    "build_initialized_model": "bioptimus_hf.vocabulary.embedding_init",
    "EmbeddingInitArguments": "bioptimus_hf.pretraining.bioptimus_config",
    "INIT_STRATEGIES": "bioptimus_hf.vocabulary.init_config",
    "find_contexts": "bioptimus_hf.vocabulary.qikfind",
    "train_tokenizer": "bioptimus_hf.vocabulary.tokenizer_training",
    "TOKENIZER_FAMILIES": "bioptimus_hf.utils.tokenizer_families",
    "ReleaseInfo": "bioptimus_hf.releases.record",
    "RunFacts": "bioptimus_hf.releases.record",
    "find_releases": "bioptimus_hf.releases.record",
    "render_release_card": "bioptimus_hf.releases.card",
    "publish_releases": "bioptimus_hf.releases.hub",
    "DistillationFacts": "bioptimus_hf.releases.record",
    "DistillationConfig": "bioptimus_hf.distillation.distillation_config",
    "DistillationTrainer": "bioptimus_hf.distillation.distillation_trainer",
    "DISTILLATION_RECIPES": "bioptimus_hf.distillation.recipes",
    "keep_layers": "bioptimus_hf.distillation.student",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'bioptimus_hf' has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + __all__)
