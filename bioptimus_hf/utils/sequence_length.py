"""How long a sequence a model can take, the one place every stage reads it from: its learnt positions, less the offset
of a family that numbers them past padding (RoBERTa: 514 positions take 512 tokens; recognised by its position
embedding's ``padding_idx``), capped by its tokenizer's ``model_max_length``."""

from __future__ import annotations

import logging

import torch
from transformers import AutoModel, PretrainedConfig, PreTrainedModel, PreTrainedTokenizerBase


logger = logging.getLogger(__name__)

FALLBACK_MAX_TOKENS = 512  # neither the model nor the tokenizer names a limit
_NO_LIMIT = 1_000_000  # transformers' "no limit" sentinel for model_max_length is far above this


def position_offset(model: PreTrainedModel) -> int:
    """The first position id a model uses: ``padding_idx + 1`` where its position embeddings have a ``padding_idx``
    (the RoBERTa family), else 0."""
    positions = getattr(getattr(model.base_model, "embeddings", None), "position_embeddings", None)
    padding_idx = getattr(positions, "padding_idx", None)
    return 0 if padding_idx is None else padding_idx + 1


def _smallest_limit(positions, offset: int, tokenizer: PreTrainedTokenizerBase) -> int:
    limits = [positions - offset if isinstance(positions, int) else None, tokenizer.model_max_length]
    limits = [x for x in limits if isinstance(x, int) and 0 < x < _NO_LIMIT]
    return min(limits) if limits else FALLBACK_MAX_TOKENS


def max_model_tokens(model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase) -> int:
    """The longest sequence (special tokens included) the model's positions and the tokenizer allow."""
    return _smallest_limit(getattr(model.config, "max_position_embeddings", None), position_offset(model), tokenizer)


def max_config_tokens(config: PretrainedConfig, tokenizer: PreTrainedTokenizerBase) -> int:
    """:func:`max_model_tokens` before any weights are loaded: the model built on the meta device (no memory). A
    configuration transformers cannot build so falls back to ``max_position_embeddings`` with no offset, warned."""
    try:
        with torch.device("meta"):
            model = AutoModel.from_config(config)
    except (ValueError, KeyError, TypeError, NotImplementedError) as error:
        logger.warning(
            "could not build %s on the meta device to read its position offset (%s); assuming none",
            type(config).__name__,
            error,
        )
        return _smallest_limit(getattr(config, "max_position_embeddings", None), 0, tokenizer)
    return max_model_tokens(model, tokenizer)
