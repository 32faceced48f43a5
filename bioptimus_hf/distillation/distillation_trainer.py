"""DistillationTrainer: the ``transformers`` Trainer with a frozen teacher and the distillation losses.

The student is the Trainer's model; the teacher runs in inference mode, not run when no loss needs it.
:meth:`~DistillationTrainer.compute_loss` is one student and one teacher forward on the same masked batch, then the
plan's weighted losses, each logged as ``loss_<name>``; per micro-batch means, which the Trainer divides by the
gradient-accumulation steps."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import torch
from torch import nn
from transformers import Trainer

from ..pretraining.collator import CurriculumMaskingMixin
from ..utils.distributed import sum_numbers_across_ranks
from .distillation_config import DistillationPlan
from .losses import distillation_losses, total_loss
from .speed import measure_inference_speed
from .student import PROJECTION_NAME, prepare_student_for_distillation, prepare_teacher


class DistillationTrainer(CurriculumMaskingMixin, Trainer):
    """``Trainer(model=student, ...)`` plus ``teacher_model`` and a resolved ``plan``. The student is prepared here
    (masked-only head, projection, eager attention where maps are compared); :func:`check_pair` refuses a pair
    that does not fit the plan."""

    loss_is_scaled_for_ga = False

    def __init__(
        self,
        model: nn.Module | None = None,
        teacher_model: nn.Module | None = None,
        plan: DistillationPlan | None = None,
        **kwargs: Any,
    ):
        if model is None or teacher_model is None or plan is None:
            raise ValueError("DistillationTrainer needs model (the student), teacher_model and plan")
        check_pair(teacher_model, model, plan)
        prepare_student_for_distillation(model, plan)
        super().__init__(model=model, **kwargs)
        self.plan = plan
        self.weights = {name: weight for name, weight in plan.weights.items() if weight > 0}
        prepare_teacher(teacher_model, plan)
        if plan.needs_teacher:
            self.teacher_model = self.accelerator.prepare_model(teacher_model, evaluation_mode=True)
        else:
            self.teacher_model = teacher_model  # not run during training; kept for evaluate_teacher
        self._loss_sums: dict[str, float] = defaultdict(float)  # since the last log
        self._loss_batches = 0
        self._run_loss_sums: dict[str, float] = defaultdict(float)  # over the run (this process)
        self._run_loss_batches = 0

    # ------------------------------------------------------------------------------------------- losses
    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        if not model.training:  # evaluation: the student's own masked-LM loss
            outputs = model(**inputs)
            return (outputs.loss, outputs) if return_outputs else outputs.loss
        plan = self.plan
        wanted = {"output_hidden_states": plan.needs_hidden_states, "output_attentions": plan.needs_attentions}
        student = model(**inputs, **wanted)
        teacher = None
        if plan.needs_teacher:
            with torch.no_grad():
                teacher = self.teacher_model(**inputs, **wanted)
        losses = distillation_losses(
            self.weights, plan.temperature, plan.layer_map, student, teacher, inputs.get("attention_mask")
        )
        loss = total_loss(self.weights, losses)
        for name, value in losses.items():
            self._loss_sums[name] += float(value.detach())
            self._run_loss_sums[name] += float(value.detach())
        self._loss_batches += 1
        self._run_loss_batches += 1
        return (loss, student) if return_outputs else loss

    def log(self, logs: dict[str, float], start_time: float | None = None) -> None:
        """Training logs get each loss component's mean since the last log (``loss_<name>``); the end-of-training
        metrics its mean over the run (``train_loss_<name>``). Under DDP both are means over every process's
        micro-batches, as the Trainer's ``loss`` and ``train_loss`` are (the Trainer calls ``log`` on every
        process at the same steps, so the reduction is collective)."""
        if "loss" in logs:
            for name, mean in self._mean_over_processes(self._loss_sums, self._loss_batches).items():
                logs[f"loss_{name}"] = round(mean, 6)
            self._loss_sums.clear()
            self._loss_batches = 0
        if "train_loss" in logs:
            for name, mean in self._mean_over_processes(self._run_loss_sums, self._run_loss_batches).items():
                logs[f"train_loss_{name}"] = round(mean, 6)
        super().log(logs, start_time)

    def _mean_over_processes(self, sums: dict[str, float], batches: int) -> dict[str, float]:
        """Each component's mean per micro-batch, over all processes (one all-reduce; none in one process)."""
        names = sorted(self.weights)  # the same list on every process, whatever this one has summed so far
        totals = sum_numbers_across_ranks([sums.get(name, 0.0) for name in names] + [float(batches)])
        count = totals[-1]
        return {name: total / count for name, total in zip(names, totals[:-1]) if name in sums} if count else {}

    # ------------------------------------------------------------------------------------------- after training
    def measure_student_and_teacher(self, speed_batches: int = 4) -> dict[str, Any]:
        """After training: ``metrics`` of :meth:`evaluate` (the student's ``eval_loss``; every process must call
        this), and on the main process the teacher's held-out MLM loss and the teacher/student inference speed on
        ``speed_batches`` held-out (else training) batches. Evaluation batches are not counted in the curriculum
        collator's masking statistics."""
        metrics = self.evaluate() if self.eval_dataset is not None else None
        result = {"metrics": metrics, "teacher_heldout_mlm_loss": None, "speed": {}}
        if self.is_world_process_zero():
            result["teacher_heldout_mlm_loss"] = self.evaluate_teacher()
            if speed_batches > 0:
                timed = self.eval_dataset if self.eval_dataset is not None else self.train_dataset
                loader = self.get_eval_dataloader(timed)
                batches = [self.masked_batch(batch) for _, batch in zip(range(speed_batches), loader)]
                teacher = self.accelerator.unwrap_model(self.teacher_model)
                result["speed"] = measure_inference_speed({"teacher": teacher, "student": self.model}, batches)
        return result

    # ------------------------------------------------------------------------------------------- teacher
    @torch.no_grad()
    def evaluate_teacher(self, eval_dataset=None, max_batches: int | None = None) -> float | None:
        """The teacher's masked-LM loss on the evaluation set (batches weighted by size, like ``eval_loss``)."""
        dataset = eval_dataset if eval_dataset is not None else self.eval_dataset
        if dataset is None:
            return None
        teacher = self.accelerator.unwrap_model(self.teacher_model)
        device = next(teacher.parameters()).device
        total, count = 0.0, 0
        for index, batch in enumerate(self.get_eval_dataloader(dataset)):
            if max_batches is not None and index >= max_batches:
                break
            batch = self.masked_batch(batch, device)
            batch = {k: v for k, v in batch.items() if k in ("input_ids", "attention_mask", "labels")}
            if not bool((batch["labels"] != -100).any()):
                continue
            size = batch["input_ids"].shape[0]
            total += float(teacher(**batch).loss) * size
            count += size
        return total / count if count else None


