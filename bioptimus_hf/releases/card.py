"""The model card (README.md) of a release directory, written by the writer of its kind, and the offline checks every
card of this package passes.

A release's record says which kind it is: a curriculum release (:mod:`.release_card`) or a distilled student
(:mod:`.student_card`); a fine-tuned model's card is :mod:`bioptimus_hf.finetuning.model_card`'s. Every writer goes
through ``huggingface_hub.ModelCard``/``ModelCardData``; what a release card holds is :mod:`.card_context`'s.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable
from typing import Any

from huggingface_hub import ModelCard

from .card_context import REPO_PLACEHOLDER as REPO_PLACEHOLDER  # importable from here as before
from .record import ReleaseInfo
from .release_card import build_release_card
from .student_card import build_student_card


# What every release card's metadata holds (a fine-tuned model's card names no license or language it cannot know).
RELEASE_CARD_KEYS = ("license", "language", "library_name", "tags")


def build_card(release_dir: str | os.PathLike, ner_results: Any = None, **options: Any) -> ModelCard:
    """The card of one release as a `huggingface_hub.ModelCard`, by the writer of its kind (see
    `render_release_card`)."""
    writer = build_student_card if ReleaseInfo.load(release_dir).is_student else build_release_card
    return writer(release_dir, ner_results, **options)


def render_release_card(release_dir: str | os.PathLike, ner_results: Any = None, **options: Any) -> str:
    """Return the README.md (model card) text of the release in ``release_dir``.

    ``ner_results``: anything :func:`bioptimus_hf.releases.ner_results.load_ner_results` accepts. Keyword
    ``options`` (all optional): ``repo_id`` (the Hub repository, used in the loading snippets and as model-index
    name; a placeholder is shown otherwise), ``per_version_repos`` (one repository per version instead of one
    branch/tag per version), ``license`` (default ``apache-2.0``), ``datasets`` (Hub dataset ids of the training
    data; default ``run["datasets"]``), ``tags`` and ``blurb_results`` (a ``bioptimus blurb`` table: anything
    :func:`bioptimus_hf.releases.blurb_results.load_blurb_table` accepts), shown as a section and in the
    ``model-index``, each result under its task type.
    """
    return str(build_card(release_dir, ner_results, **options))


def validate_card(text: str, required: Iterable[str] = RELEASE_CARD_KEYS) -> ModelCard:
    """Offline checks of a card: parse it the way ``huggingface_hub`` does and check the metadata.

    The Hub's own validator (``ModelCard.validate``, POST /api/validate-yaml) needs the network; this
    reproduces what can be checked locally: the YAML block parses into `ModelCardData` (which parses the
    ``model-index`` with ``model_index_to_eval_results``), the ``required`` keys are present, metric values are
    finite numbers and no placeholder text leaked into the metadata. Raises ``ValueError``.
    """
    card = ModelCard(text)  # raises ValueError on an unparsable model-index or non-dict metadata
    data = card.data.to_dict()
    missing = [key for key in required if not data.get(key)]
    if missing:
        raise ValueError(f"card metadata misses {missing}")
    if "model-index" in data:
        from huggingface_hub.repocard_data import model_index_to_eval_results

        _, eval_results = model_index_to_eval_results(data["model-index"])
        for result in eval_results:
            value = result.metric_value
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise ValueError(
                    f"model-index metric {result.metric_type} of {result.dataset_name} is not a number: {value!r}"
                )
    if "<" in card.data.to_yaml():
        raise ValueError("card metadata contains a placeholder ('<...>')")
    return card
