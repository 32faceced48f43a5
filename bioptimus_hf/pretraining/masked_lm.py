"""Masked-only prediction: a masked LM's own MLM head run on the labelled positions only (docs/speed.md, section 1).

:func:`enable_masked_only_prediction` registers forward hooks: the head receives the labelled rows only
(:func:`gather_labelled_rows`) and the loss is transformers' ``ForMaskedLMLoss`` inside the forward, so
``torch.compile`` captures one graph; ``logits`` hold one row per labelled position. The class, state dict and config
are untouched; a family not in :data:`HEADS` keeps the standard head (one warning)."""

from __future__ import annotations

import torch
from torch import nn
from transformers.loss.loss_utils import ForMaskedLMLoss
from transformers.utils import logging

from .static_shapes import IGNORE_INDEX


logger = logging.get_logger(__name__)

# The head's entry of each family's forward, by the transformers class that defines that forward (DeBERTa-v2: the
# legacy head, or the one of config.legacy=False); the rest of the head follows it, on its output.
HEADS = {
    "BertForMaskedLM": ("cls",),
    "RobertaForMaskedLM": ("lm_head",),
    "XLMRobertaForMaskedLM": ("lm_head",),
    "DistilBertForMaskedLM": ("vocab_transform",),
    "ElectraForMaskedLM": ("generator_predictions",),
    "DebertaV2ForMaskedLM": ("cls", "lm_predictions"),
    "ModernBertForMaskedLM": ("head",),
}
_HOOKS_ATTRIBUTE = "_bioptimus_masked_only"


def _forward_owner(model: nn.Module) -> type:
    return next(cls for cls in type(model).__mro__ if "forward" in vars(cls))


def head_entry(model: nn.Module) -> str | None:
    """The attribute name of ``model``'s head entry (:data:`HEADS`); None when its forward is not a known one."""
    owner = _forward_owner(model)
    if not owner.__module__.startswith("transformers."):
        return None
    return next(
        (name for name in HEADS.get(owner.__name__, ()) if isinstance(getattr(model, name, None), nn.Module)), None
    )


def unsupported_reason(model: nn.Module) -> str | None:
    """Why :func:`enable_masked_only_prediction` keeps ``model``'s standard head (None when it serves it)."""
    if head_entry(model) is not None:
        return None
    owner = _forward_owner(model)
    if owner.__name__ not in HEADS and any(cls.__name__ in HEADS for cls in type(model).__mro__):
        return f"it overrides its masked LM's forward ({owner.__qualname__}.forward), which may compute another loss"
    return f"its forward ({owner.__qualname__}.forward) is none of the masked LMs whose head is known ({', '.join(HEADS)})"


def supports_masked_only_prediction(model: nn.Module) -> bool:
    return unsupported_reason(model) is None