def check_pair(teacher: nn.Module, student: nn.Module, plan: DistillationPlan) -> None:
    """Teacher and student fit the plan and each other (``ValueError`` with the mismatch)."""
    teacher_vocab = teacher.get_input_embeddings().weight.shape[0]
    student_vocab = student.get_input_embeddings().weight.shape[0]
    if teacher_vocab != student_vocab:
        raise ValueError(
            f"teacher and student do not share the vocabulary: {teacher_vocab} vs {student_vocab} embedding rows; "
            "distillation compares output distributions token by token, so both must use the same tokenizer"
        )
    if teacher.config.num_hidden_layers != plan.teacher_num_layers:
        raise ValueError(
            f"the plan was resolved for a {plan.teacher_num_layers}-layer teacher, this one has "
            f"{teacher.config.num_hidden_layers}"
        )
    if student.config.num_hidden_layers != len(plan.layer_map):
        raise ValueError(
            f"the layer map {plan.layer_map} has {len(plan.layer_map)} entries but the student has "
            f"{student.config.num_hidden_layers} layers"
        )
    if student.config.hidden_size != plan.student_hidden_size:
        raise ValueError(
            f"the student's hidden size {student.config.hidden_size} is not the plan's {plan.student_hidden_size}"
        )
    narrower = student.config.hidden_size != teacher.config.hidden_size
    if (
        narrower
        and plan.needs_hidden_states
        and not plan.use_projection
        and getattr(student, PROJECTION_NAME, None) is None
    ):
        raise ValueError(
            f"the student (hidden size {student.config.hidden_size}) is narrower than the teacher "
            f"({teacher.config.hidden_size}): hidden-state losses need the projection W_p (use_projection=True)"
        )
