"""``bioptimus distill`` (``python run_distillation.py``): distil a compact student from a BIOptimus release (or
any BERT masked LM) with the recipes of Rohanian et al. (DistilBioBERT, CompactBioBERT, TinyBioBERT), on the corpus
and through the curriculum of ``bioptimus pretrain``.

    bioptimus distill --teacher_model_name_or_path T --student_layers 0 2 4 \\
        --train_file corpus.txt --output_dir O --max_steps N                      # DistilBioBERT, half depth
    bioptimus distill --teacher_model_name_or_path T --recipe compactbiobert ...
    bioptimus distill --teacher_model_name_or_path T --recipe tinybiobert --student_layers 1 3 5 \\
        --student_hidden_size 192 ...
    bioptimus distill ... --single_phase all      # through the curriculum (default: phase 0.1 only)
    torchrun --nproc_per_node 8 run_distillation.py ...

The student is written to ``<output_dir>/student/`` as a release (plain ``BertForMaskedLM``, tokenizer,
``bioptimus_phase.json`` with the distillation record, model card), loadable with
``AutoModelForMaskedLM.from_pretrained`` and publishable with ``bioptimus publish --run_dir O/student``.
See docs/distillation.md.
"""

import logging
import os
from dataclasses import dataclass, field
from typing import Optional

from transformers import AutoConfig, TrainingArguments, set_seed

from bioptimus_hf.commands.config_parser import parse_args
from bioptimus_hf.distillation.distillation_config import DistillationConfig, check_shared_vocabulary
from bioptimus_hf.distillation.distillation_trainer import DistillationTrainer
from bioptimus_hf.distillation.student import build_student, load_teacher
from bioptimus_hf.distillation.student_release import (
    distillation_facts,
    student_release_info,
    write_student_release,
)
from bioptimus_hf.pretraining.callback import PhaseScheduleCallback
from bioptimus_hf.pretraining.curriculum_config import CurriculumArguments
from bioptimus_hf.pretraining.data import load_pretraining_datasets
from bioptimus_hf.pretraining.data_config import PretrainingDataArguments
from bioptimus_hf.pretraining.run_lifecycle import finish_run, open_output_dir, resolve_run_schedule, setup_logging
from bioptimus_hf.releases.lineage import base_model_hub_id, base_model_hub_id_field, public_name
from bioptimus_hf.releases.publisher import start_release_publisher
from bioptimus_hf.releases.release_config import ReleaseArguments, resolve_release_hub
from bioptimus_hf.utils.cli import exit_on_bad_input
from bioptimus_hf.utils.distributed import close_process_group
from bioptimus_hf.utils.sequence_length import max_model_tokens
from bioptimus_hf.utils.tokenizer_loader import load_fast_tokenizer


logger = logging.getLogger(__name__)


@dataclass
class StudentCurriculumArguments(CurriculumArguments):
    single_phase: Optional[str] = field(
        default="0.1",
        metadata={
            "help": "The masking phase of the whole run: 0.1 (default: BERT's token masking at 15%%, as in "
            "DistilBERT and Rohanian et al.), another phase's version, or 'all' to distil through the "
            "whole curriculum (--phase_steps as in run_pretraining.py)."
        },
    )


@dataclass
class TeacherArguments:
    teacher_model_name_or_path: str = field(
        metadata={"help": "The teacher: a BIOptimus release (releases/v0.4) or any BERT masked LM with its MLM head."}
    )
    tokenizer_name: Optional[str] = field(
        default=None, metadata={"help": "Tokenizer (default: the teacher's); it must be the teacher's vocabulary."}
    )
    teacher_hub_id: Optional[str] = base_model_hub_id_field(
        "the teacher", "--teacher_model_name_or_path", aliases=["--base_model_hub_id"]
    )
    student_version: Optional[str] = field(
        default=None, metadata={"help": "Version of the student release (default: the last curriculum phase's)."}
    )
    speed_batches: int = field(
        default=4, metadata={"help": "Held-out batches timed for the card's teacher/student speed (0 = skip)."}
    )


