"""Entity-level evaluation: predictions in any training scheme are decoded to spans and scored with seqeval against
the gold spans of the original files, so numbers are comparable across schemes. The same scoring is an ``evaluate``
module shipped in the package (``evaluate.load(SPAN_F1)``, offline), through which ``bioptimus ner``'s Trainer
``compute_metrics`` goes."""

from __future__ import annotations

import os
from typing import Dict, List, Sequence

import numpy as np
from seqeval.metrics import classification_report, f1_score, precision_score, recall_score

from .conll import Sentence
from .encoding import EncodedSplit
from .schemes import Span, spans_to_tags, tags_to_spans
from .windows import merge_window_predictions


# the directory of the span-F1 `evaluate` module: evaluate.load(SPAN_F1)
SPAN_F1 = os.path.join(os.path.dirname(os.path.abspath(__file__)), "metrics", "span_f1")


def predicted_tags(encoded: EncodedSplit, token_predictions: np.ndarray, id2label: Dict[int, str]) -> List[List[str]]:
    """Merge window predictions (label ids per token) into one label per word of each sentence."""
    outside = next(i for i, label in id2label.items() if label == "O")
    per_word = merge_window_predictions(encoded.windows, token_predictions, encoded.sentence_lengths, outside)
    return [[id2label[int(i)] for i in ids] for ids in per_word]


def predicted_spans(
    encoded: EncodedSplit, token_predictions: np.ndarray, id2label: Dict[int, str], scheme: str
) -> List[List[Span]]:
    """Merge window predictions (label ids per token) and decode each sentence into spans."""
    return [tags_to_spans(tags, scheme) for tags in predicted_tags(encoded, token_predictions, id2label)]


def score_spans(
    gold: Sequence[List[Span]], predicted: Sequence[List[Span]], lengths: Sequence[int]
) -> Dict[str, float]:
    """seqeval's entity-level micro precision, recall and F1, both sides written as IOB2 from their spans (of
    sentences of ``lengths`` words)."""
    gold_bio = [spans_to_tags(spans, length, "BIO") for spans, length in zip(gold, lengths)]
    predicted_bio = [spans_to_tags(spans, length, "BIO") for spans, length in zip(predicted, lengths)]
    return {
        "precision": float(precision_score(gold_bio, predicted_bio, zero_division=0)),
        "recall": float(recall_score(gold_bio, predicted_bio, zero_division=0)),
        "f1": float(f1_score(gold_bio, predicted_bio, zero_division=0)),
        "gold_entities": sum(len(spans) for spans in gold),
        "predicted_entities": sum(len(spans) for spans in predicted),
    }


def score_tags(
    predictions: Sequence[Sequence[str]],
    references: Sequence[Sequence[str]],
    scheme: str = "BIO",
    reference_scheme: str | None = None,
) -> Dict[str, float]:
    """:func:`score_spans` of tag sequences, ``predictions`` decoded in ``scheme``, ``references`` in
    ``reference_scheme`` (default: ``scheme``): what the ``evaluate`` module computes."""
    if len(predictions) != len(references):
        raise ValueError(f"{len(predictions)} predicted sentences but {len(references)} reference sentences")
    for index, (predicted, reference) in enumerate(zip(predictions, references)):
        if len(predicted) != len(reference):
            raise ValueError(f"sentence {index}: {len(predicted)} predicted tags but {len(reference)} reference tags")
    return score_spans(
        [tags_to_spans(tags, reference_scheme or scheme) for tags in references],
        [tags_to_spans(tags, scheme) for tags in predictions],
        [len(tags) for tags in references],
    )


def span_scores(sentences: Sequence[Sentence], predictions: Sequence[List[Span]]) -> Dict[str, float]:
    """:func:`score_spans` of predicted spans against the sentences' gold spans."""
    return score_spans([s.spans for s in sentences], predictions, [len(s.tokens) for s in sentences])


def span_report(sentences: Sequence[Sentence], predictions: Sequence[List[Span]]) -> str:
    gold = [spans_to_tags(s.spans, len(s.tokens), "BIO") for s in sentences]
    predicted = [spans_to_tags(p, len(s.tokens), "BIO") for s, p in zip(sentences, predictions)]
    return classification_report(gold, predicted, digits=4, zero_division=0)


def load_span_f1():
    """The span-F1 ``evaluate`` module, in memory (no cache files: every process of a torchrun computes alone)."""
    import evaluate  # imports datasets: only when a metric is built

    return evaluate.load(SPAN_F1, keep_in_memory=True)


def build_compute_metrics(encoded: EncodedSplit, sentences: Sequence[Sentence], id2label: Dict[int, str], scheme: str):
    """A Trainer ``compute_metrics`` for one fixed evaluation split (the Trainer keeps its order): the span-F1
    ``evaluate`` module on the predicted tags (decoded in ``scheme``) against the gold spans written as IOB2."""
    metric = load_span_f1()
    references = [spans_to_tags(s.spans, len(s.tokens), "BIO") for s in sentences]

    def compute_metrics(eval_prediction) -> Dict[str, float]:
        predictions = eval_prediction.predictions
        if predictions.ndim == 3:  # raw logits
            predictions = predictions.argmax(-1)
        return metric.compute(
            predictions=predicted_tags(encoded, predictions, id2label),
            references=references,
            scheme=scheme,
            reference_scheme="BIO",
        )

    return compute_metrics


def argmax_logits(logits, labels):
    """``preprocess_logits_for_metrics``: keep label ids, not logits, to save evaluation memory."""
    if isinstance(logits, tuple):
        logits = logits[0]
    return logits.argmax(dim=-1)
