"""Masked-only prediction for BERT masked-language models.

A BERT MLM head (``cls.predictions``: dense + activation + LayerNorm, then a projection onto the whole
vocabulary) is applied by ``BertForMaskedLM.forward`` to *every* position, although only the ~15-20%
of positions with a label (``labels != -100``) enter the loss. For a small model the vocabulary
projection of the unlabelled positions is a large share of a training step's arithmetic (and of its
activation memory: a ``batch x seq_len x vocab_size`` logits tensor and its gradient).

:func:`enable_masked_only_prediction` makes a ``BertForMaskedLM`` gather the encoder outputs at the
labelled positions first and run the same head modules (same parameters, tied weights intact) on those
rows only. The loss is the same cross-entropy as the standard head, so it is equal up to float rounding
(tested within 1e-5 in float32, parameters' gradients too).

Behaviour of the patched ``forward``:

* ``labels`` given: the loss is the cross-entropy over labelled positions. Without ``num_items_in_batch``
  it is the mean over labelled positions (what ``BertForMaskedLM`` returns). With ``num_items_in_batch``
  (passed by the transformers ``Trainer`` to models that accept loss kwargs) it is the *sum* divided by
  ``num_items_in_batch``, i.e. transformers' ``ForMaskedLMLoss`` semantics. The ``Trainer`` then treats
  the loss as already normalised over the accumulated batch and does not divide it by
  ``gradient_accumulation_steps``. (``BertForMaskedLM`` in transformers 5.x accepts ``**kwargs`` but
  ignores ``num_items_in_batch`` and returns a per-micro-batch mean, so under gradient accumulation the
  plain model's gradient is ``gradient_accumulation_steps`` times the mean's gradient; with one
  micro-batch per step both are identical.)
  ``logits`` in the returned :class:`~transformers.modeling_outputs.MaskedLMOutput` hold the scores of
  the labelled positions only, shape ``(num_labelled, vocab_size)``, in the row-major order of
  ``labels != -100`` (so they align with ``labels[labels != -100]``). Code that needs full-shape logits
  together with labels must call :func:`disable_masked_only_prediction` first.
* ``labels`` absent (inference, fill-mask, embeddings): the standard forward runs unchanged and returns
  logits for every position — there is nothing to restrict to.

The model stays the same object and an instance of its class: nothing in its state dict, config or
``config.architectures`` changes, so ``save_pretrained`` writes a standard ``BertForMaskedLM`` checkpoint
that loads with ``AutoModelForMaskedLM.from_pretrained`` without this module.
"""

from __future__ import annotations

import types

import torch
from torch import nn
from transformers import BertForMaskedLM
from transformers.modeling_outputs import MaskedLMOutput
from transformers.models.bert.modeling_bert import BertOnlyMLMHead
from transformers.utils import logging
from transformers.utils.generic import can_return_tuple

logger = logging.get_logger(__name__)

# transformers' label value for "no prediction here" (CrossEntropyLoss's default ignore_index).
IGNORE_INDEX = -100

_ENABLED_FLAG = "_bioptimus_masked_only_prediction"


def supports_masked_only_prediction(model: nn.Module) -> bool:
    """Whether :func:`enable_masked_only_prediction` is exact for ``model``.

    True for ``BertForMaskedLM`` and subclasses that keep its ``forward`` and its MLM head class
    (``cls`` a ``BertOnlyMLMHead`` with ``predictions.transform`` / ``predictions.decoder``): then the
    head is a position-wise function of the encoder output and restricting it to labelled positions
    changes nothing but the work done. Anything else (other architectures, overridden ``forward``,
    custom heads) returns False.
    """
    if not isinstance(model, BertForMaskedLM):
        return False
    if type(model).forward is not BertForMaskedLM.forward:
        return False
    head = getattr(model, "cls", None)
    if type(head) is not BertOnlyMLMHead:
        return False
    predictions = head.predictions
    return all(hasattr(predictions, name) for name in ("transform", "decoder"))


def is_masked_only_prediction_enabled(model: nn.Module) -> bool:
    """Whether :func:`enable_masked_only_prediction` is active on ``model``."""
    return bool(getattr(model, _ENABLED_FLAG, False))