def main(argv=None):
    """``[config.{yaml,json}] [--flag value ...]``: parse, then distil (bad input ends with one line)."""
    teacher_args, distillation_config, data_args, curriculum_args, release_args, training_args = parse_args(
        (
            TeacherArguments,
            DistillationConfig,
            PretrainingDataArguments,
            StudentCurriculumArguments,
            ReleaseArguments,
            TrainingArguments,
        ),
        argv,
    )
    setup_logging(training_args)

    # 1. Everything that can be checked without model weights: schedule, corpus, teacher configuration, the
    #    distillation plan (layers, layer map, projection, heads, weights) and the shared vocabulary.
    teacher_path = teacher_args.teacher_model_name_or_path
    with exit_on_bad_input(ValueError, OSError):
        curriculum, schedule, corpus_report = resolve_run_schedule(training_args, curriculum_args, data_args)
        teacher_config = AutoConfig.from_pretrained(teacher_path)
        student_config = (
            AutoConfig.from_pretrained(distillation_config.student_config_name)
            if distillation_config.student_config_name
            else None
        )
        plan = distillation_config.resolve(teacher_config, student_config)
        tokenizer = load_fast_tokenizer(teacher_args.tokenizer_name or teacher_path, purpose="word ids")
        teacher_tokenizer = (
            load_fast_tokenizer(teacher_path, purpose="word ids") if teacher_args.tokenizer_name else None
        )
        check_shared_vocabulary(tokenizer, teacher_config, teacher_tokenizer, teacher_args.tokenizer_name)
        hub = resolve_release_hub(release_args, training_args, "the student release")  # --push_to_hub publishes it
    logger.info("curriculum: %s", schedule.describe())
    logger.info("distillation: %s", plan.to_dict())
    if corpus_report is not None and corpus_report.undecodable_lines:
        logger.warning("corpus: %s", corpus_report.summary())

    # 2. The output directory: locked for this run; resume from its last complete checkpoint.
    with exit_on_bad_input(RuntimeError, FileExistsError, FileNotFoundError):
        checkpoint, _lock = open_output_dir(
            training_args, release_args.overwrite_output_dir, schedule, curriculum_args.allow_schedule_change
        )
    set_seed(training_args.seed)

    # 3. Teacher (with its MLM head) and student (kept teacher layers, or a random smaller configuration).
    with exit_on_bad_input(ValueError):
        teacher = load_teacher(teacher_path, plan)
    student = build_student(teacher, plan, student_config)

    # 4. The masking collator of the curriculum; 5. the corpus as packed blocks with word ids.
    collator = curriculum_args.build_collator(tokenizer, curriculum, training_args.seed, data_args.line_by_line)
    longest = min(max_model_tokens(teacher, tokenizer), max_model_tokens(student, tokenizer))  # both must take it
    data = load_pretraining_datasets(data_args, tokenizer, training_args, model_max_tokens=longest)
    training_args.remove_unused_columns = False  # word_ids / special_tokens_mask feed the collator
    if data_args.streaming:
        training_args.accelerator_config.dispatch_batches = False

    # 6. The phase callback (phase switches; the student is released once, at the end) and the trainer.
    hub_id = base_model_hub_id(teacher_path, teacher_args.teacher_hub_id)
    callback = PhaseScheduleCallback(
        collator,
        phase_steps=schedule.step_counts,
        write_releases=False,
        evaluate_at_phase_end=False,
        run_info={
            "base_model": hub_id or public_name(teacher_path),
            "base_model_hub_id": hub_id,
            "tokenizer": public_name(teacher_args.tokenizer_name or teacher_path),
            "vocab_size": len(tokenizer),
            "max_seq_length": data.max_seq_length,
            "packing": not data_args.line_by_line,
            "masked_only_prediction": True,
            "train_files": [os.path.basename(f) for f in data_args.train_file or []],
            "dataset_name": data_args.dataset_name,
        },
        allow_schedule_change=curriculum_args.allow_schedule_change,
    )
    with exit_on_bad_input(ValueError):
        trainer = DistillationTrainer(
            model=student,
            teacher_model=teacher,
            plan=plan,
            args=training_args,
            train_dataset=data.train,
            eval_dataset=data.eval,
            processing_class=tokenizer,
            data_collator=collator,
        )
    trainer.callback_handler.callbacks.insert(0, callback)

    # 7. Distil.
    train_result = trainer.train(resume_from_checkpoint=str(checkpoint) if checkpoint else None)

    # 8. Held-out MLM loss of student and teacher, speed, and the student as a release at <output_dir>/student/.
    publisher = start_release_publisher(hub, training_args)
    measured = trainer.measure_student_and_teacher(speed_batches=teacher_args.speed_batches)
    totals = collator.stats.summed_over_ranks()  # every rank: the masking the student saw, over all ranks
    if trainer.is_world_process_zero():
        facts = distillation_facts(
            plan,
            teacher_path,
            teacher,
            trainer.model,
            teacher_args.teacher_hub_id,
            measured["teacher_heldout_mlm_loss"],
            measured["speed"],
        )
        info = student_release_info(
            callback, facts, trainer.state.global_step, measured["metrics"], teacher_args.student_version, totals
        )
        target = write_student_release(training_args.output_dir, trainer.model, tokenizer, info)
        logger.info("student written to %s (held-out MLM loss %s; %s)", target, info.heldout_mlm_loss, measured)
        if publisher is not None:
            publisher(target)

    # 9. Final model, metrics and state of the run (and the student on the Hub, with --push_to_hub).
    finish_run(trainer, collator, train_result, publisher)

    # 10. Under torchrun / accelerate: every rank waits for the others, then the process group is closed.
    close_process_group()


if __name__ == "__main__":
    main()
