"""``bioptimus pretrain`` (``python run_pretraining.py``): continued masked-LM pre-training through the BIOptimus
curriculum, releasing a model per phase.

Modelled on transformers' examples/pytorch/language-modeling/run_mlm.py:

    bioptimus pretrain configs/demo_minilm.yaml                       # a config file...
    bioptimus pretrain configs/demo_minilm.yaml --max_steps 400       # ...with overrides
    torchrun --nproc_per_node 8 run_pretraining.py configs/bioptimus_full_scale.yaml

Each phase end writes ``<output_dir>/releases/v0.<k>/`` (model, tokenizer, ``bioptimus_phase.json``
with the held-out MLM loss, model card), loadable with ``AutoModelForMaskedLM.from_pretrained``.
:func:`pretrain` is the same run for parsed arguments (the study calls it).
"""

import logging
import os
from dataclasses import dataclass, field
from typing import Optional

from transformers import Trainer, TrainingArguments, set_seed

from bioptimus_hf.commands.config_parser import parse_args
from bioptimus_hf.pretraining.callback import PhaseScheduleCallback
from bioptimus_hf.pretraining.curriculum_config import CurriculumArguments, LexicalWarmupArguments
from bioptimus_hf.pretraining.data import load_pretraining_datasets, text_corpus_files
from bioptimus_hf.pretraining.data_config import PretrainingDataArguments
from bioptimus_hf.pretraining.lexical_warmup import (
    LexicalWarmup,
    LexicalWarmupTrainer,
    LexicalWarmupUnsupported,
    check_training_arguments,
    lexical_parameters,
)
from bioptimus_hf.pretraining.masked_lm import masked_only_status, use_masked_only_prediction
from bioptimus_hf.pretraining.run_lifecycle import (
    checkpoint_step,
    finish_run,
    open_output_dir,
    resolve_run_schedule,
    setup_logging,
)
from bioptimus_hf.pretraining.static_shapes import allow_compiled_shapes
from bioptimus_hf.releases.lineage import base_model_hub_id, base_model_hub_id_field, public_name
from bioptimus_hf.releases.publisher import start_release_publisher
from bioptimus_hf.releases.release_config import ReleaseArguments, resolve_release_hub
from bioptimus_hf.utils.allocator import retain_freed_memory
from bioptimus_hf.utils.bulk_dropout import BULK_DROPOUT_HELP, enable_bulk_dropout, use_bulk_dropout
from bioptimus_hf.utils.cli import exit_on_bad_input
from bioptimus_hf.utils.distributed import close_process_group
from bioptimus_hf.utils.files import write_json_atomic
from bioptimus_hf.utils.sequence_length import max_model_tokens
from bioptimus_hf.vocabulary.embedding_init import (
    INIT_REPORT_NAME,
    build_initialized_model,
    start_model_provenance,
    vocabulary_facts,
)
from bioptimus_hf.vocabulary.init_config import EmbeddingInitArguments


logger = logging.getLogger(__name__)


@dataclass
class ModelArguments:
    model_name_or_path: Optional[str] = field(
        default=None, metadata={"help": "Base model (Hub id or directory). Required unless --init_strategy scratch."}
    )
    config_name: Optional[str] = field(default=None, metadata={"help": "Architecture for --init_strategy scratch."})
    tokenizer_name: Optional[str] = field(
        default=None,
        metadata={"help": "Tokenizer of the run: the new (biomedical) vocabulary for every strategy but continued."},
    )
    base_model_hub_id: Optional[str] = base_model_hub_id_field()
    masked_only_prediction: bool = field(
        default=True,
        metadata={
            "help": "Run the MLM head only at masked positions (exact loss and gradients; BERT, RoBERTa, "
            "XLM-RoBERTa, DistilBERT, ELECTRA, DeBERTa-v2, ModernBERT and any masked LM whose head "
            "passes the same checks; others keep the standard head with a warning). See docs/speed.md."
        },
    )
    static_masked_positions: Optional[bool] = field(
        default=None,
        metadata={
            "help": "Gather the masked positions padded to a fixed size per phase (static shapes: "
            "--torch_compile compiles once per phase, no host sync on a GPU; nothing is dropped). "
            "Default: on with --torch_compile. Needs masked-only prediction. See docs/speed.md."
        },
    )
    bulk_dropout: Optional[bool] = field(
        default=None,
        metadata={"help": BULK_DROPOUT_HELP + " Default: on, except on Intel CPUs, where torch draws them with MKL."},
    )
    retain_freed_memory: bool = field(
        default=True,
        metadata={
            "help": "On a CPU with glibc, keep freed memory in the process between steps (mallopt) instead "
            "of mapping and page-faulting it again every step. See docs/speed.md."
        },
    )


