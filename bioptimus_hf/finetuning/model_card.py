"""The one card writer of a fine-tuned model (``README.md`` next to its weights), a NER model's (``bioptimus ner``)
or a BLURB task model's (``bioptimus blurb-task``), through ``huggingface_hub.ModelCard.from_template``
(``templates/fine_tuned_model_card.md``) with a ``ModelCardData``. ``base_model`` is named only when its Hub id is
known (:mod:`bioptimus_hf.releases.lineage`); a local start is shown by its folder name, never its path. Every card
ends with the fine-tuning settings its run recorded; a pushed NER card (:mod:`bioptimus_hf.ner.hub_push`) is the
seed's card plus every seed's results and the ``model-index`` of their mean.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from huggingface_hub import ModelCard, ModelCardData

from ..releases.blurb_results import HUB_METRICS, HUB_TASKS, blurb_eval_results
from ..releases.card_context import FINE_TUNING_SETTINGS, percent
from ..releases.lineage import Lineage
from ..releases.ner_results import NerResult, eval_results
from ..utils.files import write_text_atomic


TEMPLATE_PATH = Path(__file__).parent / "templates" / "fine_tuned_model_card.md"
NER_TAGS = ("token-classification", "ner", "biomedical", "bioptimus", "bioptimus-hf")
BLURB_TAGS = ("text-classification", "biomedical", "blurb", "bioptimus", "bioptimus-hf")
# The fine-tuning settings a card lists: of a NER run's all_results.json, of a BLURB seed's run_info.
NER_SETTINGS = ("tagging_scheme", *FINE_TUNING_SETTINGS, "window_stride", "bf16")
BLURB_SETTINGS = (*FINE_TUNING_SETTINGS, "bf16")


def _settings(recorded: Mapping[str, Any] | None, keys: Iterable[str]) -> list[tuple[str, Any]]:
    return [(key, recorded[key]) for key in keys if recorded.get(key) is not None] if recorded else []


def _card(pipeline_tag: str, tags: Iterable[str], lineage: Lineage, context: Mapping[str, Any], **data) -> ModelCard:
    """The card: its metadata (``data``: ``ModelCardData``'s fields beyond the pipeline, tags and base model) and
    the template filled with ``context`` (the base model as the card words it added)."""
    card_data = ModelCardData(
        library_name="transformers", pipeline_tag=pipeline_tag, tags=list(tags), base_model=lineage.hub_id, **data
    )
    return ModelCard.from_template(
        card_data, template_path=str(TEMPLATE_PATH), base_model_text=lineage.text(), **context
    )


def build_ner_card(
    context: Mapping[str, Any],
    lineage: Lineage | None = None,
    results: Mapping[str, Any] | None = None,
    dataset_id: str | None = None,
) -> ModelCard:
    """The card of a model fine-tuned by ``bioptimus ner``. ``context`` fills the template: ``model_name``,
    ``dataset``, ``scheme``, ``labels``, ``caveat`` (what transformers' pipeline gets wrong for the scheme, or None)
    and, for the pushed card, ``seed`` (whose model it holds), ``repo_id`` and ``results_table``. ``lineage``: the
    start model (metadata only with a Hub id). With ``results`` (the run's merged ``all_results.json``) it adds
    every seed's results and, with a test set, the ``model-index`` of their mean (``dataset_id``: its Hub dataset)."""
    results = results or {}
    scores = None
    if results.get("test_f1") is not None:
        scores = eval_results([NerResult.from_dict({**results, "dataset_id": dataset_id})])
    repo_id = context.get("repo_id")
    context = {
        **context,
        "results": results or None,
        "chosen": next((run for run in results.get("per_seed", []) if run["seed"] == context.get("seed")), None),
        "settings": _settings(results, NER_SETTINGS),
    }
    return _card(
        "token-classification",
        NER_TAGS,
        lineage or Lineage(),
        context,
        datasets=[dataset_id] if dataset_id else None,
        model_name=(repo_id.split("/")[-1] if repo_id else context["model_name"]) if scores else None,
        eval_results=scores or None,
    )


def build_blurb_card(run: Mapping[str, Any], run_info: Mapping[str, Any], lineage: Lineage | None = None) -> ModelCard:
    """The card of the model of one BLURB seed: ``run`` (its scores, ``eval_score``/``test_score`` as fractions) and
    ``run_info`` (what ``bioptimus blurb-task`` records: dataset, task type, metric, labels, settings)."""
    lineage = lineage or Lineage.of(run_info.get("model_name_or_path"))
    task_type, metric = run_info["task_type"], run_info["metric"]
    test_score = run.get("test_score")
    row = {"dataset": run_info["dataset"], "task_type": task_type, "metric": metric}
    scores = blurb_eval_results({"datasets": [{**row, "mean": 100 * test_score}]}) if test_score is not None else []
    model_name = run_info.get("model_name") or lineage.name or "model"
    context = dict(
        model_name=model_name,
        dataset=run_info["dataset"],
        task_name=HUB_TASKS[task_type][1],
        labels=None if run_info.get("problem_type") == "regression" else list(run_info.get("labels") or []),
        seed=run["seed"],
        metric_name=HUB_METRICS[metric][1],
        metric_definition=run_info.get("metric_definition", metric),
        dev_score=percent(run.get("eval_score")),
        test_score=percent(test_score),
        settings=_settings(run_info, BLURB_SETTINGS),
    )
    return _card(
        "text-classification",
        BLURB_TAGS,
        lineage,
        context,
        model_name=f"{model_name}-{run_info['dataset']}" if scores else None,
        eval_results=scores or None,
    )


def write_card(directory: str, card: ModelCard) -> str:
    """``<directory>/README.md``: the card of the model saved there, written atomically; returns its path."""
    path = os.path.join(directory, "README.md")
    write_text_atomic(path, str(card))
    return path
