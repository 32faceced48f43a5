"""Static shapes for compiled training: the labelled positions of a batch as a tensor of fixed length per phase.

Masked-only prediction (:mod:`bioptimus_hf.pretraining.masked_lm`) gathers the encoder rows whose label is not
``-100``. With boolean indexing the number of rows is data-dependent: under ``torch.compile`` the graph breaks
at the gather and the head and loss recompile (or go dynamic) whenever the count changes, and CUDA graphs,
which replay fixed shapes, are impossible; on a GPU the gather also makes the host wait for the device to learn
the count. This module gives the gather a size that depends only on the phase and the batch shape.

Where the size comes from: the collator
----------------------------------------
The collator is the one place that knows, on the host and before anything reaches the device, both the
phase (masking rate, token or whole-word) and the labels it has just drawn. So it emits, next to ``labels``,
``masked_positions``: the flat indices (into ``batch x seq_len``, ascending, so row-major like the boolean
gather) of the labelled positions, padded with ``-1`` to the phase's **bucket**. The model gathers with
``index_select`` at ``clamp(min=0)`` of them and gives the padding rows the target ``-100``, so they add
nothing to the loss or the gradients and the loss equals the unpadded one. Nothing in the step depends on a
count: no host synchronisation, one compiled graph per bucket. The alternative, a static-size
``torch.nonzero(..., size=bucket)`` in the model, cannot notice a batch with more labelled positions than the
bucket without a host synchronisation (or would truncate it silently), and would leave the bucket to a model
that does not know the phase.

The bucket: a bound, not a guess
--------------------------------
:class:`~bioptimus_hf.pretraining.collator.CurriculumDataCollator` does not draw a Bernoulli mask per token; it
masks a *budget* per sequence, ``max(1, round(rate * n))`` of its ``n`` maskable tokens. So:

* token phases hit the budget exactly, and ``n <= seq_len``: ``batch_size * max(1, round(rate * seq_len))`` is
  a hard upper bound on the count (for packed 128-token blocks, whose special tokens are not maskable, it is
  about 5% above the typical count);
* whole-word phases stop at the word that brings a sequence closest to its budget, so a sequence ends within
  half a word of it (above or below), except that the first word is always taken. The sequences' overshoots
  are independent and about as often negative, so their sum grows like ``sqrt(batch_size)``: the bucket adds
  ``word_margin * sqrt(batch_size)`` tokens (default 4), besides the slack of counting ``seq_len`` instead of
  the maskable tokens. On real packed batches (docs/speed.md, section 7) that overflows in at most 1 of ~2,000
  batches of 4 and never at 16 or 64.

The bucket is rounded up to a multiple of 8 (tensor-core tiles in bf16; a few padding rows at most).

Overflow: never a dropped token
-------------------------------
A batch with more labelled positions than its bucket (possible in whole-word phases only) gets the next size
of a short ladder, ``bucket * 2**k`` (rounded to 8, capped at ``batch_size * seq_len``, which always fits).
Each size compiles once, so overflows cost at most one extra compilation per size; they are counted per phase
(``MaskingStatistics.overflows``) and logged by the phase callback as ``masked_positions_overflows``.
"""

from __future__ import annotations

import math

import torch


# Matches masked_lm.PADDING_POSITION and the label value transformers ignores.
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

    Dynamo's default (``automatic_dynamic_shapes``) turns a dimension symbolic the second time its size
    changes: the second phase's bucket would recompile the graph as a dynamic-shape graph, with kernels that do
    not know the row count and nothing CUDA graphs can replay per shape. Marked static, each bucket (and each
    other batch shape, e.g. an epoch's last, smaller batch) compiles its own graph once and is reused.
    Called by CurriculumMaskingMixin as it moves a masked batch to the device; a no-op for tensors used eagerly."""
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
