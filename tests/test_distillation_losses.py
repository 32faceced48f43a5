"""Distillation losses (bioptimus_hf.distillation.losses) against hand computations on tiny batches, and the KL of
the masked-only heads against the full-softmax KL at the masked positions."""

import math

import pytest
import torch
from transformers import BertConfig, BertForMaskedLM

from bioptimus_hf.distillation.losses import (
    aligned_layers_loss,
    attention_mse,
    cosine_loss,
    hidden_mse,
    kl_loss,
    soft_cross_entropy,
)
from bioptimus_hf.pretraining.masked_lm import enable_masked_only_prediction


STUDENT_LOGITS = [[1.0, 2.0, 0.5], [0.0, -1.0, 3.0]]
TEACHER_LOGITS = [[2.0, 0.0, 1.0], [1.0, 1.0, 1.0]]


def softmax(row, temperature):
    exps = [math.exp(x / temperature) for x in row]
    return [e / sum(exps) for e in exps]


@pytest.mark.parametrize("temperature", [1.0, 2.0])
def test_kl_and_soft_cross_entropy_by_hand(temperature):
    kl_rows, ce_rows = [], []
    for s_row, t_row in zip(STUDENT_LOGITS, TEACHER_LOGITS):
        p_s, p_t = softmax(s_row, temperature), softmax(t_row, temperature)
        kl_rows.append(sum(t * (math.log(t) - math.log(s)) for s, t in zip(p_s, p_t)))
        ce_rows.append(-sum(t * math.log(s) for s, t in zip(p_s, p_t)))
    student, teacher = torch.tensor(STUDENT_LOGITS), torch.tensor(TEACHER_LOGITS)
    expected_kl = sum(kl_rows) / 2 * temperature**2  # mean over rows, DistilBERT's T² scaling
    assert kl_loss(student, teacher, temperature).item() == pytest.approx(expected_kl, rel=1e-6)
    assert soft_cross_entropy(student, teacher, temperature).item() == pytest.approx(sum(ce_rows) / 2, rel=1e-6)
    # Same distributions: no divergence.
    assert kl_loss(teacher, teacher, temperature).item() == pytest.approx(0.0, abs=1e-7)


def test_representation_losses_by_hand_skip_padding():
    # Two sequences of 3 positions; the second has one padding position whose states must not count.
    student = torch.tensor([[[1.0, 0.0], [0.0, 2.0], [1.0, 1.0]], [[3.0, 4.0], [1.0, -1.0], [50.0, 50.0]]])
    teacher = torch.tensor([[[1.0, 1.0], [0.0, 1.0], [2.0, 0.0]], [[4.0, 3.0], [-1.0, 1.0], [-9.0, 0.0]]])
    mask = torch.tensor([[1, 1, 1], [1, 1, 0]])
    pairs = [((1, 0), (1, 1)), ((0, 2), (0, 1)), ((1, 1), (2, 0)), ((3, 4), (4, 3)), ((1, -1), (-1, 1))]

    def cos(a, b):
        return (a[0] * b[0] + a[1] * b[1]) / (math.hypot(*a) * math.hypot(*b))

    assert cosine_loss(student, teacher, mask).item() == pytest.approx(
        sum(1 - cos(a, b) for a, b in pairs) / len(pairs), rel=1e-6
    )
    squared = [(x - y) ** 2 for a, b in pairs for x, y in zip(a, b)]
    assert hidden_mse(student, teacher, mask).item() == pytest.approx(sum(squared) / len(squared), rel=1e-6)


def test_attention_mse_by_hand_and_layer_sum():
    # (batch 1, heads 2, query 2, key 2); the second query position is padding.
    student = torch.tensor([[[[0.5, 0.5], [0.9, 0.1]], [[1.0, 0.0], [0.3, 0.7]]]])
    teacher = torch.tensor([[[[0.7, 0.3], [0.0, 1.0]], [[0.6, 0.4], [0.3, 0.7]]]])
    mask = torch.tensor([[1, 0]])
    kept = [(0.5, 0.7), (0.5, 0.3), (1.0, 0.6), (0.0, 0.4)]  # both heads, query 0, both keys
    expected = sum((a - b) ** 2 for a, b in kept) / len(kept)
    assert attention_mse(student, teacher, mask).item() == pytest.approx(expected, rel=1e-6)
    # Student layer l against teacher layer g(l), summed over l: with g = (0, 0) layer 0 matches (0) and layer 1
    # is compared with teacher layer 0; the identity map would compare equal maps only.
    student_layers, teacher_layers = [teacher, student], [teacher, student]
    summed = aligned_layers_loss(attention_mse, student_layers, teacher_layers, [0, 0], mask)
    assert summed.item() == pytest.approx(expected, rel=1e-6)
    assert aligned_layers_loss(attention_mse, student_layers, teacher_layers, [0, 1], mask).item() == 0.0
    both = aligned_layers_loss(attention_mse, [student, student], teacher_layers, [0, 0], mask)
    assert both.item() == pytest.approx(2 * expected, rel=1e-6)  # a sum over layers, not a mean


def test_kl_of_masked_only_heads_equals_full_softmax_kl_at_masked_positions():
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=40, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32
    )
    teacher, student = BertForMaskedLM(config).eval(), BertForMaskedLM(config).eval()
    input_ids = torch.randint(5, 40, (3, 9))
    attention_mask = torch.ones_like(input_ids)
    attention_mask[2, 6:] = 0
    labels = torch.full_like(input_ids, -100)
    for row, col in [(0, 1), (0, 7), (1, 4), (2, 0), (2, 5)]:
        labels[row, col] = input_ids[row, col]
    with torch.no_grad():
        full_s = student(input_ids=input_ids, attention_mask=attention_mask).logits  # every position
        full_t = teacher(input_ids=input_ids, attention_mask=attention_mask).logits
        masked = labels != -100
        per_position = []
        for row, col in masked.nonzero().tolist():  # full softmax at each masked position, by hand
            log_p_s = torch.log_softmax(full_s[row, col] / 2.0, -1)
            log_p_t = torch.log_softmax(full_t[row, col] / 2.0, -1)
            per_position.append(float((log_p_t.exp() * (log_p_t - log_p_s)).sum()))
        expected = sum(per_position) / len(per_position) * 4.0
        enable_masked_only_prediction(student)
        enable_masked_only_prediction(teacher)
        out_s = student(input_ids=input_ids, attention_mask=attention_mask, labels=labels)
        out_t = teacher(input_ids=input_ids, attention_mask=attention_mask, labels=labels)
    assert out_s.logits.shape == (5, 40)  # the vocabulary projection ran at the 5 masked positions only
    assert kl_loss(out_s.logits, out_t.logits, 2.0).item() == pytest.approx(expected, rel=1e-5)
