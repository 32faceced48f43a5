"""Which module computes the new-token rows of each strategy that lives in a module of its own (mean_cov,
token_distillation, focus), and the call into it (:func:`new_token_rows`). The modules are named as strings and
imported on use (FOCUS's needs the optional extra); they import only ``new_rows``."""

from __future__ import annotations

import importlib
from typing import Any, Mapping, Sequence

import torch

from .new_rows import NewRows


# strategy name -> "module:function"; each function is (initializer, input_weight, corpus_files, contexts) -> NewRows
ROW_INITIALIZERS = {
    "mean_cov": "bioptimus_hf.vocabulary.mean_cov_init:mean_cov_rows",
    "token_distillation": "bioptimus_hf.vocabulary.token_distillation:token_distillation_rows",
    "focus": "bioptimus_hf.vocabulary.focus_init:focus_rows",  # optional extra [focus]
}


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
