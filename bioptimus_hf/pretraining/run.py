"""One pre-training run from its typed settings: what ``bioptimus pretrain`` runs, callable by anyone (the study
included): ``run_pretraining(PretrainingModelArguments(model_name_or_path=...), BioptimusConfig(...))``. Bad input
raises :class:`~bioptimus_hf.utils.errors.BadInput` naming the flag or file."""

from __future__ import annotations

import logging
from contextlib import nullcontext

from ..releases.release_config import resolve_release_hub
from ..utils.errors import bad_input
from .bioptimus_config import BioptimusConfig, PretrainingModelArguments
from .lexical_warmup import check_training_arguments
from .run_lifecycle import checkpoint_step, finish_run, open_output_dir


logger = logging.getLogger(__name__)


def run_pretraining(model_args: PretrainingModelArguments, config: BioptimusConfig) -> list[str] | None:
    """One pre-training run (or its resumption); returns the names of the releases written (None when the output
    directory's run was already finished). ``config`` is changed as the Trainer needs it (Hub push off,
    ``remove_unused_columns`` off). Bad input raises ``BadInput``; configures no logging and leaves the process
    group alone."""
    from .bioptimus_trainer import BioptimusTrainer, curriculum_schedule
    from .data import check_pretraining_data, init_corpus, load_raw_corpus

    # 1. Everything that can be checked without a model is checked first: bad input fails in seconds (a lexical
    #    warm-up longer than the run, or one these training arguments cannot run, included).
    with bad_input():
        plan = curriculum_schedule(config)  # the one schedule of the run
        corpus_report = check_pretraining_data(config)
        hub = resolve_release_hub(config)  # --push_to_hub publishes releases, not the Trainer
        for note in check_training_arguments(config) if plan.warmup is not None else []:
            logger.info("lexical warm-up: %s", note)
    logger.info("curriculum: %s", plan.schedule.describe())
    if corpus_report is not None:
        logger.info("corpus check: %s", corpus_report.summary())
        if corpus_report.undecodable_lines:
            logger.warning("corpus: %s", corpus_report.summary())

    # 2. The output directory: locked for this run (the lock removed when it ends); resume from its last complete
    #    checkpoint.
    with bad_input(RuntimeError, FileExistsError, FileNotFoundError):
        checkpoint, lock = open_output_dir(config, plan.schedule)
    with lock or nullcontext():
        if checkpoint is not None and checkpoint_step(checkpoint) >= config.max_steps:
            logger.warning(  # at the default verbosity: a run that does nothing says why
                f"{config.output_dir} holds a finished run ({checkpoint.name}, step {checkpoint_step(checkpoint)}): "
                "nothing to do, the other flags are not used; to train again, give a new --output_dir (or remove it)"
            )
            return None

        # 3. The corpus, then the trainer: start model (the paper's Table 1), masked-only head, packed blocks with word
        #    ids, the curriculum's collator and phase callback (a release at each phase end).
        raw = load_raw_corpus(config, config.cache_dir, config.seed)
        with bad_input(), init_corpus(config, raw["train"]):  # the contexts of new tokens: data.init_corpus
            trainer = BioptimusTrainer(
                model_args.model_name_or_path,
                args=config,
                train_dataset=raw["train"],
                eval_dataset=raw.get("validation"),
                processing_class=model_args.tokenizer_name,
                release_hub=hub,
            )
        if lock is not None:
            trainer.add_callback(lock.watch())  # the output directory removed mid-run: one line, not a run with holes

        # 4. Train: one run (the lexical warm-up, then the curriculum), a release at each phase end.
        train_result = trainer.train(resume_from_checkpoint=str(checkpoint) if checkpoint else None)

        # 5. Final model, metrics and the list of releases.
        return finish_run(trainer, trainer.data_collator, train_result, trainer.release_publisher)
