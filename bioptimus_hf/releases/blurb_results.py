"""The BLURB table as a release shows it: ``blurb_results.json`` (written by ``bioptimus blurb``, read here), its
markdown table and its Hub ``model-index`` entries, each result under its own task type and dataset. Numbers are
percentages; ``score`` is the BLURB score over the task types present; beside each row the markdown shows the
published BERT-base-uncased and PubMedBERT figures (:data:`PUBLISHED_SCORES`), and a ``--search`` row its grid."""

from __future__ import annotations

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


# The published test scores (0-100) of two models on BLURB's thirteen datasets: Gu et al. 2021, Table 6 ("BERT
# uncased" and "PubMedBERT uncased"), each the mean of ten fine-tuning runs (BIOSSES, BioASQ, PubMedQA) or five
# (the others); the paper's BLURB scores over all thirteen are 75.99 and 81.10.
PUBLISHED_SOURCE = "Gu et al. 2021 (PubMedBERT), Table 6"
PUBLISHED_SCORES = {
    "BERT-base-uncased": {
        "BC5-chem": 89.25, "BC5-disease": 81.44, "NCBI-disease": 85.67, "BC2GM": 80.90, "JNLPBA": 78.63,
        "EBM PICO": 72.34, "ChemProt": 71.86, "DDI": 80.04, "GAD": 77.72, "BIOSSES": 82.68, "HoC": 80.20,
        "PubMedQA": 51.62, "BioASQ": 70.36,
    },
    "PubMedBERT": {
        "BC5-chem": 93.33, "BC5-disease": 85.62, "NCBI-disease": 87.82, "BC2GM": 84.52, "JNLPBA": 80.06,
        "EBM PICO": 73.38, "ChemProt": 77.24, "DDI": 82.36, "GAD": 82.34, "BIOSSES": 92.30, "HoC": 82.32,
        "PubMedQA": 55.84, "BioASQ": 87.56,
    },
}  # fmt: skip
# Directory names of the same sets (BLURB's own file names, the -IOB copies of ../shared/data/ner).
_PUBLISHED_ALIASES = {"bc5cdrchem": "BC5-chem", "bc5cdrdisease": "BC5-disease", "ebmnlp": "EBM PICO"}


def _name_key(name: str) -> str:
    key = "".join(c for c in name.lower() if c.isalnum())
    return key.removesuffix("iob") if key.endswith("iob") and len(key) > 3 else key


_PUBLISHED_NAMES = {_name_key(name): name for name in PUBLISHED_SCORES["PubMedBERT"]} | _PUBLISHED_ALIASES


def published_name(dataset: str) -> str | None:
    """The paper's name of a dataset directory (``BC5CDR-chem-IOB`` -> ``BC5-chem``); None for a set it has not."""
    return _PUBLISHED_NAMES.get(_name_key(dataset))


def published_scores(table: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Per published model, the table's shape filled with the published figures: ``datasets`` (the table's
    dataset -> score, None where the paper has none), ``task_types`` (the mean over the type's datasets of the
    table, None unless each has a figure) and ``score`` (over the table's task types, None unless each has one)."""
    out = {}
    for model, scores in PUBLISHED_SCORES.items():
        datasets = {row["dataset"]: scores.get(published_name(row["dataset"]) or "") for row in table["datasets"]}
        types = {}
        for task_type in table["task_types"]:
            values = [datasets[row["dataset"]] for row in table["datasets"] if row["task_type"] == task_type]
            types[task_type] = None if None in values or not values else sum(values) / len(values)
        score = None if None in types.values() or not types else sum(types.values()) / len(types)
        out[model] = {"datasets": datasets, "task_types": types, "score": score}
    return out


def _mean_std(mean: float, std: float | None) -> str:
    return f"{mean:.2f} ± {std:.2f}" if std is not None else f"{mean:.2f}"


def _published_cells(values: list[float | None], bold: bool = False) -> str:
    cells = ["–" if value is None else (f"**{value:.2f}**" if bold else f"{value:.2f}") for value in values]
    return " | ".join(cells) + " |"


def blurb_markdown(table: Mapping[str, Any]) -> str:
    """Every dataset's mean ± std over seeds, each task type's average, the BLURB score and the absent types; beside
    each, the published BERT-base-uncased and PubMedBERT figures over the same datasets (:data:`PUBLISHED_SCORES`)."""
    seeds = ", ".join(map(str, table.get("seeds", [])))
    published = published_scores(table)
    models = list(published)
    lines = [
        "| task type | dataset | metric | test (mean ± std) | " + " | ".join(f"{m}, published" for m in models) + " |",
        "|---|---|---|---:|" + "---:|" * len(models),
    ]
    for task_type, entry in table["task_types"].items():
        for row in (r for r in table["datasets"] if r["task_type"] == task_type):
            lines.append(
                f"| {HUB_TASKS[task_type][1]} | {row['dataset']} | {HUB_METRICS[row['metric']][1]} | "
                f"{_mean_std(row['mean'], row.get('std'))} | "
                + _published_cells([published[m]["datasets"][row["dataset"]] for m in models])
            )
        lines.append(
            f"| **{HUB_TASKS[task_type][1]}** | *average* | | **{entry['score']:.2f}** | "
            + _published_cells([published[m]["task_types"][task_type] for m in models], bold=True)
        )
    types = len(table["task_types"])
    lines.append(
        f"| **BLURB score** | *average of {types} task type{'s' if types != 1 else ''}* | | **{table['score']:.2f}** | "
        + _published_cells([published[m]["score"] for m in models], bold=True)
    )
    absent = ", ".join(HUB_TASKS[t][1] for t in table["absent_task_types"]) or "none"
    note = (
        f"\nTest scores in %, seeds {seeds}. Task types absent: {absent}; a score over fewer task types or "
        "datasets than BLURB's is not comparable with a published BLURB score. Published: "
        f"{PUBLISHED_SOURCE} (means of ten runs for BIOSSES, BioASQ and PubMedQA, five for the others), averaged "
        "over the same datasets as this table (– where the paper has no figure for a dataset).\n"
    )
    return "\n".join(lines) + "\n" + note + search_markdown(table)


def _score(mean: float | None, std: float | None = None) -> str:
    if mean is None or mean != mean:  # none, or not a number (a constant prediction's Pearson r)
        return "–"
    return _mean_std(mean, std)


def search_markdown(table: Mapping[str, Any]) -> str:
    """With ``bioptimus blurb --search`` (rows with a ``search`` entry), every grid point of each dataset: its
    settings, dev mean ± std and test mean over the seeds, the chosen one marked; else nothing."""
    rows = [row for row in table["datasets"] if row.get("search")]
    if not rows:
        return ""
    lines = [
        "| dataset | learning rate | batch | epochs | dev (mean ± std) | test (mean) | chosen |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    for row in rows:
        search = row["search"]
        for point in search["points"]:
            lines.append(
                f"| {row['dataset']} | {point['learning_rate']:g} | {point['per_device_train_batch_size']} | "
                f"{point['num_train_epochs']:g} | {_score(point['dev_mean'], point['dev_std'])} | "
                f"{_score(point['test_mean'])} | {'✓' if point['point'] == search['choice'] else ''} |"
            )
    chosen_by = rows[0]["search"]["chosen_by"]
    return f"\n**Search on dev.** Each dataset's row above is its test at the point chosen by {chosen_by}:\n\n" + (
        "\n".join(lines) + "\n"
    )


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
