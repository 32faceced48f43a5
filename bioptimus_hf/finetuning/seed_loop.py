"""The steps every seed of a fine-tuning run shares, NER's (:func:`bioptimus_hf.ner.fine_tuning.fine_tune_seeds`) and
BLURB's (:func:`bioptimus_hf.blurb.finetune.fine_tune_seeds`): a seed trains under a copy of the caller's
``TrainingArguments`` into ``<output_dir>/seed_<s>/`` (:func:`seed_arguments`), its training timed and its loss
averaged over ranks (:func:`train_seed`), its model kept or not and its Trainer checkpoints removed
(:func:`keep_seed_model`), its record logged (:func:`log_seed`). Its results file is :mod:`.results`'.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from typing import Any

from transformers import Trainer, TrainingArguments

from ..utils.distributed import sum_numbers_across_ranks
from .results import remove_checkpoints, seed_dir


logger = logging.getLogger(__name__)


def seed_arguments(training_args: TrainingArguments, seed: int) -> TrainingArguments:
    """A copy of ``training_args`` for ``seed``: its ``seed``, and ``output_dir`` its ``seed_<s>/`` directory (the
    caller's arguments stay as they are)."""
    return dataclasses.replace(training_args, seed=seed, output_dir=seed_dir(training_args.output_dir, seed))


def train_seed(trainer: Trainer, seed: int) -> dict[str, Any]:
    """Train; the seed's record so far: ``seed``, ``train_runtime_s``, the Trainer's own ``train_steps_per_second``
    and ``train_loss``, the mean over ranks (the Trainer's ``training_loss`` is this rank's own since its last log)."""
    start = time.perf_counter()
    output = trainer.train()
    runtime = time.perf_counter() - start
    loss = sum_numbers_across_ranks([output.training_loss])[0] / trainer.args.world_size
    steps_per_second = output.metrics["train_steps_per_second"]
    return {"seed": seed, "train_runtime_s": runtime, "train_steps_per_second": steps_per_second, "train_loss": loss}


def keep_seed_model(trainer: Trainer, save_model: bool, keep_checkpoints: bool = False) -> None:
    """With ``save_model``, the fine-tuned model saved into the seed's directory (``trainer.args.output_dir``); its
    Trainer checkpoints removed there unless ``keep_checkpoints`` (:func:`~.results.remove_checkpoints`)."""
    output_dir = trainer.args.output_dir
    if save_model:
        trainer.save_model(output_dir)
    if not keep_checkpoints and trainer.is_world_process_zero():
        remove_checkpoints(output_dir)


def log_seed(run: dict[str, Any]) -> None:
    logger.info("seed %d: %s", run["seed"], {k: round(v, 4) if isinstance(v, float) else v for k, v in run.items()})
