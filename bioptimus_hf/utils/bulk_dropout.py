"""Dropout masks drawn in bulk on CPUs, where torch's own draws are the slowest step of masked-LM training
(docs/speed.md, section 9). Each element takes 32 bits of numpy's PCG64, seeded from torch's default generator (so
``set_seed`` fixes every mask), for every ``nn.Dropout`` (swapped for :class:`BulkDropout`) and the attention
probabilities (:data:`ATTENTION_IMPLEMENTATION`). Not under ``torch.compile``, nor by default on Intel CPUs."""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn


ATTENTION_IMPLEMENTATION = "bioptimus_bulk_dropout_sdpa"


class _ApplyKeepMask(torch.autograd.Function):
    """``x * mask * scale`` with the mask saved for the backward: dropout's own formula both ways.

    The mask holds 0 and 1 in ``x``'s dtype and the product is one ``addcmul``: aten's kernels copy a boolean mask
    into ``x``'s dtype and multiply in two more passes (1.8 ms against 0.25 ms for one MiniLM layer's attention
    probabilities, docs/speed.md, section 9). The values are aten's; a dropped element is +0 where aten gives -0.
    """

    @staticmethod
    def forward(ctx, x, mask, scale):
        ctx.save_for_backward(mask)
        ctx.scale = scale
        return _scaled_product(x, mask, scale)

    @staticmethod
    def backward(ctx, grad_output):
        (mask,) = ctx.saved_tensors
        return _scaled_product(grad_output, mask, ctx.scale), None, None


def _scaled_product(x: torch.Tensor, mask: torch.Tensor, scale: float) -> torch.Tensor:
    # (scale * mask) * x, as aten's kernel groups the product: a dropped element is 0 even where x * scale would
    # overflow (dropout's own order, x * mask first, gives the same), never inf * 0
    return torch.addcmul(x.new_zeros(()), mask.to(x.dtype), x, value=scale)


