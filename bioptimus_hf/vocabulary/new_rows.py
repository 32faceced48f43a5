"""New-token rows of the strategies that live in a module of their own (mean_cov, token_distillation, focus).

`ContextualizedEmbeddingInitializer.initialize` keeps the vocabulary mapping (shared rows copied, special
tokens by role, fallbacks to the sub-token average) and asks :func:`new_token_rows` for the rows of the
new tokens. A strategy module returns a :class:`NewRows`; rows it leaves out fall back to `averaged`.
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
    """Rows of new tokens, by new-vocabulary id; `output`/`bias` None = the `averaged` output rows and bias."""

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
