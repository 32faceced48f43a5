"""The strategies whose new-token rows a module of their own computes (mean_cov, token_distillation, focus): which
module (``ROW_INITIALIZERS``), the call into it (:func:`new_token_rows`) and what it returns (:class:`NewRows`).

``ContextualizedEmbeddingInitializer.initialize`` (``embedding_init``) keeps the vocabulary mapping (shared rows
copied, special tokens by role, fallbacks to the sub-token average) and asks for the new tokens' rows. The modules
are named as strings and imported on use (FOCUS's needs the optional extra), so each may import this one.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import torch


# strategy name -> "module:function"; each function is (initializer, input_weight, corpus_files, contexts) -> NewRows
ROW_INITIALIZERS = {
    "mean_cov": "bioptimus_hf.vocabulary.mean_cov_init:mean_cov_rows",
    "token_distillation": "bioptimus_hf.vocabulary.token_distillation:token_distillation_rows",
    "focus": "bioptimus_hf.vocabulary.focus_init:focus_rows",  # optional extra [focus]
}


@dataclass
class NewRows:
    """Rows of new tokens, by new-vocabulary id (those left out fall back to `averaged`); `output`/`bias` None: the
    `averaged` output rows and bias."""

    input: dict[int, torch.Tensor]
    output: dict[int, torch.Tensor] | None = None
    bias: dict[int, float] | None = None
    report: dict[str, Any] = field(default_factory=dict)


def new_token_rows(
    strategy: str,
    initializer,
    input_weight: torch.Tensor,
    corpus_files: Sequence[str] | str | None,
    contexts: Mapping[int, Sequence[Any]] | None,
) -> NewRows:
    module_name, function_name = ROW_INITIALIZERS[strategy].split(":")
    function = getattr(importlib.import_module(module_name), function_name)
    return function(initializer, input_weight, corpus_files, contexts)