def gather_labelled_rows(
    hidden: torch.Tensor, labels: torch.Tensor, masked_positions: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """The encoder rows to predict and their targets, flattened over ``batch x seq_len``.

    Without ``masked_positions``: the labelled rows (boolean indexing, row-major order; the size depends on the
    labels). With it: the rows at those flat indices, ``-1`` entries giving row 0 with the target ``-100`` (a
    fixed size, no host synchronisation: :mod:`bioptimus_hf.pretraining.static_shapes`)."""
    flat_hidden = hidden.reshape(-1, hidden.shape[-1])
    flat_labels = labels.to(hidden.device).reshape(-1)
    if masked_positions is None:
        labelled = flat_labels != IGNORE_INDEX
        return flat_hidden[labelled], flat_labels[labelled]
    positions = masked_positions.to(hidden.device).reshape(-1)
    index = positions.clamp(min=0)
    targets = flat_labels.index_select(0, index).masked_fill(positions < 0, IGNORE_INDEX)
    return flat_hidden.index_select(0, index), targets


class _MaskedOnlyHooks:
    """The hooks on one model and the labels of its call in progress (None between calls). Bound methods, so that
    ``copy.deepcopy`` of the model copies them with it (their handles follow the copy's hook dictionaries)."""

    def __init__(self, model: nn.Module, head: str):
        self.head = head
        self.call: dict | None = None
        entry, projection = getattr(model, head), model.get_output_embeddings()
        # The logits: the entry's output when it holds the vocabulary projection, else the projection's
        logits_module = entry if any(module is projection for module in entry.modules()) else projection
        self.logits_from = next(name for name, module in model.named_modules() if module is logits_module)
        self.handles = (
            model.register_forward_pre_hook(self.take_labels, with_kwargs=True),
            entry.register_forward_pre_hook(self.gather_rows),
            logits_module.register_forward_hook(self.compute_loss),
            # first of the model's forward hooks: later ones (the distillation projection) see the loss
            model.register_forward_hook(self.add_loss, prepend=True),
        )

    def take_labels(self, model, args, kwargs):
        labels = kwargs.pop("labels", None)
        positions, items = kwargs.pop("masked_positions", None), kwargs.pop("num_items_in_batch", None)
        self.call = None if labels is None else {"labels": labels, "positions": positions, "items": items}
        return args, kwargs

    def gather_rows(self, entry, args):
        if self.call is None or not args:
            return None
        rows, self.call["targets"] = gather_labelled_rows(args[0], self.call["labels"], self.call["positions"])
        return (rows, *args[1:])

    def compute_loss(self, module, args, logits):
        # Inside the model's forward: one compiled graph with it
        if self.call is not None:
            self.call["loss"] = self.loss(self.call, logits)

    @staticmethod
    def loss(call: dict, logits: torch.Tensor) -> torch.Tensor:
        # Without the rows gathered (the entry took the hidden states by keyword) logits and targets are the full ones
        targets = call.get("targets", call["labels"])
        return ForMaskedLMLoss(logits, targets, vocab_size=logits.shape[-1], num_items_in_batch=call["items"])

    def add_loss(self, model, args, output):
        call, self.call = self.call, None
        if call is None:
            return None
        logits = output[0] if isinstance(output, tuple) else output.logits
        # Not computed inside: the logits module was replaced after the hooks (resize_token_embeddings)
        loss = call["loss"] if "loss" in call else self.loss(call, logits)
        return (loss, *output) if isinstance(output, tuple) else type(output)(loss=loss, **output)


def is_masked_only_prediction_enabled(model: nn.Module) -> bool:
    return isinstance(vars(model).get(_HOOKS_ATTRIBUTE), _MaskedOnlyHooks)


def enable_masked_only_prediction(model: nn.Module) -> nn.Module:
    """Restrict ``model``'s MLM head to the labelled positions when labels are given (module docstring); return
    ``model``, the same object. A model it cannot serve is returned unchanged, with one warning saying why.
    Calling it twice is harmless."""
    if is_masked_only_prediction_enabled(model):
        return model
    reason = unsupported_reason(model)
    if reason is not None:
        logger.warning(
            f"Masked-only prediction cannot serve {type(model).__name__}: {reason}. It keeps the standard "
            "masked-LM head (logits at every position)."
        )
        return model
    setattr(model, _HOOKS_ATTRIBUTE, _MaskedOnlyHooks(model, head_entry(model)))
    return model


def disable_masked_only_prediction(model: nn.Module) -> nn.Module:
    """Remove :func:`enable_masked_only_prediction`'s hooks (the standard head, full logits); return ``model``."""
    hooks = vars(model).pop(_HOOKS_ATTRIBUTE, None)
    for handle in hooks.handles if hooks is not None else ():
        handle.remove()
    return model


def masked_only_status(model: nn.Module) -> str:
    """One line for run logs: whether masked-only prediction is on for ``model``, at which head, or why not."""
    name = type(model).__name__
    if is_masked_only_prediction_enabled(model):
        hooks = vars(model)[_HOOKS_ATTRIBUTE]
        return f"on for {name}: the labelled rows enter its head at `{hooks.head}`, logits from `{hooks.logits_from}`"
    reason = unsupported_reason(model)
    return f"off for {name} (standard head{': ' + reason if reason else ''})"


def use_masked_only_prediction(model: nn.Module, enabled: bool, gradient_accumulation_steps: int = 1) -> bool:
    """Enable masked-only prediction when asked (and supported); warn about the standard head's loss scaling
    under gradient accumulation. Returns whether it is active."""
    if enabled:
        enable_masked_only_prediction(model)
    active = is_masked_only_prediction_enabled(model)
    if not active and gradient_accumulation_steps > 1:
        # The Trainer passes num_items_in_batch to BertForMaskedLM (and most masked LMs), which ignore it, and then
        # skips dividing the loss by the accumulation steps (docs/speed.md, section 1).
        logger.warning(
            "standard MLM head with gradient_accumulation_steps=%d: transformers does not scale this model's loss "
            "by the accumulation steps; prefer --masked_only_prediction true",
            gradient_accumulation_steps,
        )
    return active
