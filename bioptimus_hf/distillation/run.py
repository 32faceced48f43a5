"""One distillation run from its typed settings: what ``bioptimus distill`` runs, callable by anyone. A compact student
distilled from a release (or any BERT masked LM) with the recipes of Rohanian et al., through the curriculum of
``bioptimus pretrain``, written to ``<output_dir>/student/`` as a release. Bad input raises
:class:`~bioptimus_hf.utils.errors.BadInput` naming the flag or file. See docs/distillation.md."""

from __future__ import annotations

import logging
import os
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

from transformers import AutoConfig, set_seed

from ..pretraining.callback import PhaseReleases, PhaseScheduleCallback, add_callback_first
from ..pretraining.collator import CurriculumDataCollator
from ..pretraining.data import load_pretraining_datasets
from ..pretraining.phases import PhaseSchedule
from ..pretraining.run_lifecycle import finish_run, open_output_dir, resolve_run_schedule
from ..releases.lineage import base_model_hub_id, public_name
from ..releases.publisher import start_release_publisher
from ..releases.release_config import resolve_release_hub
from ..utils.errors import bad_input
from ..utils.hardware import pin_memory_where_useful
from ..utils.masked_lm_loading import tied_keys_expected
from ..utils.sequence_length import max_model_tokens
from ..utils.tokenizer_loader import load_fast_tokenizer
from .distillation_config import DistillationConfig, DistillationPlan, TeacherArguments, check_shared_vocabulary
from .distillation_trainer import DistillationTrainer
from .student import build_student, load_teacher
from .student_release import distillation_facts, student_release_info, write_student_release


logger = logging.getLogger(__name__)


@dataclass
class _CheckedInputs:
    """What step 1 of a run checked without model weights."""

    curriculum: Any
    schedule: PhaseSchedule
    plan: DistillationPlan
    student_config: Any
    tokenizer: Any
    hub: Any


def run_distillation(teacher_args: TeacherArguments, config: DistillationConfig) -> None:
    """One distillation run (or its resumption) from its typed settings; bad input raises ``BadInput``. ``config``
    is changed as the Trainer needs it (Hub push off, ``remove_unused_columns`` off)."""
    # 1. Everything that can be checked without model weights: schedule, corpus, teacher configuration, the
    #    distillation plan (layers, layer map, projection, heads, weights) and the shared vocabulary.
    checked = _check_inputs(teacher_args, config)
    tokenizer, plan = checked.tokenizer, checked.plan

    # 2. The output directory: locked for this run (the lock removed when it ends); resume from its last complete
    #    checkpoint.
    with bad_input(RuntimeError, FileExistsError, FileNotFoundError):
        checkpoint, lock = open_output_dir(config, checked.schedule)
    with lock or nullcontext():
        set_seed(config.seed)

        # 3. Teacher (with its MLM head) and student (kept teacher layers, or a random smaller configuration).
        teacher_path = teacher_args.teacher_model_name_or_path
        with bad_input(ValueError):
            teacher = load_teacher(teacher_path, plan)
        student = build_student(teacher, plan, checked.student_config)

        # 4. The masking collator of the curriculum; 5. the corpus as packed blocks with word ids.
        collator = CurriculumDataCollator.from_arguments(
            config, tokenizer, checked.curriculum, config.seed, config.line_by_line
        )
        longest = min(max_model_tokens(teacher, tokenizer), max_model_tokens(student, tokenizer))  # both must take it
        data = load_pretraining_datasets(config, tokenizer, config, model_max_tokens=longest)
        config.remove_unused_columns = False  # word_ids / special_tokens_mask feed the collator
        pin_memory_where_useful(config)
        if config.streaming:
            config.accelerator_config.dispatch_batches = False

        # 6. The phase callback (phase switches; the student is released once, at the end) and the trainer.
        callback = _phase_callback(collator, checked.schedule, teacher_args, config, data, tokenizer)
        with bad_input(ValueError):
            trainer = DistillationTrainer(
                model=student,
                teacher_model=teacher,
                plan=plan,
                args=config,
                train_dataset=data.train,
                eval_dataset=data.eval,
                processing_class=tokenizer,
                data_collator=collator,
            )
        add_callback_first(trainer, callback)  # ahead of report_to's reporters: they see the curriculum's metrics
        if lock is not None:
            trainer.add_callback(lock.watch())  # the output directory removed mid-run: one line, not a run with holes

        # 7. Distil.
        with tied_keys_expected(trainer.model):  # a checkpoint holds the student's tied decoder once
            train_result = trainer.train(resume_from_checkpoint=str(checkpoint) if checkpoint else None)

        # 8. Held-out MLM loss of student and teacher, speed, and the student as a release at <output_dir>/student/.
        publisher = start_release_publisher(checked.hub, config)
        _release_student(trainer, teacher, callback, collator, plan, teacher_args, publisher)

        # 9. Final model, metrics and state of the run (and the student on the Hub, with --push_to_hub).
        finish_run(trainer, collator, train_result, publisher)


