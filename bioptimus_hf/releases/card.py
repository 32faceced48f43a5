"""The model card (README.md) of a release directory, and the offline checks every card of this package passes. A
release's kind picks its template (``templates/model_card.md``, ``templates/student_card.md``) over what every
release card holds (:mod:`.card_context`); every card goes through ``huggingface_hub.ModelCard.from_template``."""

from __future__ import annotations

import math
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from huggingface_hub import ModelCard
from huggingface_hub.repocard_data import model_index_to_eval_results

from .card_context import (
    CardOptions,
    ReleaseCardContext,
    corruption_text,
    fmt,
    load_targets,
    masking_unit_text,
    release_card_context,
)
from .lineage import Lineage, public_name
from .record import ReleaseInfo


TEMPLATES = Path(__file__).parent / "templates"
# Each kind's tags; the checkpoint's model type (e.g. "bert", "roberta") goes after "biomedical".
DEFAULT_TAGS = ("biomedical", "fill-mask", "bioptimus", "curriculum-learning", "pubmed")
STUDENT_TAGS = ("biomedical", "fill-mask", "bioptimus", "knowledge-distillation", "pubmed")
# What every release card's metadata holds (a fine-tuned model's card names no license or language it cannot know).
RELEASE_CARD_KEYS = ("license", "language", "library_name", "tags")


def render_release_card(release_dir: str | os.PathLike, ner_results: Any = None, **options: Any) -> str:
    """The README.md (model card) text of the release in ``release_dir``; ``ner_results`` and ``options`` are
    :class:`~bioptimus_hf.releases.card_context.CardOptions`' fields (``repo_id``, ``blurb_results``...)."""
    return str(build_card(release_dir, CardOptions(ner_results=ner_results, **options)))


def build_card(release_dir: str | os.PathLike, options: CardOptions) -> ModelCard:
    """The card of one release as a ``huggingface_hub.ModelCard``, with the template of its kind."""
    info = ReleaseInfo.load(release_dir)
    if info.is_student:
        context = release_card_context(release_dir, options, STUDENT_TAGS, f"bioptimus-student-v{info.version}")
        template, own = "student_card.md", _student_values(context, options)
    else:
        context = release_card_context(release_dir, options, DEFAULT_TAGS, f"bioptimus-v{info.version}")
        warmup = _lexical_warmup(info, context.checkpoint.mask_token)
        template, own = "model_card.md", {"lexical_warmup": warmup, "is_lexical_warmup": info.is_lexical_warmup}
    return ModelCard.from_template(context.card_data, template_path=str(TEMPLATES / template), **context.values, **own)


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


def _student_values(context: ReleaseCardContext, options: CardOptions) -> dict[str, Any]:
    """What a student's card shows beyond a release's common facts (teacher, recipe, layers, losses, sizes, speed)."""
    facts, parameters = context.info.distillation, context.parameters
    copied = facts.student_init == "teacher_layers"
    teacher = Lineage(facts.teacher_hub_id, facts.teacher_hub_id or public_name(facts.teacher))
    student_parameters = facts.student_parameters or parameters
    share = student_parameters / facts.teacher_parameters if student_parameters and facts.teacher_parameters else None
    return {
        "student": facts,
        "teacher_text": teacher.name or "the teacher",
        "teacher_link": f"https://huggingface.co/{teacher.hub_id}" if teacher.hub_id else None,
        "teacher_lineage": teacher.text(local_prefix="") if teacher.is_local else None,
        "recipe_name": facts.recipe_name or facts.recipe or "custom",
        "recipe_description": facts.recipe_description or "recipe not recorded",
        "init_text": (
            "the teacher's embeddings, MLM head and the teacher layers listed below, copied"
            if copied
            else "random (a smaller configuration), trained from scratch against the teacher"
        ),
        "layer_rows": [
            {
                "student": index,
                "initialised": layer if copied else "— (random)",
                "aligned": facts.layer_map[index] if index < len(facts.layer_map) else "n/a",
            }
            for index, layer in enumerate(facts.student_layers)
        ],
        "loss_rows": [
            {"name": name, "weight": fmt(weight), "description": facts.loss_descriptions.get(name, "")}
            for name, weight in facts.loss_weights.items()
        ],
        "teacher_parameters": f"{facts.teacher_parameters:,}" if facts.teacher_parameters else "n/a",
        "student_parameters": f"{student_parameters:,}" if student_parameters else "n/a",
        "parameter_share": f"{100 * share:.0f}%" if share else None,
        "speed": facts.speed or {},
        "teacher_heldout_loss": fmt(facts.teacher_heldout_mlm_loss, ".4f")
        if facts.teacher_heldout_mlm_loss is not None
        else None,
        "load_target": load_targets([context.info.version], options.repo_id, options.per_version_repos)[0],
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
