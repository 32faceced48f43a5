"""Static shapes for compiled training: the labelled positions of a batch as ``masked_positions``, padded with ``-1``
to the phase's bucket (a bound of the masked count, a multiple of 8), so ``torch.compile`` does not recompile per
batch. A batch over its bucket takes the next ``bucket * 2**k``: never a dropped token (docs/speed.md, section 7)."""

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
    """Tell ``torch.compile`` that every tensor of ``batch`` has static sizes (``torch._dynamo.mark_static``): each
    bucket compiles its own graph once instead of a dynamic one CUDA graphs cannot replay. A no-op for tensors
    used eagerly."""
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
