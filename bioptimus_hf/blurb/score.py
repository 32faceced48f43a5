"""The BLURB score over the task types present: each dataset's test score (0-100), averaged within its task type,
then over the types (Gu et al. 2021, section 4: "the macro average of average test results for each of the six
tasks"). Absent types are named: a score over fewer types or datasets than BLURB's is not comparable with a
published BLURB score.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from statistics import mean
from typing import Any

from ..releases.ner_results import RESULTS_FILE
from ..utils.files import read_json
from .tasks import DOCUMENT_CLASSIFICATION, QUESTION_ANSWERING, RELATION_EXTRACTION, SENTENCE_SIMILARITY


NER, PICO = "ner", "pico"  # token-level types, fine-tuned by bioptimus ner
# BLURB's six task types and their thirteen datasets
BLURB_DATASETS = {
    NER: ("BC5-chem", "BC5-disease", "NCBI-disease", "BC2GM", "JNLPBA"),
    PICO: ("EBM PICO",),
    RELATION_EXTRACTION.name: ("ChemProt", "DDI", "GAD"),
    SENTENCE_SIMILARITY.name: ("BIOSSES",),
    DOCUMENT_CLASSIFICATION.name: ("HoC",),
    QUESTION_ANSWERING.name: ("PubMedQA", "BioASQ"),
}


@dataclass(frozen=True)
class DatasetScore:
    dataset: str
    task_type: str  # a key of BLURB_DATASETS
    score: float  # the test metric as a fraction, as all_results.json holds it


def dataset_score_from_results(results: Mapping[str, Any], source: str = "results") -> DatasetScore:
    """From a ``bioptimus blurb-task`` ``all_results.json`` (``task_type``, ``test_score``) or a ``bioptimus ner``
    one (``test_f1``: NER)."""
    task_type = results.get("task_type", NER)
    key = "test_score" if "task_type" in results else "test_f1"
    if key not in results or "dataset" not in results:
        raise ValueError(
            f"{source}: no 'dataset' and {key!r}: not a bioptimus blurb-task or bioptimus ner all_results.json"
        )
    return DatasetScore(results["dataset"], task_type, float(results[key]))


def load_dataset_scores(paths: Iterable[str | os.PathLike]) -> list[DatasetScore]:
    """The scores of ``all_results.json`` files, or of every one under a directory."""
    scores = []
    for path in map(Path, paths):
        files = sorted(path.rglob(RESULTS_FILE)) if path.is_dir() else [path]
        if not files:
            raise FileNotFoundError(f"no {RESULTS_FILE} under {path}")
        scores += [dataset_score_from_results(read_json(file), str(file)) for file in files]
    return scores


def blurb_score(scores: Iterable[DatasetScore]) -> dict[str, Any]:
    """``score`` (0-100) over the task types present, each type's mean and datasets, and ``absent_task_types``."""
    by_type: dict[str, dict[str, float]] = {}
    for item in scores:
        if item.task_type not in BLURB_DATASETS:
            raise ValueError(
                f"{item.dataset}: task type {item.task_type!r} is not one of BLURB's ({', '.join(BLURB_DATASETS)})"
            )
        datasets = by_type.setdefault(item.task_type, {})
        if item.dataset in datasets:
            raise ValueError(f"{item.dataset}: given twice")
        datasets[item.dataset] = 100 * item.score
    if not by_type:
        raise ValueError("no dataset scores: nothing to average")
    types = {
        task_type: {"score": mean(datasets.values()), "datasets": datasets}
        for task_type, datasets in ((t, by_type[t]) for t in BLURB_DATASETS if t in by_type)
    }
    return {
        "score": mean(entry["score"] for entry in types.values()),
        "task_types": types,
        "absent_task_types": [task_type for task_type in BLURB_DATASETS if task_type not in by_type],
    }
