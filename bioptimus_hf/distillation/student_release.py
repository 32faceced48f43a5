"""The distilled student as a release: ``<output_dir>/student/`` with the weights of a plain ``BertForMaskedLM``
(no projection, no wrapper), the tokenizer, ``bioptimus_phase.json`` carrying a
:class:`~bioptimus_hf.releases.record.DistillationFacts` (format 3) and its model card; written atomically by
the release writer and publishable with ``bioptimus publish --run_dir <output_dir>/student``."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Mapping

from torch import nn

from ..releases.lineage import Lineage
from ..releases.record import DistillationFacts, ReleaseInfo
from ..releases.writer import write_release
from .distillation_config import DistillationPlan
from .recipes import DISTILLATION_RECIPES, LOSS_DESCRIPTIONS
from .student import parameter_count, strip_distillation


STUDENT_DIR = "student"


def distillation_facts(
    plan: DistillationPlan,
    teacher_name_or_path: str,
    teacher: nn.Module,
    student: nn.Module,
    teacher_hub_id: str | None = None,
    teacher_heldout_mlm_loss: float | None = None,
    speed: Mapping[str, Any] | None = None,
) -> DistillationFacts:
    """What the student's record and card say about its distillation."""
    teacher_lineage = Lineage.of(teacher_name_or_path, teacher_hub_id)
    recipe = DISTILLATION_RECIPES.get(plan.recipe or "")
    loss_weights = {name: weight for name, weight in plan.weights.items() if weight > 0}
    return DistillationFacts(
        teacher=teacher_lineage.name,
        teacher_hub_id=teacher_lineage.hub_id,
        recipe=plan.recipe,
        recipe_name=recipe.paper_name if recipe else None,
        recipe_description=recipe.description if recipe else None,
        loss_descriptions={name: LOSS_DESCRIPTIONS[name] for name in loss_weights},
        student_init=plan.student_init,
        student_layers=list(plan.student_layers),
        layer_map=list(plan.layer_map),
        loss_weights=loss_weights,
        temperature=plan.temperature,
        projection=plan.use_projection,
        teacher_num_layers=teacher.config.num_hidden_layers,
        teacher_hidden_size=teacher.config.hidden_size,
        teacher_parameters=parameter_count(teacher),
        student_num_layers=student.config.num_hidden_layers,
        student_hidden_size=student.config.hidden_size,
        student_parameters=parameter_count(student),
        teacher_heldout_mlm_loss=teacher_heldout_mlm_loss,
        speed=dict(speed or {}),
    )


def student_release_info(
    callback: Any,
    facts: DistillationFacts,
    global_step: int,
    metrics: Mapping[str, Any] | None = None,
    version: str | None = None,
    totals: Any = None,
) -> ReleaseInfo:
    """The record of the student: the curriculum's last phase (or the one phase it trained in) as the run's
    :class:`~bioptimus_hf.pretraining.callback.PhaseScheduleCallback` describes it, plus ``facts``; ``totals``:
    the masking statistics summed over ranks (``collator.stats.summed_over_ranks()``, called on every rank)."""
    info = callback.release_info(len(callback.collator.phases) - 1, global_step, metrics, totals)
    return dataclasses.replace(info, distillation=facts, version=version or info.version)


def write_student_release(output_dir: str | Path, student: nn.Module, tokenizer: Any, info: ReleaseInfo) -> Path:
    """Strip the training-time additions from ``student`` and write it to ``<output_dir>/student/``."""
    strip_distillation(student)
    return write_release(Path(output_dir) / STUDENT_DIR, student, tokenizer, info, require_version_name=False)
