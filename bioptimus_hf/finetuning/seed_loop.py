"""The seed loop of every fine-tuning run, NER's and BLURB's: :func:`fine_tune_seeds`. Each seed starts from the same
model with a fresh head, trains into ``<output_dir>/seed_<s>/``, is scored by its wing, and writes last its
``seed_results.json`` (a seed without it is trained again). ``--batched_seeds`` trains them together first
(:mod:`.batched_seeds`). A wing describes its fine-tune once, as a :class:`SeedRecipe`."""

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
from .finetuning_config import FineTuningModelArguments, StabilisationArguments
from .model_card import write_card
from .results import remove_checkpoints, seed_dir, seed_finished, write_seed_result
from .row_order_trainer import RowOrderTrainer
from .stabilisation import stabilisation_optimizer, stabilise_model


logger = logging.getLogger(__name__)


@dataclasses.dataclass
class SeedRecipe:
    """How a wing fine-tunes a seed: ``load_model()`` the start model with a fresh head (then stabilised as
    ``stab_args`` ask), the :class:`RowOrderTrainer`'s data, collator, tokenizer and metrics (``trainer_kwargs``),
    ``score(trainer)`` the trained seed's scores, ``card(run, run_info)`` a saved model's card; with ``resume``, a
    seed whose results exist is skipped."""

    model_args: FineTuningModelArguments
    stab_args: StabilisationArguments
    load_model: Callable[[], PreTrainedModel]
    trainer_kwargs: dict[str, Any]
    score: Callable[[Trainer], dict[str, Any]]
    card: Callable[[dict, dict], Any]
    resume: bool = False

    def model_init(self, seed: int) -> PreTrainedModel:
        """A seed's model, called after ``set_seed(seed)``: its head drawn from the seed's random state."""
        return stabilise_model(self.load_model(), self.stab_args)

    def optimizer(self, model, training_args: TrainingArguments):
        """AdamW with layer-wise rates under layer-wise decay, else None (the Trainer's own); ``model`` may be the
        seeds' stacked one."""
        return stabilisation_optimizer(model, self.stab_args, training_args)


def seed_arguments(training_args: TrainingArguments, seed: int) -> TrainingArguments:
    """A copy of ``training_args`` for ``seed``, into its ``seed_<s>/`` directory."""
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


def trained_seed_record(trained: SeedTraining) -> dict[str, Any]:
    """:func:`train_seed`'s record of a seed trained with others: the shared run's wall time and steps per second
    (each a step of every seed)."""
    runtime = trained.train_runtime_s
    return {
        "seed": trained.seed,
        "train_runtime_s": runtime,
        "train_steps_per_second": trained.train_steps / runtime if runtime > 0 else 0.0,
        "train_loss": trained.train_loss,
    }


def use_batched_seeds(requested: bool | None, training_args: TrainingArguments) -> bool:
    """``--batched_seeds``: as asked; unset, the default of the run's device
    (:func:`~bioptimus_hf.utils.hardware.resolve_batched_seeds`) where it runs as one process on one device (over
    several, each seed's batches are already split across them)."""
    if requested is None and (training_args.world_size > 1 or training_args.n_gpu > 1):
        return False
    return resolve_batched_seeds(requested, training_args.device)


def train_seeds_together(
    recipe: SeedRecipe, seeds: Sequence[int], training_args: TrainingArguments, batched: bool
) -> dict[int, SeedTraining] | None:
    """With ``batched``, ``seeds`` trained as one stacked model (saving no checkpoint: nothing resumes one), by
    seed; None without ``batched`` or seeds, or where the run cannot (one line says why): each seed then trains
    alone."""
    if not batched or not seeds:
        return None
    args = training_args
    if batched_seeds_refusal(training_args) is None:  # a refused setting may not survive the copy's checks
        args = dataclasses.replace(training_args, seed=seeds[0], save_strategy="no")
    kwargs = recipe.trainer_kwargs
    trained = train_seeds_batched(
        seeds,
        recipe.model_init,
        args,
        kwargs["train_dataset"],
        kwargs["data_collator"],
        processing_class=kwargs.get("processing_class"),
        optimizer_factory=lambda model: recipe.optimizer(model, training_args),
    )
    return None if trained is None else {training.seed: training for training in trained}


def seed_trainer(
    recipe: SeedRecipe, args: TrainingArguments, trained: SeedTraining | None = None
) -> tuple[Trainer, dict[str, Any]]:
    """The Trainer of the seed ``args`` are for (:func:`seed_arguments`) over its model, trained here or already
    (``trained``, with other seeds), and the seed's record so far; the model saved as ``--save_model`` asks and the
    Trainer's checkpoints removed unless ``--keep_checkpoints``."""
    if trained is None:
        set_seed(args.seed)
        model = recipe.model_init(args.seed)
        optimizers = (recipe.optimizer(model, args), None)
        trainer = RowOrderTrainer(model=model, args=args, optimizers=optimizers, **recipe.trainer_kwargs)
        run = train_seed(trainer, args.seed)
    else:
        trainer = RowOrderTrainer(model=trained.model, args=args, **recipe.trainer_kwargs)
        run = trained_seed_record(trained)
    if recipe.model_args.save_model:
        trainer.save_model(args.output_dir)
    if not recipe.model_args.keep_checkpoints and trainer.is_world_process_zero():
        remove_checkpoints(args.output_dir)
    return trainer, run


def fine_tune_seeds(
    recipe: SeedRecipe, seeds: Sequence[int], training_args: TrainingArguments, run_info: dict, batched: bool
) -> list[dict[str, Any]]:
    """Each seed (with ``recipe.resume``, each unfinished one) fine-tuned into ``<output_dir>/seed_<s>/``, trained
    together first with ``batched``; the main process writes a saved model's card and the seed's results (its scores
    and ``run_info``, which records ``batched_seeds``: whether they trained together). Returns the seeds' records."""
    output_dir = training_args.output_dir
    if recipe.resume:
        done = [seed for seed in seeds if seed_finished(output_dir, seed)]
        for seed in done:
            logger.info("seed %d: results exist in %s, skipped", seed, seed_dir(output_dir, seed))
        seeds = [seed for seed in seeds if seed not in done]
    together = train_seeds_together(recipe, seeds, training_args, batched)
    run_info = {**run_info, "batched_seeds": together is not None}
    runs = []
    for seed in seeds:
        args = seed_arguments(training_args, seed)
        trainer, run = seed_trainer(recipe, args, together[seed] if together else None)
        run.update(recipe.score(trainer))
        logger.info("seed %d: %s", seed, {k: round(v, 4) if isinstance(v, float) else v for k, v in run.items()})
        if trainer.is_world_process_zero():
            if recipe.model_args.save_model:
                write_card(args.output_dir, recipe.card(run, run_info))
            write_seed_result(output_dir, run, run_info)
        runs.append(run)
    return runs
