"""The card writer of a fine-tuned BLURB task model: the ``README.md`` a seed's folder gets beside the weights it
saves (``save_model``), through ``huggingface_hub.ModelCard.from_template`` (``templates/blurb_model_card.md``)
with a ``ModelCardData``. It says what the model was fine-tuned on (dataset, task type, labels), BLURB's metric
and the seed's dev and test scores, and the fine-tuning settings; the ``model-index`` holds the test score (when
the run had a test split) as :func:`~bioptimus_hf.releases.blurb_results.blurb_eval_results` words a table's.
``base_model`` is named only when its Hub id is known (:mod:`bioptimus_hf.releases.lineage`); a local start is
shown by its folder name, never its path.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from huggingface_hub import ModelCard, ModelCardData

from ..releases.blurb_results import HUB_METRICS, HUB_TASKS, blurb_eval_results
from ..releases.card_context import FINE_TUNING_SETTINGS, percent
from ..releases.lineage import Lineage
from ..utils.files import write_text_atomic


TEMPLATE_PATH = Path(__file__).parent / "templates" / "blurb_model_card.md"
TAGS = ("text-classification", "biomedical", "blurb", "bioptimus", "bioptimus-hf")
# The fine-tuning settings of a seed's run_info the card lists.
SETTINGS = (*FINE_TUNING_SETTINGS, "bf16")


def build_blurb_card(run: Mapping[str, Any], run_info: Mapping[str, Any], lineage: Lineage | None = None) -> ModelCard:
    """The card of the model of one seed: ``run`` (its scores, ``eval_score``/``test_score`` as fractions) and
    ``run_info`` (what ``run_blurb.py`` records: dataset, task type, metric, labels, settings)."""
    lineage = lineage or Lineage.of(run_info.get("model_name_or_path"))
    task_type, metric = run_info["task_type"], run_info["metric"]
    test_score = run.get("test_score")
    row = {"dataset": run_info["dataset"], "task_type": task_type, "metric": metric}
    scores = blurb_eval_results({"datasets": [{**row, "mean": 100 * test_score}]}) if test_score is not None else []
    model_name = run_info.get("model_name") or lineage.name or "model"
    card_data = ModelCardData(
        library_name="transformers",
        pipeline_tag="text-classification",
        tags=list(TAGS),
        base_model=lineage.hub_id,
        model_name=f"{model_name}-{run_info['dataset']}" if scores else None,
        eval_results=scores or None,
    )
    problem_type = run_info.get("problem_type")
    return ModelCard.from_template(
        card_data,
        template_path=str(TEMPLATE_PATH),
        model_name=model_name,
        dataset=run_info["dataset"],
        task_name=HUB_TASKS[task_type][1],
        labels=None if problem_type == "regression" else list(run_info.get("labels") or []),
        base_model_text=lineage.text(),
        seed=run["seed"],
        metric_name=HUB_METRICS[metric][1],
        metric_definition=run_info.get("metric_definition", metric),
        dev_score=percent(run.get("eval_score")),
        test_score=percent(test_score),
        settings=[(key, run_info[key]) for key in SETTINGS if run_info.get(key) is not None],
    )


def write_blurb_card(
    directory: str, run: Mapping[str, Any], run_info: Mapping[str, Any], lineage: Lineage | None = None
) -> str:
    """``<directory>/README.md``: the card of the seed's model saved there; returns its path."""
    path = os.path.join(directory, "README.md")
    write_text_atomic(path, str(build_blurb_card(run, run_info, lineage)))
    return path
