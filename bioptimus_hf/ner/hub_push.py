"""``bioptimus ner --push_to_hub``: the model of the seed with the best devel F1 (ties: the lowest seed), chosen
without looking at the test set, on the Hub with every seed's results in its card: the seed's own card (scheme,
labels, how to tag, what the standard pipeline gets wrong) plus the run's per-seed table, mean ± std and the
``model-index`` of the mean test scores (:func:`bioptimus_hf.finetuning.model_card.build_ner_card`). The saved
``seed_<s>/`` folder is uploaded in one ``upload_folder`` commit, as ``Trainer.push_to_hub`` uploads ``output_dir``
(:mod:`bioptimus_hf.releases.seed_push`'s ignore patterns: checkpoints, private files and the test predictions).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from ..finetuning.model_card import build_ner_card
from ..finetuning.results import seed_dir
from ..releases import seed_push
from ..releases.lineage import Lineage
from ..releases.seed_push import SeedPush
from ..utils.dataset_ids import check_dataset_id
from ..utils.files import read_json
from ..utils.hub_settings import HubSettings
from .run import markdown_table
from .schemes import normalize_scheme, pipeline_caveat


# --push_to_hub and friends, refused before any training where they cannot be pushed; the Trainer's own push off
take_ner_hub_settings = seed_push.take_seed_hub_settings


def best_seed(results: Mapping[str, Any]) -> int:
    """The seed with the best devel F1 (ties: the lowest seed) among ``results['per_seed']``."""
    return seed_push.best_seed(results["per_seed"], "eval_f1")


def hub_dataset_id(dataset_name: str | None) -> str | None:
    """``--dataset_name`` when it is a loadable Hub dataset id (not a local folder), for the card's metadata."""
    if not dataset_name or os.path.exists(dataset_name):
        return None
    try:
        return check_dataset_id(dataset_name, "--dataset_name")
    except ValueError:
        return None


def push_best_seed(
    hub: HubSettings,
    output_dir: str | os.PathLike,
    results: Mapping[str, Any],
    model_name_or_path: str | None = None,
    dataset_name: str | None = None,
    endpoint: str | None = None,
    base_model_hub_id: str | None = None,
) -> SeedPush:
    """Push the best seed's model of ``results`` (the merged results of ``output_dir``) with its card, naming
    ``model_name_or_path`` as ``base_model`` only when it or ``base_model_hub_id`` is a Hub id
    (:func:`~bioptimus_hf.releases.seed_push.push_seed_folder` uploads it)."""
    seed = best_seed(results)
    folder = seed_dir(str(output_dir), seed)

    def card(repo_id: str):
        config = read_json(os.path.join(folder, "config.json"))  # the pushed model's own scheme and labels
        labels = [label for _, label in sorted((int(i), label) for i, label in (config.get("id2label") or {}).items())]
        scheme = normalize_scheme(config.get("ner_tagging_scheme") or results["tagging_scheme"])
        context = {
            "model_name": results["model_name"],
            "dataset": results["dataset"],
            "scheme": scheme,
            "labels": labels,
            "caveat": pipeline_caveat(scheme),
            "seed": seed,
            "repo_id": repo_id,
            "results_table": markdown_table(results),
        }
        lineage = Lineage.of(model_name_or_path, base_model_hub_id)
        return build_ner_card(context, lineage, results, hub_dataset_id(dataset_name))

    message = f"{results['model_name']} on {results['dataset']}: seed {seed}, the best devel F1 of "
    message += f"{len(results['per_seed'])}"
    return seed_push.push_seed_folder(hub, folder, seed, message, card=card, endpoint=endpoint)
