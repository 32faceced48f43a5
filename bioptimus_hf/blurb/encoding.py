"""Rows to model inputs and logits back to predictions, for every task type.

Inputs are ``[CLS] text [SEP]`` or ``[CLS] text_a [SEP] text_b [SEP]`` (the tokenizer's own special tokens),
truncated to ``max_length``; the model classifies from the first token's encoding (``[CLS]`` pooling, as the
PubMedBERT paper's standard models). Targets: a class id (single-label), a float (regression) or a 0/1 float
vector over the classes (multi-label, as transformers' ``BCEWithLogitsLoss`` wants).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .tasks import TaskType


def encode_rows(tokenizer, rows: Sequence[dict], task: TaskType, labels: Sequence[str], max_length: int):
    """A ``datasets.Dataset`` of ``input_ids`` (and the tokenizer's other outputs) and ``labels``, in row order."""
    from datasets import Dataset

    texts = [[row[field] for row in rows] for field in task.text_fields]
    # a pair loses tokens from its longer text first: a question's context (never the error of "only_second"
    # when a question alone is too long)
    encoded = dict(tokenizer(*texts, truncation="longest_first", max_length=max_length))
    gold = [row[task.label_field] for row in rows]
    if task.problem_type == "regression":
        targets = [float(value) for value in gold]
    elif task.problem_type == "multi_label_classification":
        targets = [[float(label in set(row_labels)) for label in labels] for row_labels in gold]
    else:
        index = {label: i for i, label in enumerate(labels)}
        targets = [index[label] for label in gold]
    return Dataset.from_dict({**encoded, "labels": targets})


def decode_logits(task: TaskType, logits: np.ndarray, labels: Sequence[str]) -> list:
    """One prediction per row in label space: a class (argmax), a score, or the classes with a positive logit
    (sigmoid > 0.5)."""
    logits = np.asarray(logits)
    if task.problem_type == "regression":
        return [float(value) for value in logits.reshape(len(logits), -1)[:, 0]]
    if task.problem_type == "multi_label_classification":
        return [[labels[i] for i in np.flatnonzero(row > 0)] for row in logits]
    return [labels[i] for i in logits.argmax(axis=-1)]
