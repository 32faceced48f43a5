"""Static shapes for compiled training: the labelled positions of a batch as a tensor of fixed length per phase.

Masked-only prediction (:mod:`bioptimus_hf.pretraining.masked_lm`) gathers the encoder rows whose label is not
``-100``; by boolean indexing their number depends on the data, so under ``torch.compile`` the head and loss
recompile (or go dynamic) whenever it changes, CUDA graphs cannot replay them, and on a GPU the host waits to learn
it. The collator, which knows the phase and the labels on the host, emits next to ``labels`` ``masked_positions``:
the flat indices (into ``batch x seq_len``, ascending: the boolean gather's order) of the labelled positions, padded
with ``-1`` to the phase's *bucket*; the model gathers at them and gives padding rows the target ``-100``, so they
add nothing to the loss or the gradients. (``torch.nonzero(..., size=bucket)`` in the model could not see an
overflow without a host synchronisation.)

The bucket is a bound: the collator masks a budget of ``max(1, round(rate * n))`` of a sequence's ``n`` maskable
tokens, so a token phase never exceeds ``batch_size * max(1, round(rate * seq_len))``; whole-word phases end within
half a word of the budget, with independent overshoots of either sign, so their bucket adds ``word_margin *
sqrt(batch_size)`` (default 4: on real packed batches at most 1 of ~2,000 batches of 4 overflows, none at 16 or 64;
docs/speed.md, section 7). Buckets are multiples of 8 (tensor-core tiles in bf16). A batch over its bucket takes the
next size of ``bucket * 2**k`` (capped at ``batch_size * seq_len``): never a dropped token, one compilation per size,
counted per phase (``MaskingStatistics.overflows``, logged as ``masked_positions_overflows``).
"""

from __future__ import annotations

import math

import torch


# The value that pads `masked_positions`, and the label transformers ignores (CrossEntropyLoss's ignore_index).
PADDING_POSITION = -1
IGNORE_INDEX = -100
# Bucket sizes are multiples of this (tensor-core tiles for bf16 matrix products).
BUCKET_MULTIPLE = 8
# Whole-word phases: tokens per sequence added to the budget (see the module docstring).
DEFAULT_WORD_MARGIN = 4


def _round_up(value: int, multiple: int = BUCKET_MULTIPLE) -> int:
    return -(-int(value) // multiple) * multiple


def masked_positions_bucket(
    masking_rate: float, whole_word: bool, batch_size: int, seq_len: int, word_margin: int = DEFAULT_WORD_MARGIN
) -> int:
    """The fixed number of gathered rows for batches of ``batch_size x seq_len`` masked at ``masking_rate``:
    a bound on the collator's count (exact for token phases), rounded up to a multiple of 8 and at most the
    number of positions."""
    bound = batch_size * max(1, round(masking_rate * seq_len))
    if whole_word:
        # The sequences' overshoots are independent and about as often negative: their sum grows like sqrt(B).
        bound += math.ceil(word_margin * math.sqrt(batch_size))
    return min(_round_up(bound), batch_size * seq_len)


def overflow_size(bucket: int, count: int, positions: int) -> int:
    """The smallest size of the ladder ``bucket * 2**k`` (rounded to 8, capped at ``positions``) holding
    ``count`` rows."""
    if count > positions:
        raise ValueError(f"{count} labelled positions in a batch of {positions} positions")
    size = bucket
    while size < count:
        size = min(_round_up(2 * size), positions)
    return size


def masked_positions(labels: torch.Tensor, bucket: int) -> torch.Tensor:
    """The flat indices of ``labels != -100`` (ascending), padded with ``-1`` to ``bucket`` entries, or to the
    overflow size when there are more (never truncated)."""
    flat = (labels.reshape(-1) != IGNORE_INDEX).nonzero().flatten()
    size = overflow_size(bucket, flat.numel(), labels.numel())
    padded = torch.full((size,), PADDING_POSITION, dtype=torch.long)
    padded[: flat.numel()] = flat
    return padded


def mark_static(batch) -> None:
    """Tell ``torch.compile`` that every tensor of ``batch`` has static sizes (``torch._dynamo.mark_static``).

    Dynamo's default (``automatic_dynamic_shapes``) turns a dimension symbolic the second time its size changes, so
    the second phase's bucket would recompile the graph with dynamic shapes, which CUDA graphs cannot replay. Marked
    static, each bucket (and each other batch shape, e.g. an epoch's last batch) compiles its own graph once. A
    no-op for tensors used eagerly."""
    import torch._dynamo

    for value in batch.values():
        if torch.is_tensor(value):
            torch._dynamo.mark_static(value)


def allow_compiled_shapes(num_phases: int, per_phase: int = 4) -> int:
    """Raise dynamo's per-function cache (``recompile_limit``, default 8) so that every phase's graphs fit:
    per phase its bucket, an epoch's last smaller batch, overflow sizes and a spare (``per_phase``). Past the
    limit dynamo silently runs the function eagerly. Returns the limit now in force."""
    import torch._dynamo.config

    torch._dynamo.config.recompile_limit = max(torch._dynamo.config.recompile_limit, per_phase * num_phases)
    return torch._dynamo.config.recompile_limit
