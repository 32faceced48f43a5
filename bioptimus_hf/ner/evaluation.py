"""Entity-level evaluation: predictions in any training scheme are decoded to spans and scored with
seqeval against the gold spans of the original files, so numbers are comparable across schemes."""

from __future__ import annotations

from typing import Dict, List, Sequence

import numpy as np
from seqeval.metrics import classification_report, f1_score, precision_score, recall_score

from .conll import Sentence
from .encoding import EncodedSplit
from .schemes import Span, spans_to_tags, tags_to_spans
from .windows import merge_window_predictions


def predicted_spans(
    encoded: EncodedSplit, token_predictions: np.ndarray, id2label: Dict[int, str], scheme: str
) -> List[List[Span]]:
    """Merge window predictions (label ids per token) and decode each sentence into spans."""
    outside = next(i for i, label in id2label.items() if label == "O")
    per_word = merge_window_predictions(encoded.windows, token_predictions, encoded.sentence_lengths, outside)
    return [tags_to_spans([id2label[int(i)] for i in ids], scheme) for ids in per_word]


def span_scores(sentences: Sequence[Sentence], predictions: Sequence[List[Span]]) -> Dict[str, float]:
    """seqeval entity-level micro precision/recall/F1 (strict IOB2 from spans on both sides)."""
    gold = [spans_to_tags(s.spans, len(s.tokens), "BIO") for s in sentences]
    predicted = [spans_to_tags(p, len(s.tokens), "BIO") for s, p in zip(sentences, predictions)]
    return {
        "precision": float(precision_score(gold, predicted, zero_division=0)),
        "recall": float(recall_score(gold, predicted, zero_division=0)),
        "f1": float(f1_score(gold, predicted, zero_division=0)),
        "gold_entities": sum(len(s.spans) for s in sentences),
        "predicted_entities": sum(len(p) for p in predictions),
    }


def span_report(sentences: Sequence[Sentence], predictions: Sequence[List[Span]]) -> str:
    gold = [spans_to_tags(s.spans, len(s.tokens), "BIO") for s in sentences]
    predicted = [spans_to_tags(p, len(s.tokens), "BIO") for s, p in zip(sentences, predictions)]
    return classification_report(gold, predicted, digits=4, zero_division=0)


def build_compute_metrics(encoded: EncodedSplit, sentences: Sequence[Sentence], id2label: Dict[int, str], scheme: str):
    """A Trainer ``compute_metrics`` for one fixed evaluation split (the Trainer keeps its order)."""

    def compute_metrics(eval_prediction) -> Dict[str, float]:
        predictions = eval_prediction.predictions
        if predictions.ndim == 3:  # raw logits
            predictions = predictions.argmax(-1)
        return span_scores(sentences, predicted_spans(encoded, predictions, id2label, scheme))

    return compute_metrics


def argmax_logits(logits, labels):
    """``preprocess_logits_for_metrics``: keep label ids, not logits, to save evaluation memory."""
    if isinstance(logits, tuple):
        logits = logits[0]
    return logits.argmax(dim=-1)