# The arguments of a pre-training run, in the order main() parses them and pretrain() takes them.
ARGUMENT_TYPES = (
    ModelArguments,
    EmbeddingInitArguments,
    PretrainingDataArguments,
    CurriculumArguments,
    LexicalWarmupArguments,
    ReleaseArguments,
    TrainingArguments,
)


def main(argv=None):
    """``[config.{yaml,json}] [--flag value ...]``: parse, then :func:`pretrain`."""
    pretrain(*parse_args(ARGUMENT_TYPES, argv))


def pretrain(
    model_args: ModelArguments,
    init_args: EmbeddingInitArguments,
    data_args: PretrainingDataArguments,
    curriculum_args: CurriculumArguments,
    warmup_args: LexicalWarmupArguments,
    release_args: ReleaseArguments,
    training_args: TrainingArguments,
) -> None:
    """One pre-training run (or its resumption) from parsed arguments; bad input ends it with one line."""
    setup_logging(training_args)

    # 1. Everything that can be checked without a model is checked first: bad input fails in seconds (a lexical
    #    warm-up longer than the run, or one these training arguments cannot run, included).
    with exit_on_bad_input():
        curriculum, schedule, corpus_report = resolve_run_schedule(
            training_args, curriculum_args, data_args, warmup_args.lexical_warmup_steps
        )
        hub = resolve_release_hub(release_args, training_args)  # --push_to_hub publishes releases, not the Trainer
        warmup = None
        if schedule.lexical_warmup_steps:  # its steps as resolved here, for the Trainer and the phases alike
            warmup = LexicalWarmup(schedule.lexical_warmup_steps, warmup_args.lexical_warmup_learning_rate)
            if warmup_args.lexical_warmup_release in schedule.versions:
                raise ValueError(
                    f"--lexical_warmup_release {warmup_args.lexical_warmup_release} is a version of the "
                    f"curriculum ({', '.join(schedule.versions)}): give the warm-up's release its own "
                    "(e.g. 0.0)"
                )
            for note in check_training_arguments(training_args):
                logger.info("lexical warm-up: %s", note)
    logger.info("curriculum: %s", schedule.describe())
    if corpus_report is not None:
        logger.info("corpus check: %s", corpus_report.summary())
        if corpus_report.undecodable_lines:
            logger.warning("corpus: %s", corpus_report.summary())

    # 2. The output directory: locked for this run; resume from its last complete checkpoint.
    with exit_on_bad_input(RuntimeError, FileExistsError, FileNotFoundError):
        checkpoint, _lock = open_output_dir(
            training_args, release_args.overwrite_output_dir, schedule, curriculum_args.allow_schedule_change
        )
    if checkpoint is not None and checkpoint_step(checkpoint) >= training_args.max_steps:
        logger.info(
            "%s is at step %d of %d: the run is finished, nothing to do",
            checkpoint,
            checkpoint_step(checkpoint),
            training_args.max_steps,
        )
        return
    set_seed(training_args.seed)

    # 3. The model that training starts from (the paper's Table 1), and the MLM head at masked positions only.
    init_args.init_corpus_files = init_args.init_corpus_files or text_corpus_files(data_args)
    with exit_on_bad_input():
        model, tokenizer, init_report = build_initialized_model(
            model_args.model_name_or_path,
            model_args.tokenizer_name,
            init_args,
            seed=training_args.seed,
            config_name=model_args.config_name,
            progress=not training_args.disable_tqdm,
        )
    masked_only = use_masked_only_prediction(
        model, model_args.masked_only_prediction, training_args.gradient_accumulation_steps
    )
    logger.info("masked-only prediction: %s", masked_only_status(model))
    on_cpu = training_args.device.type == "cpu"
    dropout_masks = "torch"
    if use_bulk_dropout(model_args.bulk_dropout, training_args):
        logger.info("bulk dropout: %s", enable_bulk_dropout(model))
        dropout_masks = "bulk"
    if model_args.retain_freed_memory and on_cpu:
        logger.info("allocator: %s", retain_freed_memory())
    lexical_warmup_facts = None
    if warmup is not None:
        with exit_on_bad_input(LexicalWarmupUnsupported):
            lexical = lexical_parameters(model)
        lexical_warmup_facts = warmup.facts(
            training_args, lexical, schedule.versions[0], warmup_args.lexical_warmup_release
        )
        logger.info(
            "lexical warm-up: %d steps at peak learning rate %g on v%s's masking, training %s",
            schedule.lexical_warmup_steps,
            lexical_warmup_facts.learning_rate,
            schedule.versions[0],
            lexical.describe(),
        )

    # 4. The masking collator of the curriculum (it refuses a tokenizer without a mask token).
    with exit_on_bad_input(ValueError):
        collator = curriculum_args.build_collator(tokenizer, curriculum, training_args.seed, data_args.line_by_line)
    static_shapes = model_args.static_masked_positions
    if static_shapes is None:
        static_shapes = bool(training_args.torch_compile) and masked_only
    elif static_shapes and not masked_only:
        logger.warning("--static_masked_positions needs masked-only prediction, which is off: not used")
        static_shapes = False
    collator.static_masked_positions = static_shapes
    if static_shapes and training_args.torch_compile:
        # The warm-up's end recompiles the first phase's graph once (requires_grad is part of its guards).
        allow_compiled_shapes(len(curriculum.phases) + (1 if warmup is not None else 0))
    logger.info("static masked positions (one compiled shape per phase): %s", "on" if static_shapes else "off")

    # 5. The corpus as packed blocks with word ids.
    data = load_pretraining_datasets(
        data_args,
        tokenizer,
        training_args,
        cache_dir=init_args.cache_dir,
        model_max_tokens=max_model_tokens(model, tokenizer),
    )
    training_args.remove_unused_columns = False  # word_ids / special_tokens_mask feed the collator
    if data_args.streaming:
        # Each rank reads its own shard; rank 0 must not collate and broadcast for everybody.
        training_args.accelerator_config.dispatch_batches = False

    # 6. The callback that switches phases and writes a release at each phase end, and the Trainer.
    publisher = start_release_publisher(hub, training_args)
    # A checkpoint of bioptimus-init-embeddings continued here is described by its own initialisation and base.
    init_strategy, base_model, tokenizer_name = start_model_provenance(
        model_args.model_name_or_path, model_args.tokenizer_name, init_args.init_strategy
    )
    hub_id = base_model_hub_id(base_model, model_args.base_model_hub_id)
    callback = PhaseScheduleCallback(
        collator,
        phase_steps=schedule.step_counts,
        evaluate_at_phase_end=data.eval is not None,
        run_info={
            "base_model": hub_id or public_name(base_model),
            "base_model_hub_id": hub_id,
            "init_strategy": init_strategy,
            "tokenizer": public_name(tokenizer_name),
            "vocab_size": len(tokenizer),
            "max_seq_length": data.max_seq_length,
            "packing": not data_args.line_by_line,
            "masked_only_prediction": masked_only,
            "dropout_masks": dropout_masks,
            "masking_stream": collator.masking_stream,
            "train_files": [os.path.basename(f) for f in data_args.train_file or []],
            "dataset_name": data_args.dataset_name,
            **vocabulary_facts(init_report, model_args.model_name_or_path),
            **({"lexical_warmup": lexical_warmup_facts} if lexical_warmup_facts is not None else {}),
        },
        on_release=[publisher] if publisher is not None else [],
        allow_schedule_change=curriculum_args.allow_schedule_change,
        lexical_warmup_steps=schedule.lexical_warmup_steps,
        lexical_warmup_release=warmup_args.lexical_warmup_release,
    )
    # With a lexical warm-up, the Trainer freezes the body for it and runs its learning-rate schedule.
    trainer_class, warmup_kwargs = (LexicalWarmupTrainer, {"lexical_warmup": warmup}) if warmup else (Trainer, {})
    trainer = trainer_class(
        model=model,
        args=training_args,
        train_dataset=data.train,
        eval_dataset=data.eval,
        processing_class=tokenizer,
        data_collator=collator,
        **warmup_kwargs,
    )
    trainer.add_callback(callback)
    if init_report is not None and trainer.is_world_process_zero():
        write_json_atomic(f"{training_args.output_dir}/{INIT_REPORT_NAME}", init_report)

    # 7. Train: one run (the lexical warm-up, then the curriculum), a release at each phase end.
    train_result = trainer.train(resume_from_checkpoint=str(checkpoint) if checkpoint else None)

    # 8. Final model, metrics and the list of releases.
    finish_run(trainer, collator, train_result, publisher)

    # 9. Under torchrun / accelerate: every rank waits for the others, then the process group is closed.
    close_process_group()


if __name__ == "__main__":
    main()
