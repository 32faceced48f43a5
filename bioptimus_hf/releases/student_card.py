"""The card writer of a compact student (``README.md`` of ``<output_dir>/student/``, a release whose record carries a
:class:`~bioptimus_hf.releases.record.DistillationFacts`): the common context of a release directory
(:mod:`.card_context`) rendered with ``templates/student_card.md``, plus the teacher, the recipe, the layers, the
losses, the sizes and the measured speed."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from huggingface_hub import ModelCard

from .card_context import CardOptions, fmt, load_targets, release_card_context
from .lineage import Lineage, public_name
from .record import ReleaseInfo


STUDENT_TEMPLATE_PATH = Path(__file__).parent / "templates" / "student_card.md"
STUDENT_TAGS = ("biomedical", "fill-mask", "bioptimus", "knowledge-distillation", "pubmed")


def _student_values(info: ReleaseInfo, parameters: int | None, load_target: dict[str, str]) -> dict[str, Any]:
    """What the student card shows beyond a release's common facts (teacher, recipe, layers, losses, sizes, speed)."""
    facts = info.distillation
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
        "load_target": load_target,
    }


def build_student_card(release_dir: str | os.PathLike, options: CardOptions) -> ModelCard:
    """The card of the student release in ``release_dir``."""
    info = ReleaseInfo.load(release_dir)
    context = release_card_context(release_dir, options, STUDENT_TAGS, f"bioptimus-student-v{info.version}")
    target = load_targets([info.version], options.repo_id, options.per_version_repos)[0]
    return ModelCard.from_template(
        context.card_data,
        template_path=str(STUDENT_TEMPLATE_PATH),
        **context.values,
        **_student_values(context.info, context.parameters, target),
    )