def bernoulli_keep_mask(shape, keep_probability: float, dtype: torch.dtype = torch.bool) -> torch.Tensor:
    """A CPU tensor of ``shape``, each element True (1 in a numeric ``dtype``, written directly by the comparison)
    with ``keep_probability`` (to within 2**-33), else False (0); ``dtype`` does not change which are kept."""
    if not 0.0 < keep_probability <= 1.0:
        raise ValueError(f"keep probability must be in (0, 1], got {keep_probability}")
    count = math.prod(shape)
    seed = int(torch.randint(0, 2**62, (1,), dtype=torch.int64))
    words = np.random.PCG64(seed).random_raw((count + 1) // 2)
    bits = torch.from_numpy(words.view(np.int32)[:count]).view(shape)
    threshold = round(keep_probability * 2**32) - 2**31
    if threshold > 2**31 - 1:  # q within 2**-33 of 1: every element kept
        return torch.ones(shape, dtype=dtype)
    return torch.lt(bits, threshold, out=torch.empty(shape, dtype=dtype))


def bulk_dropout(x: torch.Tensor, p: float, training: bool = True) -> torch.Tensor:
    """``torch.nn.functional.dropout(x, p, training)`` with the mask drawn by :func:`bernoulli_keep_mask` on a CPU."""
    if not training or p == 0.0:
        return x
    if x.device.type != "cpu" or p >= 1.0:
        return nn.functional.dropout(x, p, training)
    keep = 1.0 - p
    return _ApplyKeepMask.apply(x, bernoulli_keep_mask(x.shape, keep, dtype=x.dtype), 1.0 / keep)


class BulkDropout(nn.Dropout):
    """``nn.Dropout`` whose training mask is drawn in bulk on a CPU (same ``p``, same state: none)."""

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        return bulk_dropout(input, self.p, self.training)


def sdpa_with_bulk_dropout(module, query, key, value, attention_mask, **kwargs):
    """transformers' attention-interface signature (``dropout``, ``scaling``, ``is_causal``... by keyword): bulk
    dropout on the probabilities, else its SDPA."""
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    dropout, scaling, is_causal = kwargs.get("dropout", 0.0), kwargs.get("scaling"), kwargs.get("is_causal")
    # Causal as SDPA reads it (the flag, else the module's, where no mask carries it): left to SDPA
    causal = is_causal if is_causal is not None else getattr(module, "is_causal", True)
    plain_case = (
        dropout == 0.0
        or query.device.type != "cpu"
        or (causal and attention_mask is None and query.shape[2] > 1)
        or getattr(module, "num_key_value_groups", 1) > 1
        or any(kwargs.get(name) is not None for name in ("position_bias", "softcap", "s_aux", "sinks"))
        or kwargs.get("output_attentions", False)
    )
    if plain_case:
        return sdpa_attention_forward(module, query, key, value, attention_mask, **kwargs)
    scale = scaling if scaling is not None else query.shape[-1] ** -0.5
    # In the inputs' dtype (bf16 under autocast, whose float32 softmax would double the traffic of the largest
    # tensors here): the products accumulate in float32 and so does softmax's CPU kernel, as in SDPA's fused one.
    with torch.autocast(query.device.type, enabled=False):
        scores = torch.matmul(query * scale, key.transpose(-1, -2))  # the scale on the smaller operand
        if attention_mask is not None:
            if attention_mask.dtype == torch.bool:
                scores = scores.masked_fill(~attention_mask, float("-inf"))
            else:
                scores = scores + attention_mask.to(scores.dtype)
        probabilities = bulk_dropout(torch.softmax(scores, dim=-1), dropout, True)
        output = torch.matmul(probabilities.to(value.dtype), value)
    return output.transpose(1, 2).contiguous(), None


def bulk_dropout_pays_off(cpuinfo_path: str = "/proc/cpuinfo") -> bool:
    """``--bulk_dropout``'s default on a CPU: on, except where torch already draws its masks in bulk (Intel CPUs,
    through MKL: :func:`bioptimus_hf.utils.hardware.torch_draws_dropout_masks_in_bulk`), where the gain was not
    measured and torch's own stream is kept."""
    from .hardware import torch_draws_dropout_masks_in_bulk

    return not torch_draws_dropout_masks_in_bulk(cpuinfo_path)


# The --bulk_dropout flag's help, one text for every command with the flag (bioptimus pretrain, ner): each adds its default
BULK_DROPOUT_HELP = (
    "On a CPU, draw dropout masks in bulk (numpy's PCG64, seeded from torch's generator) instead of torch's "
    "per-element draws, for every nn.Dropout and the attention probabilities; the same dropout, another random "
    "stream. Not with --torch_compile. See docs/speed.md, section 9."
)


def use_bulk_dropout(requested: bool | None, training_args) -> bool:
    """Whether a run applies bulk dropout: ``--bulk_dropout`` (None: :func:`bulk_dropout_pays_off`), and only on a
    CPU without ``--torch_compile`` (CUDA draws its masks in the kernel; compiled graphs fuse torch's dropout)."""
    wanted = requested if requested is not None else bulk_dropout_pays_off()
    return bool(wanted) and training_args.device.type == "cpu" and not training_args.torch_compile


def _register_attention() -> None:
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

    AttentionInterface.register(ATTENTION_IMPLEMENTATION, sdpa_with_bulk_dropout)  # idempotent
    AttentionMaskInterface.register(ATTENTION_IMPLEMENTATION, sdpa_mask)  # the same masks as SDPA


def enable_bulk_dropout(model: nn.Module) -> str:
    """Swap ``model``'s dropout for bulk dropout (module docstring); returns what was changed, for the log.
    Idempotent; :func:`disable_bulk_dropout` restores the model as it was."""
    swapped = 0
    for module in model.modules():
        if type(module) is nn.Dropout:
            module.__class__ = BulkDropout
            swapped += 1
    attention = "attention probabilities: unchanged"
    current = getattr(getattr(model, "config", None), "_attn_implementation", None)
    if current == ATTENTION_IMPLEMENTATION:
        attention = "attention probabilities: bulk"
    elif getattr(model, "_supports_attention_backend", False) and current in ("sdpa", "eager"):
        _register_attention()
        model._bioptimus_attention_before_bulk_dropout = current
        model.set_attn_implementation(ATTENTION_IMPLEMENTATION)
        attention = f"attention probabilities: bulk (was {current})"
    total = sum(isinstance(m, BulkDropout) for m in model.modules())
    return f"{total} dropout modules bulk ({swapped} swapped now); {attention}"


def disable_bulk_dropout(model: nn.Module) -> nn.Module:
    for module in model.modules():
        if type(module) is BulkDropout:
            module.__class__ = nn.Dropout
    before = getattr(model, "_bioptimus_attention_before_bulk_dropout", None)
    if before is not None:
        model.set_attn_implementation(before)
        del model._bioptimus_attention_before_bulk_dropout
    return model
