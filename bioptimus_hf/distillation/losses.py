"""The distillation losses, each a function of plain tensors (hand-checked in tests/test_distillation_losses.py).

Output losses take the logits of the masked positions only, the rows the masked-only MLM head
(:mod:`bioptimus_hf.pretraining.masked_lm`) returns for student and teacher alike (softmax is over each row's
vocabulary, so the rows kept are unchanged). Representation losses take ``(batch, seq, hidden)`` states or
``(batch, heads, seq, seq)`` attention maps and average over real (non-padding) tokens. All are per-batch means;
:mod:`~bioptimus_hf.distillation.recipes` says what each one is.
"""

from __future__ import annotations

from typing import Callable, Mapping, Sequence

import torch
import torch.nn.functional as F


def kl_loss(student_logits: torch.Tensor, teacher_logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """KL(p_teacher ‖ p_student) at temperature T, averaged over rows, times T² (DistilBERT's scaling, which keeps
    the gradient's size independent of T)."""
    student = F.log_softmax(student_logits.float() / temperature, dim=-1)
    teacher = F.log_softmax(teacher_logits.float() / temperature, dim=-1)
    return F.kl_div(student, teacher, reduction="batchmean", log_target=True) * temperature**2


def soft_cross_entropy(student_logits: torch.Tensor, teacher_logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """−Σ_v p_teacher(v) log p_student(v) at temperature T, averaged over rows (TinyBERT's prediction loss)."""
    teacher = F.softmax(teacher_logits.float() / temperature, dim=-1)
    student = F.log_softmax(student_logits.float() / temperature, dim=-1)
    return -(teacher * student).sum(dim=-1).mean()


def _real_tokens(states: torch.Tensor, attention_mask: torch.Tensor | None) -> torch.Tensor:
    """``(batch, seq, ...)`` -> ``(real tokens, ...)``."""
    if attention_mask is None:
        return states.reshape(-1, *states.shape[2:])
    return states[attention_mask.to(states.device).bool()]


def cosine_loss(
    student_hidden: torch.Tensor, teacher_hidden: torch.Tensor, attention_mask: torch.Tensor | None
) -> torch.Tensor:
    """Mean over real tokens of 1 − cos(student, teacher) (``CosineEmbeddingLoss`` with target 1, DistilBERT)."""
    student = _real_tokens(student_hidden, attention_mask).float()
    teacher = _real_tokens(teacher_hidden, attention_mask).float()
    target = student.new_ones(student.shape[0])
    return F.cosine_embedding_loss(student, teacher, target, reduction="mean")


def hidden_mse(
    student_hidden: torch.Tensor, teacher_hidden: torch.Tensor, attention_mask: torch.Tensor | None
) -> torch.Tensor:
    """MSE over real tokens and hidden units (both states of the same width: project the student's first)."""
    return F.mse_loss(
        _real_tokens(student_hidden, attention_mask).float(), _real_tokens(teacher_hidden, attention_mask).float()
    )


def attention_mse(
    student_attention: torch.Tensor, teacher_attention: torch.Tensor, attention_mask: torch.Tensor | None
) -> torch.Tensor:
    """MSE of ``(batch, heads, query, key)`` attention maps over heads, keys and real query positions (padded keys
    have probability 0 in both models)."""
    student = _real_tokens(student_attention.transpose(1, 2), attention_mask).float()
    teacher = _real_tokens(teacher_attention.transpose(1, 2), attention_mask).float()
    return F.mse_loss(student, teacher)


def aligned_layers_loss(
    loss: Callable[..., torch.Tensor],
    student_layers: Sequence[torch.Tensor],
    teacher_layers: Sequence[torch.Tensor],
    layer_map: Sequence[int],
    attention_mask: torch.Tensor | None,
) -> torch.Tensor:
    """Σ_l loss(student layer l, teacher layer g(l)) over the student's layers (TinyBERT sums over layers)."""
    return sum(loss(student_layers[l], teacher_layers[g], attention_mask) for l, g in enumerate(layer_map))


def distillation_losses(
    weights: Mapping[str, float],
    temperature: float,
    layer_map: Sequence[int],
    student,
    teacher,
    attention_mask: torch.Tensor | None,
) -> dict[str, torch.Tensor]:
    """Every loss with a positive weight, from the masked-only outputs of the student and the teacher (``loss``,
    ``logits``, ``hidden_states``, ``attentions``, ``projected_hidden_states``); student layer ``l`` is compared with
    teacher layer ``layer_map[l]`` (0-based; ``hidden_states[l + 1]`` is layer ``l``'s output)."""
    active = {name for name, weight in weights.items() if weight > 0}
    losses: dict[str, torch.Tensor] = {}
    if "mlm" in active:
        losses["mlm"] = student.loss
    if "kl" in active:
        losses["kl"] = kl_loss(student.logits, teacher.logits, temperature)
    if "soft_ce" in active:
        losses["soft_ce"] = soft_cross_entropy(student.logits, teacher.logits, temperature)
    if active & {"cos", "hidden", "embedding"}:
        states = student.get("projected_hidden_states") or student.hidden_states
        if "cos" in active:
            losses["cos"] = cosine_loss(states[-1], teacher.hidden_states[-1], attention_mask)
        if "embedding" in active:
            losses["embedding"] = hidden_mse(states[0], teacher.hidden_states[0], attention_mask)
        if "hidden" in active:
            losses["hidden"] = aligned_layers_loss(
                hidden_mse, states[1:], teacher.hidden_states[1:], layer_map, attention_mask
            )
    if "attention" in active:
        losses["attention"] = aligned_layers_loss(
            attention_mse, student.attentions, teacher.attentions, layer_map, attention_mask
        )
    return losses


def total_loss(weights: Mapping[str, float], losses: Mapping[str, torch.Tensor]) -> torch.Tensor:
    return sum(weights[name] * value for name, value in losses.items())
