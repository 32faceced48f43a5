"""Each BLURB task type's metric, as BLURB computes it (``../shared/data/blurb/README.md``): relation extraction,
micro-F1 over the classes but the negative one (``f1``); sentence similarity, Pearson's r (``pearson``); HoC,
micro-F1 over document x label cells, a document's labels the union of its rows' (``f1``); question answering,
accuracy. Each scorer returns a dict of floats whose key ``TaskType.metric`` is BLURB's number.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np

from .tasks import (
    DOCUMENT_CLASSIFICATION,
    DOCUMENT_ID_FIELD,
    QUESTION_ANSWERING,
    RELATION_EXTRACTION,
    SENTENCE_SIMILARITY,
    TaskType,
)


NEGATIVE_LABEL_NAMES = ("0", "false")  # also any label ending in "-false" (DDI-false)


def negative_label_of(labels: Sequence[str], given: str | None = None) -> str:
    """The relation-extraction class the metric leaves out: ``given`` (``--negative_label``), else the one label
    named ``0``/``false``/``*-false``."""
    if given is not None:
        if given not in labels:
            raise ValueError(f"--negative_label {given!r} is not a label of the training file ({', '.join(labels)})")
        return given
    found = [label for label in labels if label.lower() in NEGATIVE_LABEL_NAMES or label.lower().endswith("-false")]
    if len(found) != 1:
        raise ValueError(
            f"cannot tell the negative class among the labels {list(labels)}: name it with "
            "--negative_label (BLURB's relation-extraction F1 leaves it out)"
        )
    return found[0]


def relation_extraction_scores(
    gold: Sequence[str], predicted: Sequence[str], labels: Sequence[str], negative_label: str
) -> dict[str, float]:
    """Micro precision, recall and F1 over ``labels`` without ``negative_label``."""
    from sklearn.metrics import precision_recall_fscore_support

    positive = [label for label in labels if label != negative_label]
    precision, recall, f1, _ = precision_recall_fscore_support(
        gold, predicted, labels=positive, average="micro", zero_division=0
    )
    return {"f1": float(f1), "precision": float(precision), "recall": float(recall)}


def sentence_similarity_scores(gold: Sequence[float], predicted: Sequence[float]) -> dict[str, float]:
    """Pearson's r (NaN when either side is constant, where r is undefined)."""
    from scipy.stats import ConstantInputWarning, pearsonr

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConstantInputWarning)
        return {
            "pearson": float(
                pearsonr(np.asarray(gold, dtype=np.float64), np.asarray(predicted, dtype=np.float64)).statistic
            )
        }


def document_classification_scores(
    gold: np.ndarray, predicted: np.ndarray, document_ids: Sequence[str]
) -> dict[str, float]:
    """Micro precision, recall and F1 over document x label cells; ``gold``/``predicted`` are 0/1 arrays of shape
    (rows, labels), a document's labels the union (logical OR) of its rows'."""
    from sklearn.metrics import precision_recall_fscore_support

    documents = {document: index for index, document in enumerate(dict.fromkeys(document_ids))}
    rows_document = np.array([documents[document] for document in document_ids])
    gold_documents = np.zeros((len(documents), gold.shape[1]), dtype=bool)
    predicted_documents = np.zeros_like(gold_documents)
    np.logical_or.at(gold_documents, rows_document, np.asarray(gold, dtype=bool))
    np.logical_or.at(predicted_documents, rows_document, np.asarray(predicted, dtype=bool))
    precision, recall, f1, _ = precision_recall_fscore_support(
        gold_documents, predicted_documents, average="micro", zero_division=0
    )
    return {"f1": float(f1), "precision": float(precision), "recall": float(recall)}


def question_answering_scores(gold: Sequence[str], predicted: Sequence[str]) -> dict[str, float]:
    from sklearn.metrics import accuracy_score

    return {"accuracy": float(accuracy_score(gold, predicted))}


METRIC_DESCRIPTIONS = {  # BLURB's metric of each task type in words (recorded in all_results.json)
    RELATION_EXTRACTION.name: "micro-F1 over the relation classes except {negative!r}",
    SENTENCE_SIMILARITY.name: "Pearson correlation of predicted and gold scores",
    DOCUMENT_CLASSIFICATION.name: "micro-F1 over documents x labels, a document's labels the union of its rows'",
    QUESTION_ANSWERING.name: "accuracy",
}


def metric_description(task: TaskType, negative_label: str | None = None) -> str:
    return METRIC_DESCRIPTIONS[task.name].format(negative=negative_label)


def score(
    task: TaskType, rows: Sequence[dict], predicted: Sequence, labels: Sequence[str], negative_label: str | None = None
) -> dict[str, float]:
    """``task``'s scores of ``predicted`` (one prediction per row, in label space: a class, a score, or a list of
    classes) against the gold labels of ``rows``."""
    gold = [row[task.label_field] for row in rows]
    if task is RELATION_EXTRACTION:
        return relation_extraction_scores(gold, predicted, labels, negative_label)
    if task is SENTENCE_SIMILARITY:
        return sentence_similarity_scores(gold, predicted)
    if task is DOCUMENT_CLASSIFICATION:
        index = {label: i for i, label in enumerate(labels)}

        def indicator(label_lists):
            array = np.zeros((len(label_lists), len(labels)), dtype=bool)
            for row, label_list in enumerate(label_lists):
                array[row, [index[label] for label in label_list]] = True
            return array

        # rows without a document id are documents of their own
        documents = [row.get(DOCUMENT_ID_FIELD, f"row {i}") for i, row in enumerate(rows)]
        return document_classification_scores(indicator(gold), indicator(predicted), documents)
    if task is QUESTION_ANSWERING:
        return question_answering_scores(gold, predicted)
    raise ValueError(f"no metric for task type {task.name!r}")