def _check_inputs(teacher_args: TeacherArguments, config: DistillationConfig) -> _CheckedInputs:
    """Step 1: schedule, corpus, teacher configuration, distillation plan and shared vocabulary, checked without
    model weights (bad input raises ``BadInput``); the schedule and plan logged."""
    teacher_path = teacher_args.teacher_model_name_or_path
    with bad_input(ValueError, OSError):
        curriculum, schedule, corpus_report = resolve_run_schedule(config)
        teacher_config = AutoConfig.from_pretrained(teacher_path)
        student_config = AutoConfig.from_pretrained(config.student_config_name) if config.student_config_name else None
        plan = config.resolve(teacher_config, student_config)
        tokenizer = load_fast_tokenizer(teacher_args.tokenizer_name or teacher_path, purpose="word ids")
        teacher_tokenizer = (
            load_fast_tokenizer(teacher_path, purpose="word ids") if teacher_args.tokenizer_name else None
        )
        check_shared_vocabulary(tokenizer, teacher_config, teacher_tokenizer, teacher_args.tokenizer_name)
        hub = resolve_release_hub(config, what="the student release")  # --push_to_hub publishes it
    logger.info("curriculum: %s", schedule.describe())
    logger.info("distillation: %s", plan.to_dict())
    if corpus_report is not None and corpus_report.undecodable_lines:
        logger.warning("corpus: %s", corpus_report.summary())
    return _CheckedInputs(curriculum, schedule, plan, student_config, tokenizer, hub)


def _phase_callback(
    collator: CurriculumDataCollator,
    schedule: PhaseSchedule,
    teacher_args: TeacherArguments,
    config: DistillationConfig,
    data: Any,
    tokenizer: Any,
) -> PhaseScheduleCallback:
    """The phase callback of the run's one schedule: phase switches only (the student is released once, at the
    end), with the facts of the student's record."""
    teacher_path = teacher_args.teacher_model_name_or_path
    hub_id = base_model_hub_id(teacher_path, teacher_args.teacher_hub_id)
    run_info = {
        "base_model": hub_id or public_name(teacher_path),
        "base_model_hub_id": hub_id,
        "tokenizer": public_name(teacher_args.tokenizer_name or teacher_path),
        "vocab_size": len(tokenizer),
        "max_seq_length": data.max_seq_length,
        "packing": not config.line_by_line,
        "masked_only_prediction": True,
        "train_files": [os.path.basename(f) for f in config.train_file or []],
        "dataset_name": config.dataset_name,
    }
    return PhaseScheduleCallback(
        collator,
        schedule=schedule,
        evaluate_at_phase_end=False,
        allow_schedule_change=config.allow_schedule_change,
        releases=PhaseReleases(write=False, run_info=run_info),
    )


def _release_student(
    trainer: DistillationTrainer,
    teacher: Any,
    callback: PhaseScheduleCallback,
    collator: CurriculumDataCollator,
    plan: DistillationPlan,
    teacher_args: TeacherArguments,
    publisher: Any,
) -> None:
    """Step 8: held-out MLM loss of student and teacher, speed, and (main process) the student as a release at
    ``<output_dir>/student/``, handed to ``publisher``."""
    measured = trainer.measure_student_and_teacher(speed_batches=teacher_args.speed_batches)
    totals = collator.stats.summed_over_ranks()  # every rank: the masking the student saw, over all ranks
    if not trainer.is_world_process_zero():
        return
    facts = distillation_facts(
        plan,
        teacher_args.teacher_model_name_or_path,
        teacher,
        trainer.model,
        teacher_args.teacher_hub_id,
        measured["teacher_heldout_mlm_loss"],
        measured["speed"],
    )
    info = student_release_info(
        callback, facts, trainer.state.global_step, measured["metrics"], teacher_args.student_version, totals
    )
    target = write_student_release(trainer.args.output_dir, trainer.model, trainer.processing_class, info)
    logger.warning("student written to %s (held-out MLM loss %s; %s)", target, info.heldout_mlm_loss, measured)
    if publisher is not None:
        publisher(target)
