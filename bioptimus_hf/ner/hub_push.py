"""``run_ner.py --push_to_hub``: one fine-tuned model on the Hub, with every seed's results in its card.

A run fine-tunes one model per seed; the repository gets the model of the seed with the best devel F1 (ties: the
lowest seed), chosen without looking at the test set. Its card is written by the one NER card writer
(:func:`bioptimus_hf.finetuning.model_card.build_ner_card`): the seed's own card (scheme, labels, how to tag, what the
standard pipeline gets wrong) plus the whole run: the per-seed table and mean ± std of ``results.md`` and the
``model-index`` of the mean test scores. The scheme and labels are read from the pushed model's own
``config.json``.

The Trainer is not kept across seeds, so the saved ``seed_<s>/`` folder is uploaded with ``huggingface_hub``
the way ``Trainer.push_to_hub`` uploads ``output_dir``: the card written as ``README.md`` into the folder, one
``upload_folder`` commit, checkpoints and private files left out, and the test predictions too (they hold the
test set's text).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..finetuning.model_card import build_ner_card
from ..finetuning.results import seed_dir
from ..releases.lineage import Lineage
from ..releases.seed_push import take_seed_hub_settings
from ..utils.dataset_ids import check_dataset_id
from ..utils.files import read_json
from ..utils.hub_settings import HubSettings
from .results import markdown_table
from .schemes import normalize_scheme, pipeline_caveat


# Trainer.push_to_hub's own ignore patterns, and the test predictions (the test sentences themselves).
IGNORE_PATTERNS = ("_*", "checkpoint-*", "*.conll")


@dataclass(frozen=True)
class NerPush:
    """What was pushed: the repository, the seed whose model it holds, the commit."""

    repo_id: str
    seed: int
    commit: str | None


def take_ner_hub_settings(training_args: Any, save_model: bool) -> HubSettings | None:
    """``--push_to_hub`` and friends for ``run_ner.py`` (None without it); refuses, before any training, what
    cannot be pushed, and turns the Trainer's own per-seed push off (:func:`take_seed_hub_settings`)."""
    return take_seed_hub_settings(training_args, save_model)


def best_seed(results: Mapping[str, Any]) -> int:
    """The seed with the best devel F1 (ties: the lowest seed) among ``results['per_seed']``."""
    runs = [run for run in results["per_seed"] if run.get("eval_f1") is not None]
    if not runs:
        raise ValueError("no seed has a devel F1 to choose the model to push by")
    return max(runs, key=lambda run: (run["eval_f1"], -run["seed"]))["seed"]


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
) -> NerPush:
    """Push the best seed's model of ``results`` (``run_ner.py``'s merged results of ``output_dir``) with its card.

    The card names ``model_name_or_path`` (the model fine-tuned) as ``base_model`` only when it is a Hub id or
    ``base_model_hub_id`` gives one (:class:`~bioptimus_hf.releases.lineage.Lineage`).

    The repository is created if needed (``hub.private`` then applies); with ``hub.revision`` the commit goes to
    that branch, created from ``main`` if missing. Hub errors propagate, as ``Trainer.push_to_hub``'s do.
    """
    from huggingface_hub import HfApi

    seed = best_seed(results)
    folder = seed_dir(str(output_dir), seed)
    if not os.path.isfile(os.path.join(folder, "config.json")):
        raise FileNotFoundError(
            f"{folder} holds no saved model to push (was seed {seed} fine-tuned with --save_model false?)"
        )
    api = HfApi(endpoint=endpoint, token=hub.token)
    repo_id = api.create_repo(hub.repo_id, private=hub.private, exist_ok=True).repo_id
    config = read_json(os.path.join(folder, "config.json"))
    labels = [label for _, label in sorted((int(i), label) for i, label in (config.get("id2label") or {}).items())]
    scheme = normalize_scheme(config.get("ner_tagging_scheme") or results["tagging_scheme"])
    card = build_ner_card(
        results["model_name"],
        results["dataset"],
        scheme,
        labels,
        caveat=pipeline_caveat(scheme),
        base_model=Lineage.of(model_name_or_path, base_model_hub_id),
        results=results,
        results_table=markdown_table(results),
        seed=seed,
        repo_id=repo_id,
        dataset_id=hub_dataset_id(dataset_name),
    )
    card.save(os.path.join(folder, "README.md"))
    if hub.revision:
        api.create_branch(repo_id, branch=hub.revision, exist_ok=True)
    commit = api.upload_folder(
        repo_id=repo_id,
        folder_path=folder,
        revision=hub.revision,
        ignore_patterns=list(IGNORE_PATTERNS),
        commit_message=f"{results['model_name']} on {results['dataset']}: seed {seed}, the best devel F1 of "
        f"{len(results['per_seed'])}",
    )
    return NerPush(repo_id, seed, getattr(commit, "oid", None))
