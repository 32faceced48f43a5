"""The steps every seed of a fine-tuning run shares, NER's (:func:`bioptimus_hf.ner.fine_tuning.fine_tune_seeds`) and
BLURB's (:func:`bioptimus_hf.blurb.finetune.fine_tune_seeds`): a seed trains under a copy of the caller's
``TrainingArguments`` into ``<output_dir>/seed_<s>/`` (:func:`seed_arguments`), its training timed and its loss
averaged over ranks (:func:`train_seed`), its model kept or not and its Trainer checkpoints removed
(:func:`keep_seed_model`), its record logged (:func:`log_seed`). Its results file is :mod:`.results`'.

With batched seeds (``--batched_seeds``), a run's unfinished seeds first train together as one batched model
(:func:`train_seeds_together`, over :mod:`.batched_seeds`), then each seed's Trainer is built over its trained model
for the wing's evaluation, prediction and saving, as after a seed's own training (:func:`seed_trainer`: one path
for both). A wing describes its fine-tune once (:class:`SeedRecipe`).
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

from transformers import PreTrainedModel, Trainer, TrainingArguments, set_seed

from ..utils.distributed import sum_numbers_across_ranks
from ..utils.hardware import resolve_batched_seeds
from .batched_seeds import SeedTraining, batched_seeds_refusal, train_seeds_batched
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


@dataclasses.dataclass
class SeedRecipe:
    """How a wing fine-tunes a seed: ``model_init(seed)`` its model (called after ``set_seed(seed)``: loaded with a
    fresh head, stabilised), ``optimizer_factory(model)`` its optimizer (None: the Trainer's AdamW; the model may be
    the seeds' stacked one), ``build_trainer(model, args, optimizers)`` its Trainer (evaluation data and metrics
    included), the training data and collator, and what is kept of it."""

    model_init: Callable[[int], PreTrainedModel]
    build_trainer: Callable[[PreTrainedModel, TrainingArguments, tuple], Trainer]
    train_dataset: Any
    data_collator: Callable
    optimizer_factory: Callable[[Any], Any] = lambda model: None
    processing_class: Any = None
    save_model: bool = True
    keep_checkpoints: bool = False


def use_batched_seeds(requested: bool | None, training_args: TrainingArguments) -> bool:
    """``--batched_seeds`` for a run: as asked; unset, the default of its device
    (:func:`~bioptimus_hf.utils.hardware.resolve_batched_seeds`) where it runs as one process on one device (over
    several, each seed's batches are already split across them)."""
    if requested is None and (training_args.world_size > 1 or training_args.n_gpu > 1):
        return False
    return resolve_batched_seeds(requested, training_args.device)


def train_seeds_together(
    recipe: SeedRecipe, seeds: Sequence[int], training_args: TrainingArguments, batched: bool
) -> dict[int, SeedTraining] | None:
    """With ``batched``, ``seeds`` trained as one batched model (:func:`~.batched_seeds.train_seeds_batched`, saving
    no checkpoint: nothing resumes one), each seed's training by seed; None without ``batched``, without seeds, or
    where the run cannot (one line said why): then each seed trains alone in :func:`seed_trainer`."""
    if not batched or not seeds:
        return None
    args = training_args
    if batched_seeds_refusal(training_args) is None:
        args = dataclasses.replace(training_args, seed=seeds[0], save_strategy="no")
    trained = train_seeds_batched(
        seeds,
        recipe.model_init,
        args,
        recipe.train_dataset,
        recipe.data_collator,
        processing_class=recipe.processing_class,
        optimizer_factory=recipe.optimizer_factory,
    )
    return None if trained is None else {training.seed: training for training in trained}


def trained_seed_record(trained: SeedTraining) -> dict[str, Any]:
    """A seed trained with others' record so far, with :func:`train_seed`'s keys: the shared run's wall time and
    its steps per second (each a step of every seed)."""
    runtime = trained.train_runtime_s
    return {
        "seed": trained.seed,
        "train_runtime_s": runtime,
        "train_steps_per_second": trained.train_steps / runtime if runtime > 0 else 0.0,
        "train_loss": trained.train_loss,
    }


def seed_trainer(
    recipe: SeedRecipe, args: TrainingArguments, trained: SeedTraining | None = None
) -> tuple[Trainer, dict[str, Any]]:
    """The Trainer of the seed ``args`` are for (:func:`seed_arguments`) over its trained model, and the seed's record
    so far (:func:`train_seed`'s keys): its model built and trained here, or ``trained`` already (with other seeds);
    its model then kept or not (:func:`keep_seed_model`)."""
    if trained is None:
        set_seed(args.seed)
        model = recipe.model_init(args.seed)
        trainer = recipe.build_trainer(model, args, (recipe.optimizer_factory(model), None))
        run = train_seed(trainer, args.seed)
    else:
        trainer = recipe.build_trainer(trained.model, args, (None, None))
        run = trained_seed_record(trained)
    keep_seed_model(trainer, recipe.save_model, recipe.keep_checkpoints)
    return trainer, run