@can_return_tuple
def _masked_only_forward(
    self: BertForMaskedLM,
    input_ids: torch.Tensor | None = None,
    attention_mask: torch.Tensor | None = None,
    token_type_ids: torch.Tensor | None = None,
    position_ids: torch.Tensor | None = None,
    inputs_embeds: torch.Tensor | None = None,
    encoder_hidden_states: torch.Tensor | None = None,
    encoder_attention_mask: torch.Tensor | None = None,
    labels: torch.Tensor | None = None,
    **kwargs,
) -> MaskedLMOutput:
    # Same parameter names as BertForMaskedLM.forward: the Trainer inspects this signature to decide
    # which dataset columns to keep and (through **kwargs) whether to pass `num_items_in_batch`.
    inputs = dict(
        input_ids=input_ids,
        attention_mask=attention_mask,
        token_type_ids=token_type_ids,
        position_ids=position_ids,
        inputs_embeds=inputs_embeds,
        encoder_hidden_states=encoder_hidden_states,
        encoder_attention_mask=encoder_attention_mask,
    )
    if labels is None:
        return BertForMaskedLM.forward(self, **inputs, **kwargs)

    num_items_in_batch = kwargs.pop("num_items_in_batch", None)
    outputs = self.bert(**inputs, return_dict=True, **kwargs)
    sequence_output = outputs[0]
    flat_labels = labels.to(sequence_output.device).reshape(-1)
    labelled = flat_labels != IGNORE_INDEX
    # Boolean indexing keeps row-major order; its output size is data-dependent (a graph break under
    # torch.compile, the encoder before it still compiles).
    labelled_hidden = sequence_output.reshape(-1, sequence_output.shape[-1])[labelled]
    prediction_scores = self.cls(labelled_hidden)
    targets = flat_labels[labelled]

    # Upcast like transformers' ForMaskedLMLoss; cheap here as only labelled rows exist.
    scores = prediction_scores.float()
    if num_items_in_batch is None:
        loss = nn.functional.cross_entropy(scores, targets, reduction="mean")
    else:
        if torch.is_tensor(num_items_in_batch):
            num_items_in_batch = num_items_in_batch.to(scores.device)
        loss = nn.functional.cross_entropy(scores, targets, reduction="sum") / num_items_in_batch

    return MaskedLMOutput(
        loss=loss,
        logits=prediction_scores,
        hidden_states=outputs.hidden_states,
        attentions=outputs.attentions,
    )


def enable_masked_only_prediction(model: nn.Module) -> nn.Module:
    """Restrict ``model``'s MLM head to labelled positions when labels are given; return ``model``.

    The same object is returned, still an instance of its own class, with unchanged parameters, buffers,
    tied weights and config (``save_pretrained`` output is a standard checkpoint). Models for which
    :func:`supports_masked_only_prediction` is False are returned unchanged, with a logged warning, and
    keep the standard (full-vocabulary, every-position) head. Calling it twice is harmless.
    """
    if is_masked_only_prediction_enabled(model):
        return model
    if not supports_masked_only_prediction(model):
        logger.warning(
            "Masked-only prediction supports BertForMaskedLM (with its own forward and BertOnlyMLMHead); "
            f"got {type(model).__name__}, which keeps the standard masked-LM head (logits at every position)."
        )
        return model
    # An instance attribute shadows the class's forward for nn.Module.__call__ only on this object;
    # the class, the state dict and the config are untouched. copy.deepcopy re-binds it to the copy.
    model.forward = types.MethodType(_masked_only_forward, model)
    setattr(model, _ENABLED_FLAG, True)
    return model


def disable_masked_only_prediction(model: nn.Module) -> nn.Module:
    """Undo :func:`enable_masked_only_prediction` (standard forward, full logits); return ``model``."""
    if is_masked_only_prediction_enabled(model):
        del model.forward
        delattr(model, _ENABLED_FLAG)
    return model


def use_masked_only_prediction(model: nn.Module, enabled: bool, gradient_accumulation_steps: int = 1) -> bool:
    """Enable masked-only prediction when asked (and supported); warn about the standard head's loss scaling
    under gradient accumulation. Returns whether it is active."""
    if enabled:
        enable_masked_only_prediction(model)
    active = is_masked_only_prediction_enabled(model)
    if not active and gradient_accumulation_steps > 1:
        # transformers 5.23 passes num_items_in_batch to BertForMaskedLM, which ignores it, and then
        # skips dividing the loss by the accumulation steps (see docs/speed.md).
        logger.warning(
            "standard MLM head with gradient_accumulation_steps=%d: transformers does not scale this model's loss "
            "by the accumulation steps; prefer --masked_only_prediction true",
            gradient_accumulation_steps,
        )
    return active
