"""The BLURB table as a release shows it: ``blurb_results.json`` (written by ``bioptimus blurb``, read here), its
markdown table and its Hub ``model-index`` entries, each result under its own task type and dataset.

The table's numbers are percentages (0-100). Each dataset row holds its metric, every seed's test score, their
mean and sample standard deviation; each task type its average over its datasets; ``score`` is the BLURB score
over the task types present (``absent_task_types`` names the others). Task types are BLURB's names (``ner``,
``relation_extraction``, ...); :data:`HUB_TASKS` says how the Hub names each.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..utils.files import read_json


BLURB_RESULTS_FILE = "blurb_results.json"
BLURB_TABLE_FILE = "blurb_results.md"
# BLURB task type -> (the Hub's task id, the task's name on the card); PubMedQA-style question answering
# classifies an answer (yes/no/maybe), so it is text classification to the Hub, not extractive QA
HUB_TASKS = {
    "ner": ("token-classification", "Named Entity Recognition"),
    "pico": ("token-classification", "PICO Extraction"),
    "relation_extraction": ("text-classification", "Relation Extraction"),
    "sentence_similarity": ("sentence-similarity", "Sentence Similarity"),
    "document_classification": ("text-classification", "Document Classification"),
    "question_answering": ("text-classification", "Question Answering"),
}
# a result's metric -> (the Hub's metric type, its name on the card)
HUB_METRICS = {"f1": ("f1", "F1"), "pearson": ("pearsonr", "Pearson r"), "accuracy": ("accuracy", "Accuracy")}


def load_blurb_table(source: Any) -> dict[str, Any] | None:
    """The table of a ``blurb_results.json`` file, a directory holding one, or a dict already read; None for None."""
    if source is None:
        return None
    if isinstance(source, Mapping):
        table, where = dict(source), "blurb results"
    else:
        path = Path(source)
        if path.is_dir():
            path = path / BLURB_RESULTS_FILE
        table, where = read_json(path, f"BLURB results file not found: {path}"), str(path)
    for key in ("datasets", "task_types", "score", "absent_task_types"):
        if key not in table:
            raise ValueError(f"{where}: no {key!r}: not a {BLURB_RESULTS_FILE}")
    for row in table["datasets"]:
        if row.get("task_type") not in HUB_TASKS or row.get("metric") not in HUB_METRICS:
            raise ValueError(
                f"{where}: dataset {row.get('dataset')!r} has task type {row.get('task_type')!r} and "
                f"metric {row.get('metric')!r}; expected one of {', '.join(HUB_TASKS)} and "
                f"{', '.join(HUB_METRICS)}"
            )
    return table


def _mean_std(mean: float, std: float | None) -> str:
    return f"{mean:.2f} ± {std:.2f}" if std is not None else f"{mean:.2f}"


def blurb_markdown(table: Mapping[str, Any]) -> str:
    """Every dataset's mean ± std over seeds, each task type's average, the BLURB score and the absent types."""
    seeds = ", ".join(map(str, table.get("seeds", [])))
    lines = ["| task type | dataset | metric | test (mean ± std) |", "|---|---|---|---:|"]
    for task_type, entry in table["task_types"].items():
        for row in (r for r in table["datasets"] if r["task_type"] == task_type):
            lines.append(
                f"| {HUB_TASKS[task_type][1]} | {row['dataset']} | {HUB_METRICS[row['metric']][1]} | "
                f"{_mean_std(row['mean'], row.get('std'))} |"
            )
        lines.append(f"| **{HUB_TASKS[task_type][1]}** | *average* | | **{entry['score']:.2f}** |")
    types = len(table["task_types"])
    lines.append(
        f"| **BLURB score** | *average of {types} task type{'s' if types != 1 else ''}* | | **{table['score']:.2f}** |"
    )
    absent = ", ".join(HUB_TASKS[t][1] for t in table["absent_task_types"]) or "none"
    note = (
        f"\nTest scores in %, seeds {seeds}. Task types absent: {absent}; a score over fewer task types or "
        "datasets than BLURB's is not comparable with a published BLURB score.\n"
    )
    return "\n".join(lines) + "\n" + note


def blurb_eval_results(table: Mapping[str, Any] | None) -> list:
    """``huggingface_hub.EvalResult`` entries: each dataset's test mean (a fraction, 4 places) under its task type."""
    from huggingface_hub import EvalResult

    if not table:
        return []
    entries = []
    for row in table["datasets"]:
        task_type, task_name = HUB_TASKS[row["task_type"]]
        metric_type, metric_name = HUB_METRICS[row["metric"]]
        seeds = len(row.get("per_seed", {}))
        entries.append(
            EvalResult(
                task_type=task_type,
                task_name=task_name,
                dataset_type=row.get("dataset_id") or row["dataset"],
                dataset_name=row["dataset"],
                dataset_split="test",
                metric_type=metric_type,
                metric_value=round(row["mean"] / 100, 4),
                metric_name=f"Test {metric_name}" + (f", mean of {seeds} seeds" if seeds else ""),
            )
        )
    return entries


def blurb_results_path(directory: str | os.PathLike) -> str:
    return os.path.join(directory, BLURB_RESULTS_FILE)
