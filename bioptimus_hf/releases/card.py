"""The model card (README.md) of a release directory, and the offline checks every card of this package passes.

A release's record says its kind: a curriculum release's card is written here (``templates/model_card.md``, with the
phase's place in the curriculum and a lexical warm-up's), a distilled student's by :mod:`.student_card`; what every
release card holds is :mod:`.card_context`'s, a fine-tuned model's card :mod:`bioptimus_hf.finetuning.model_card`'s.
Every writer goes through ``huggingface_hub.ModelCard.from_template`` and ``ModelCardData``.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from huggingface_hub import ModelCard
from huggingface_hub.repocard_data import model_index_to_eval_results

from .card_context import CardOptions, corruption_text, fmt, masking_unit_text, release_card_context
from .record import ReleaseInfo
from .student_card import build_student_card


TEMPLATE_PATH = Path(__file__).parent / "templates" / "model_card.md"
# Tags of every curriculum release card; the checkpoint's model type (e.g. "bert", "roberta") goes after "biomedical".
DEFAULT_TAGS = ("biomedical", "fill-mask", "bioptimus", "curriculum-learning", "pubmed")
# What every release card's metadata holds (a fine-tuned model's card names no license or language it cannot know).
RELEASE_CARD_KEYS = ("license", "language", "library_name", "tags")


def render_release_card(release_dir: str | os.PathLike, ner_results: Any = None, **options: Any) -> str:
    """The README.md (model card) text of the release in ``release_dir``; ``ner_results`` and ``options`` are
    :class:`~bioptimus_hf.releases.card_context.CardOptions`' fields (``repo_id``, ``blurb_results``...)."""
    return str(build_card(release_dir, CardOptions(ner_results=ner_results, **options)))


def build_card(release_dir: str | os.PathLike, options: CardOptions) -> ModelCard:
    """The card of one release as a ``huggingface_hub.ModelCard``, by the writer of its kind."""
    info = ReleaseInfo.load(release_dir)
    if info.is_student:
        return build_student_card(release_dir, options)
    context = release_card_context(release_dir, options, DEFAULT_TAGS, f"bioptimus-v{info.version}")
    return ModelCard.from_template(
        context.card_data,
        template_path=str(TEMPLATE_PATH),
        **context.values,
        lexical_warmup=_lexical_warmup(info, context.checkpoint.mask_token),
        is_lexical_warmup=info.is_lexical_warmup,
    )


def _lexical_warmup(info: ReleaseInfo, mask_token: str | None) -> dict[str, Any] | None:
    """What the card says of a lexical warm-up before the curriculum (None: the run had none)."""
    facts = info.run.lexical_warmup
    if facts is None:
        return None
    first = info.curriculum[0] if info.curriculum else {}
    ramp = ""
    if facts.lr_warmup_steps:
        ramp = f", a linear ramp over its first {facts.lr_warmup_steps} steps"
        ramp = ", a linear ramp over its first step" if facts.lr_warmup_steps == 1 else ramp
    return {
        "steps": facts.steps,
        "learning_rate": fmt(facts.learning_rate),
        "schedule": f"{fmt(facts.lr_scheduler_type)} over its {facts.steps} steps{ramp}",
        "masking_version": facts.masking_version or first.get("version"),
        "masking_unit": masking_unit_text(first.get("masking_unit")),
        "masking_rate": fmt(first.get("masking_rate")),
        "corruption": corruption_text(first.get("corruption"), mask_token),
        "parameters": facts.parameters,
        "trained": f"{facts.trained_parameter_count:,}" if facts.trained_parameter_count is not None else "n/a",
        "frozen": f"{facts.frozen_parameter_count:,}" if facts.frozen_parameter_count is not None else "n/a",
        "release": facts.release_version,
    }


def validate_card(text: str, required: Iterable[str] = RELEASE_CARD_KEYS) -> ModelCard:
    """Offline checks of a card, as far as they go without the Hub's validator (``ModelCard.validate`` posts to the
    Hub): the YAML block parses into ``ModelCardData`` (its ``model-index`` included), the ``required`` keys are
    present, metric values are finite numbers and no placeholder leaked into the metadata. Raises ``ValueError``."""
    card = ModelCard(text)  # raises ValueError on an unparsable model-index or non-dict metadata
    data = card.data.to_dict()
    missing = [key for key in required if not data.get(key)]
    if missing:
        raise ValueError(f"card metadata misses {missing}")
    for result in model_index_to_eval_results(data["model-index"])[1] if "model-index" in data else []:
        value = result.metric_value
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise ValueError(
                f"model-index metric {result.metric_type} of {result.dataset_name} is not a number: {value!r}"
            )
    if "<" in card.data.to_yaml():
        raise ValueError("card metadata contains a placeholder ('<...>')")
    return card
