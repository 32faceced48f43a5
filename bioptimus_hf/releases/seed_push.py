"""``--push_to_hub`` of a fine-tuning run over seeds: the model of its best seed, pushed by this project, never by
the Trainer. :func:`take_seed_hub_settings` reads the Hub flags before anything trains (the token then leaves the
``TrainingArguments``, and the Trainer's push is off); :func:`push_seed_folder` uploads the chosen seed's folder the
way ``Trainer.push_to_hub`` uploads ``output_dir``: the card as ``README.md``, one ``upload_folder`` commit, without
checkpoints, private files or the predictions (they hold the test set's text).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..utils.errors import BadInput, hub_failure
from ..utils.hub_settings import HubSettings, take_hub_settings


# Trainer.push_to_hub's own ignore patterns, and the predictions (the dev and test texts themselves).
IGNORE_PATTERNS = ("_*", "checkpoint-*", "*.conll", "*predictions*.jsonl")


@dataclass(frozen=True)
class SeedPush:
    """What was pushed: the repository, the seed whose model it holds, the commit."""

    repo_id: str
    seed: int
    commit: str | None


def take_seed_hub_settings(training_args: Any, save_model: bool) -> HubSettings | None:
    """``--push_to_hub`` and friends of a run over seeds (None without it): refused before any training when the
    models are not kept; the token is taken out of ``training_args`` and the Trainer's own push turned off."""
    if training_args.push_to_hub and not save_model:
        raise ValueError("--push_to_hub needs the fine-tuned models on disk: drop --save_model false")
    return take_hub_settings(training_args, what="the best seed's fine-tuned model")


def best_seed(per_seed: Sequence[Mapping[str, Any]], score: str) -> int:
    """The seed with the highest ``score`` (a dev score; ties: the lowest seed)."""
    runs = [run for run in per_seed if run.get(score) is not None]
    if not runs:
        raise ValueError(f"no seed has a {score} to choose the model to push by")
    return max(runs, key=lambda run: (run[score], -run["seed"]))["seed"]


def push_seed_folder(
    hub: HubSettings,
    folder: str | os.PathLike,
    seed: int,
    commit_message: str,
    card: Callable[[str], Any] | None = None,
    endpoint: str | None = None,
) -> SeedPush:
    """Upload ``folder`` (a seed's saved model) to ``hub.repo_id`` in one commit; ``card(repo_id)``, when given,
    returns the ``ModelCard`` written first as its ``README.md``. The repository is created if needed
    (``hub.private`` then applies); with ``hub.revision`` the commit goes to that branch, created from ``main`` if
    missing. A failed Hub request is :class:`~bioptimus_hf.utils.errors.BadInput` (:func:`~bioptimus_hf.utils.errors.hub_failure`)."""
    from huggingface_hub import HfApi

    if not os.path.isfile(os.path.join(folder, "config.json")):
        raise BadInput(f"{folder} holds no saved model to push (was seed {seed} fine-tuned with --save_model false?)")
    with hub_failure(f"--push_to_hub to {hub.repo_id}", f"the results and models are in {os.path.dirname(folder)}"):
        api = HfApi(endpoint=endpoint, token=hub.token)
        repo_id = api.create_repo(hub.repo_id, private=hub.private, exist_ok=True).repo_id
        if card is not None:
            card(repo_id).save(os.path.join(folder, "README.md"))
        if hub.revision:
            api.create_branch(repo_id, branch=hub.revision, exist_ok=True)
        commit = api.upload_folder(
            repo_id=repo_id,
            folder_path=str(folder),
            revision=hub.revision,
            ignore_patterns=list(IGNORE_PATTERNS),
            commit_message=commit_message,
        )
    return SeedPush(repo_id, seed, getattr(commit, "oid", None))
