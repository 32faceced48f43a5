"""``run_ner.py --push_to_hub``: one fine-tuned model on the Hub, with every seed's results in its card.

A run fine-tunes one model per seed; the repository gets the model of the seed with the best devel F1 (ties: the
lowest seed), chosen without looking at the test set. Its card holds the whole run: the per-seed table and
mean ± std of ``results.md`` and the ``model-index`` of the mean test scores, built by
:func:`bioptimus_hf.ner.results.eval_results` (the builder of ``model_index.json`` and of release cards).

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

from huggingface_hub import ModelCard, ModelCardData

from ..releases.ner_results import NerResult, eval_results
from ..releases.record import base_model_hub_id
from ..utils.dataset_ids import check_dataset_id
from ..utils.hub_settings import HubSettings, take_hub_settings
from .results import markdown_table, seed_dir


# Trainer.push_to_hub's own ignore patterns, and the test predictions (the test sentences themselves).
IGNORE_PATTERNS = ("_*", "checkpoint-*", "*.conll")
TAGS = ("token-classification", "ner", "biomedical", "bioptimus")


@dataclass(frozen=True)
class NerPush:
    """What was pushed: the repository, the seed whose model it holds, the commit."""

    repo_id: str
    seed: int
    commit: str | None


def take_ner_hub_settings(training_args: Any, save_model: bool) -> HubSettings | None:
    """``--push_to_hub`` and friends for ``run_ner.py`` (None without it); refuses, before any training, what
    cannot be pushed, and turns the Trainer's own per-seed push off."""
    if training_args.push_to_hub and not save_model:
        raise ValueError("--push_to_hub needs the fine-tuned models on disk: drop --save_model false")
    return take_hub_settings(training_args, what="the best seed's fine-tuned model")


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


def ner_model_card(
    results: Mapping[str, Any], repo_id: str, seed: int, base_model: str | None = None, dataset_id: str | None = None
) -> ModelCard:
    """The card of the pushed model: metadata with the ``model-index`` of the mean test scores (when the run
    had a test set), the per-seed results table, how to load it and the fine-tuning settings."""
    name = repo_id.split("/")[-1]
    scores = (
        eval_results([NerResult.from_dict({**results, "dataset_id": dataset_id})])
        if results.get("test_f1") is not None
        else None
    )
    data = ModelCardData(
        library_name="transformers",
        pipeline_tag="token-classification",
        tags=list(TAGS),
        base_model=base_model,
        datasets=[dataset_id] if dataset_id else None,
        model_name=name if scores else None,
        eval_results=scores or None,
    )
    chosen = next(run for run in results["per_seed"] if run["seed"] == seed)
    settings = {
        key: results.get(key)
        for key in (
            "tagging_scheme",
            "learning_rate",
            "num_train_epochs",
            "max_steps",
            "warmup_steps",
            "lr_scheduler_type",
            "train_batch_size",
            "world_size",
            "max_seq_length",
            "window_stride",
            "bf16",
        )
    }
    body = "\n".join(
        [
            f"# {name}",
            "",
            (
                f"`{results['model_name']}` fine-tuned for named-entity recognition on {results['dataset']} (entity "
                f"types: {', '.join(results.get('entity_types') or [])}) with `run_ner.py` of bioptimus-hf, scored at the "
                "entity level."
            ),
            "",
            (
                f"This repository holds the model of seed {seed}, the best devel F1 ({100 * chosen['eval_f1']:.2f}) of "
                f"the {len(results['per_seed'])} seed(s) fine-tuned. The table reports every seed; the metadata reports "
                "their mean."
            ),
            "",
            "## Results (entity-level, %)",
            "",
            markdown_table(results),
            "## Usage",
            "",
            "```python",
            "from transformers import AutoModelForTokenClassification, AutoTokenizer",
            "",
            f'model = AutoModelForTokenClassification.from_pretrained("{repo_id}")',
            f'tokenizer = AutoTokenizer.from_pretrained("{repo_id}")',
            "```",
            "",
            (
                f"Entities in raw text, decoded with the training scheme (`config.ner_tagging_scheme`): "
                f'`bioptimus tag --model_name_or_path {repo_id} --text "..."`.'
            ),
            "",
            "## Fine-tuning",
            "",
            "| setting | value |",
            "|---|---|",
            *[f"| {key} | {value} |" for key, value in settings.items() if value is not None],
            "",
        ]
    )
    return ModelCard(f"---\n{data.to_yaml()}\n---\n\n{body}")


def push_best_seed(
    hub: HubSettings,
    output_dir: str | os.PathLike,
    results: Mapping[str, Any],
    model_name_or_path: str | None = None,
    dataset_name: str | None = None,
    endpoint: str | None = None,
) -> NerPush:
    """Push the best seed's model of ``results`` (``run_ner.py``'s merged results of ``output_dir``) with its card.

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
    card = ner_model_card(results, repo_id, seed, base_model_hub_id(model_name_or_path), hub_dataset_id(dataset_name))
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
