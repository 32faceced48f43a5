"""`mean_cov`: new-token rows drawn around the mean of the base embeddings (Hewitt, 2021) by transformers' own
``resize_token_embeddings(..., mean_resizing=True)`` on the base model (docs/vocabulary_and_init.md says what it
draws); the initializer then copies the shared rows exactly and resizes to the new vocabulary.
"""

from __future__ import annotations

import torch

from .new_rows import NewRows


def mean_cov_rows(initializer, input_weight, corpus_files=None, contexts=None) -> NewRows:
    model, targets = initializer.model, list(initializer.targets)
    base_size = model.get_input_embeddings().num_embeddings
    if not targets:
        return NewRows(input={})
    with torch.random.fork_rng(devices=[]):  # seeded without touching the caller's global generator
        torch.manual_seed(initializer.seed)
        model.resize_token_embeddings(base_size + len(targets), mean_resizing=True)
    added = slice(base_size, base_size + len(targets))
    rows = model.get_input_embeddings().weight.detach()[added].float().cpu()
    output_layer = model.get_output_embeddings()
    tied = output_layer.weight.data_ptr() == model.get_input_embeddings().weight.data_ptr()
    output = None if tied else output_layer.weight.detach()[added].float().cpu()
    # transformers gives the added output bias the mean base bias only when it resizes an untied head (a tied
    # BERT head gets zeros); the mean is Hewitt's argument for the bias too, so it is used in both cases.
    bias = None if output_layer.bias is None else _bias_mean(output_layer.bias, base_size)
    with torch.random.fork_rng(devices=[]):
        model.resize_token_embeddings(base_size, mean_resizing=False)  # back to the base; the initializer resizes
    return NewRows(
        input={t: rows[i] for i, t in enumerate(targets)},
        output=None if output is None else {t: output[i] for i, t in enumerate(targets)},
        bias=None if bias is None else dict.fromkeys(targets, bias),
        report={"mean_cov": {"base_rows": base_size, "sampled_rows": len(targets)}},
    )


def _bias_mean(bias: torch.Tensor, base_size: int) -> float:
    return bias.detach()[:base_size].float().mean().item()
