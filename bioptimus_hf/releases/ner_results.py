"""NER results as a release shows them: :class:`NerResult` (the scores of one model on one dataset, read from
``bioptimus ner``'s ``all_results.json`` or given as a dict) and the Hub ``model-index`` built from them.

The model card, the Hub publisher and ``bioptimus ner``'s ``model_index.json`` go through :func:`eval_results`
(``huggingface_hub``'s ``EvalResult``). ``all_results.json`` is written by :mod:`bioptimus_hf.finetuning.results`;
its name and the keys read here are the contract (docs/ner.md).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from ..utils.dataset_ids import check_dataset_id
from ..utils.files import read_json


RESULTS_FILE = "all_results.json"
METRICS = ("f1", "precision", "recall")


@dataclass
class NerResult:
    """Test-set NER scores of one model on one dataset (means over fine-tuning seeds)."""

    dataset_name: str
    test_f1: float
    test_f1_std: float | None = None
    test_precision: float | None = None
    test_recall: float | None = None
    eval_f1: float | None = None
    seeds: int | None = None
    dataset_id: str | None = None  # a Hub dataset id, when the data has one
    dataset_config: str | None = None
    source: str | None = field(default=None, repr=False)

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any], source: str = "ner_results") -> "NerResult":
        """From an ``all_results.json`` dict (key ``dataset``) or a plain dict (key ``dataset_name``)."""
        name = raw.get("dataset_name", raw.get("dataset"))
        if not isinstance(name, str) or not name:
            raise ValueError(
                f"{source}: NER result needs a 'dataset_name' (or 'dataset') string, got keys {sorted(raw)}"
            )
        if "test_f1" not in raw:
            raise ValueError(f"{source}: NER result for {name!r} has no 'test_f1'")
        seeds = raw.get("seeds", raw.get("num_seeds"))
        if seeds is None and isinstance(raw.get("per_seed"), list):
            seeds = raw["per_seed"]
        seeds = len(seeds) if isinstance(seeds, (list, tuple)) else seeds

        def number(key: str) -> float | None:
            value = raw.get(key)
            if value is None:
                return None
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise ValueError(f"{source}: {key!r} of {name!r} must be a finite number, got {value!r}")
            return float(value)

        scores = {key: number(key) for key in ("test_f1", "test_f1_std", "test_precision", "test_recall", "eval_f1")}
        if not 0.0 <= scores["test_f1"] <= 1.0:
            raise ValueError(f"{source}: 'test_f1' of {name!r} must be a fraction in [0, 1], got {scores['test_f1']}")
        return cls(
            name,
            **scores,
            seeds=int(seeds) if seeds is not None else None,
            dataset_id=check_dataset_id(raw["dataset_id"], source) if raw.get("dataset_id") else None,
            dataset_config=raw.get("dataset_config"),
            source=source,
        )


def load_ner_results(ner_results: Any) -> list[NerResult]:
    """Normalise NER results to a list of :class:`NerResult`: from a :class:`NerResult`, a dict, an
    ``all_results.json``, a directory searched for them, or a list of these. A dataset given twice is an error."""
    if ner_results is None:
        return []
    if isinstance(ner_results, (str, os.PathLike, Mapping, NerResult)):
        ner_results = [ner_results]
    results: list[NerResult] = []
    for item in ner_results:
        if isinstance(item, NerResult):
            results.append(item)
        elif isinstance(item, Mapping):
            results.append(NerResult.from_dict(item))
        elif isinstance(item, (str, os.PathLike)):
            path = Path(item)
            files = sorted(path.rglob(RESULTS_FILE)) if path.is_dir() else [path]
            if not files:
                raise FileNotFoundError(f"no {RESULTS_FILE} under NER results directory {path}")
            for file in files:
                raw = read_json(file, f"NER results file not found: {file}")
                results.append(NerResult.from_dict(raw, source=str(file)))
        else:
            raise TypeError(f"unsupported NER result {item!r}: expected a dict, a NerResult or a path")
    names = [r.dataset_name for r in results]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ValueError(f"NER results given twice for dataset(s) {duplicates}")
    return results


def eval_results(results: Sequence[NerResult]) -> list:
    """``huggingface_hub.EvalResult`` entries (test F1/precision/recall, rounded to 4 places) of the results."""
    from huggingface_hub import EvalResult

    entries = []
    for result in results:
        dataset = dict(
            task_type="token-classification",
            task_name="Named Entity Recognition",
            dataset_type=result.dataset_id or result.dataset_name,
            dataset_name=result.dataset_name,
            dataset_config=result.dataset_config,
            dataset_split="test",
        )
        seeds = f", mean of {result.seeds} seeds" if result.seeds else ""
        for metric in METRICS:
            value = getattr(result, f"test_{metric}")
            if value is None:
                continue
            entries.append(
                EvalResult(
                    metric_type=metric,
                    metric_value=round(value, 4),
                    metric_name=f"Test entity-level {metric}{seeds}",
                    **dataset,
                )
            )
    return entries


def model_index(results: Mapping[str, Any], model_name: str, dataset_name: str | None = None) -> list[dict[str, Any]]:
    """The Hub ``model-index`` (https://huggingface.co/docs/hub/model-cards#evaluation-results) of one
    ``all_results.json`` dict (``dataset_name`` overrides its ``dataset``)."""
    from huggingface_hub.repocard_data import eval_results_to_model_index

    raw = {"dataset": "unknown", **results, **({"dataset": dataset_name} if dataset_name else {})}
    return eval_results_to_model_index(model_name, eval_results([NerResult.from_dict(raw)]))
