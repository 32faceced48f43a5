"""The BLURB task types beyond NER: what one row holds, how it is fed to the model, what is predicted.

A task type is recognised from the fields of a data file's rows (:func:`task_type_of_fields`), so one
command serves every dataset of a type: DDI, GAD and ChemProt (relation extraction), BIOSSES (sentence
similarity), HoC (document classification), PubMedQA and BioASQ (question answering). The metric of each
type is in :mod:`bioptimus_hf.blurb.metrics`; its default fine-tuning recipe in
:mod:`bioptimus_hf.blurb.blurb_config`.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TaskType:
    name: str
    text_fields: tuple[str, ...]  # one field: a single text; two: a pair joined by [SEP]
    label_field: str
    problem_type: str  # transformers' PretrainedConfig.problem_type
    metric: str  # the key of BLURB's metric in the scores of metrics.py


RELATION_EXTRACTION = TaskType("relation_extraction", ("sentence",), "label", "single_label_classification", "f1")
SENTENCE_SIMILARITY = TaskType("sentence_similarity", ("sentence1", "sentence2"), "score", "regression", "pearson")
DOCUMENT_CLASSIFICATION = TaskType(
    "document_classification", ("sentence",), "labels", "multi_label_classification", "f1"
)
QUESTION_ANSWERING = TaskType(
    "question_answering", ("question", "context"), "label", "single_label_classification", "accuracy"
)

TASK_TYPES = {
    task.name: task for task in (RELATION_EXTRACTION, SENTENCE_SIMILARITY, DOCUMENT_CLASSIFICATION, QUESTION_ANSWERING)
}
# Rows of a document-classification file that share this field are one document (HoC: the PMID); the metric
# is computed per document. Without it every row is its own document.
DOCUMENT_ID_FIELD = "document_id"
ID_FIELD = "id"


def get_task_type(name: str) -> TaskType:
    if name not in TASK_TYPES:
        raise ValueError(f"--task_type {name!r}: expected one of {', '.join(TASK_TYPES)}")
    return TASK_TYPES[name]


def task_type_of_fields(fields) -> TaskType | None:
    """The task type whose text and label fields a row has (pairs first: a pair row may also hold
    ``sentence``); None when no type fits."""
    fields = set(fields)
    for task in (SENTENCE_SIMILARITY, QUESTION_ANSWERING, DOCUMENT_CLASSIFICATION, RELATION_EXTRACTION):
        if set(task.text_fields) | {task.label_field} <= fields:
            return task
    return None
