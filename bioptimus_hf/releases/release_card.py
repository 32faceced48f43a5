"""The card writer of a curriculum release (``README.md`` of ``releases/v0.k/``): the common context of a release
directory (:mod:`.card_context`) rendered with ``templates/model_card.md`` through
``huggingface_hub.ModelCard.from_template``, plus the phase's place in the curriculum and a lexical warm-up's."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from huggingface_hub import ModelCard

from .card_context import corruption_text, fmt, masking_unit_text, release_card_context
from .record import ReleaseInfo


TEMPLATE_PATH = Path(__file__).parent / "templates" / "model_card.md"
# Tags of every release card; the checkpoint's model type (e.g. "bert", "roberta") is added after "biomedical".
DEFAULT_TAGS = ("biomedical", "fill-mask", "bioptimus", "curriculum-learning", "pubmed")


def _lexical_warmup(info: ReleaseInfo, mask_token: str | None) -> dict[str, Any] | None:
    """What the card says of a lexical warm-up before the curriculum (None: the run had none)."""
    facts = info.run.lexical_warmup
    if facts is None:
        return None
    first = info.curriculum[0] if info.curriculum else {}
    ramp = ""
    if facts.lr_warmup_steps:
        ramp = (
            ", a linear ramp over its first step"
            if facts.lr_warmup_steps == 1
            else f", a linear ramp over its first {facts.lr_warmup_steps} steps"
        )
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


def build_release_card(release_dir: str | os.PathLike, ner_results: Any = None, **options: Any) -> ModelCard:
    """The card of the curriculum release in ``release_dir`` (``options``: see
    :func:`bioptimus_hf.releases.card.render_release_card`)."""
    info = ReleaseInfo.load(release_dir)
    context = release_card_context(
        release_dir, ner_results, default_tags=DEFAULT_TAGS, default_name=f"bioptimus-v{info.version}", **options
    )
    return ModelCard.from_template(
        context.card_data,
        template_path=str(TEMPLATE_PATH),
        **context.values,
        lexical_warmup=_lexical_warmup(context.info, context.checkpoint.mask_token),
        is_lexical_warmup=context.info.is_lexical_warmup,
    )
