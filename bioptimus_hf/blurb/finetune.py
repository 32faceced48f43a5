"""Fine-tuning one model on one BLURB task, once per seed: ``AutoModelForSequenceClassification`` with the
task's ``problem_type``, the shared stabilisation options, the ``Trainer``; dev and test predicted and scored
with BLURB's metric. A seed whose ``seed_<s>/seed_results.json`` exists is skipped: a rerun with the same
``output_dir`` resumes after the last finished seed. A saved model gets its card (:mod:`bioptimus_hf.finetuning.model_card`).
With batched seeds, the unfinished seeds train together first, then each is predicted and written as alone (the
steps shared with NER: :mod:`bioptimus_hf.finetuning.seed_loop`).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass

from transformers import AutoConfig, AutoModelForSequenceClassification, DataCollatorWithPadding

from ..finetuning.batched_seeds import SeedTraining
from ..finetuning.model_card import build_blurb_card, write_card
from ..finetuning.results import seed_dir, seed_finished, write_seed_result
from ..finetuning.row_order_trainer import RowOrderTrainer
from ..finetuning.seed_loop import SeedRecipe, log_seed, seed_arguments, seed_trainer, train_seeds_together
from ..finetuning.stabilisation import StabilisationArguments, stabilisation_optimizer, stabilise_model
from ..releases.lineage import Lineage
from .data import BlurbData
from .encoding import decode_logits
from .metrics import score


logger = logging.getLogger(__name__)
PREDICTION_SPLITS = {"eval": "dev", "test": "test"}  # result-key prefix -> split


@dataclass
class BlurbTask:
    """What every seed fine-tunes on: the data, its encoded splits (``datasets.Dataset`` by split name) and the
    class the relation-extraction metric leaves out."""

    data: BlurbData
    encoded: dict
    negative_label: str | None = None

    def scores(self, split: str, predictions: Sequence) -> dict[str, float]:
        rows = self.data.splits()[split].rows
        scores = score(self.data.task, rows, predictions, self.data.labels, self.negative_label)
        return {**scores, "score": scores[self.data.task.metric]}


def load_classifier(model_name_or_path: str, data: BlurbData, ignore_mismatched_sizes: bool = False):
    """The model with a fresh head for ``data``: one output per class (one for regression), classifying from the
    first token's encoding."""
    labels = data.labels
    mapping = (
        {"num_labels": 1}
        if data.task.problem_type == "regression"
        else {
            "num_labels": len(labels),
            "id2label": dict(enumerate(labels)),
            "label2id": {label: i for i, label in enumerate(labels)},
        }
    )
    config = AutoConfig.from_pretrained(model_name_or_path, problem_type=data.task.problem_type, **mapping)
    if hasattr(config, "classifier_pooling"):  # ModernBERT can mean-pool; the paper's models read [CLS]
        config.classifier_pooling = "cls"
    return AutoModelForSequenceClassification.from_pretrained(
        model_name_or_path, config=config, ignore_mismatched_sizes=ignore_mismatched_sizes
    )


def _write_predictions(path: str, rows: Sequence[dict], predictions: Sequence) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        for row, prediction in zip(rows, predictions):
            handle.write(json.dumps({"id": row.get("id"), "prediction": prediction}) + "\n")


def blurb_recipe(
    model_name_or_path: str,
    task: BlurbTask,
    tokenizer,
    training_args,
    stabilisation: StabilisationArguments,
    save_model: bool = True,
    ignore_mismatched_sizes: bool = False,
    keep_checkpoints: bool = False,
) -> SeedRecipe:
    """How a seed of ``task`` is fine-tuned (:class:`~bioptimus_hf.finetuning.seed_loop.SeedRecipe`): the classifier
    with a fresh head, stabilised; the Trainer predicting in row order (HoC's documents are groups of rows)."""
    data = task.data

    def compute_metrics(prediction):  # dev scores at evaluation (--eval_strategy, --metric_for_best_model)
        return task.scores("dev", decode_logits(data.task, prediction.predictions, data.labels))

    def build_trainer(model, args, optimizers):
        return RowOrderTrainer(
            model=model,
            args=args,
            train_dataset=task.encoded["train"],
            eval_dataset=task.encoded["dev"],
            processing_class=tokenizer,
            data_collator=DataCollatorWithPadding(tokenizer),
            compute_metrics=compute_metrics,
            optimizers=optimizers,
        )

    return SeedRecipe(
        model_init=lambda seed: stabilise_model(
            load_classifier(model_name_or_path, data, ignore_mismatched_sizes), stabilisation
        ),
        build_trainer=build_trainer,
        train_dataset=task.encoded["train"],
        data_collator=DataCollatorWithPadding(tokenizer),
        optimizer_factory=lambda model: stabilisation_optimizer(model, stabilisation, training_args),
        processing_class=tokenizer,
        save_model=save_model,
        keep_checkpoints=keep_checkpoints,
    )


def fine_tune_seed(
    seed: int,
    model_name_or_path: str,
    task: BlurbTask,
    tokenizer,
    training_args,
    stabilisation: StabilisationArguments,
    save_model: bool = True,
    ignore_mismatched_sizes: bool = False,
    keep_checkpoints: bool = False,
    trained: SeedTraining | None = None,
) -> dict:
    """Fine-tune with ``seed`` into ``training_args.output_dir`` (or take its model ``trained`` with other seeds),
    leaving no Trainer checkpoint unless ``keep_checkpoints``; dev and test predicted and scored; returns the seed's
    results."""
    recipe = blurb_recipe(
        model_name_or_path,
        task,
        tokenizer,
        training_args,
        stabilisation,
        save_model,
        ignore_mismatched_sizes,
        keep_checkpoints,
    )
    trainer, run = seed_trainer(recipe, training_args, trained)
    data, output_dir = task.data, training_args.output_dir
    trainer.compute_metrics = None  # dev-bound; each split is scored against its own rows below
    for prefix, split in PREDICTION_SPLITS.items():
        if split not in task.encoded:
            continue
        logits = trainer.predict(task.encoded[split], metric_key_prefix=prefix).predictions
        predictions = decode_logits(data.task, logits, data.labels)
        run.update({f"{prefix}_{name}": value for name, value in task.scores(split, predictions).items()})
        if trainer.is_world_process_zero():
            os.makedirs(output_dir, exist_ok=True)
            _write_predictions(
                os.path.join(output_dir, f"{split}_predictions.jsonl"), data.splits()[split].rows, predictions
            )
    return run


def fine_tune_seeds(
    seeds: Sequence[int],
    model_name_or_path: str,
    task: BlurbTask,
    tokenizer,
    training_args,
    stabilisation: StabilisationArguments,
    run_info: dict,
    save_model: bool = True,
    ignore_mismatched_sizes: bool = False,
    lineage: Lineage | None = None,
    keep_checkpoints: bool = False,
    batched: bool = False,
) -> None:
    """Each unfinished seed fine-tuned into ``<output_dir>/seed_<s>/``, its results written as soon as it ends;
    with ``save_model``, its model's card beside it first (``lineage``: the start model, as the card names it).
    With ``batched``, the unfinished seeds train together first
    (:func:`~bioptimus_hf.finetuning.seed_loop.train_seeds_together`), then each is predicted and written;
    ``run_info`` records ``batched_seeds``: whether they did."""
    base_output_dir = training_args.output_dir
    unfinished = [seed for seed in seeds if not seed_finished(base_output_dir, seed)]
    for seed in (seed for seed in seeds if seed not in unfinished):
        logger.info("seed %d: results exist in %s, skipped", seed, seed_dir(base_output_dir, seed))
    recipe = blurb_recipe(
        model_name_or_path,
        task,
        tokenizer,
        training_args,
        stabilisation,
        save_model,
        ignore_mismatched_sizes,
        keep_checkpoints,
    )
    together = train_seeds_together(recipe, unfinished, training_args, batched)
    run_info = {**run_info, "batched_seeds": together is not None}
    for seed in unfinished:
        run = fine_tune_seed(
            seed,
            model_name_or_path,
            task,
            tokenizer,
            seed_arguments(training_args, seed),
            stabilisation,
            save_model,
            ignore_mismatched_sizes,
            keep_checkpoints,
            trained=together[seed] if together else None,
        )
        log_seed(run)
        if training_args.process_index == 0:
            if save_model:
                write_card(seed_dir(base_output_dir, seed), build_blurb_card(run, run_info, lineage))
            write_seed_result(base_output_dir, run, run_info)  # last: a seed without it is trained again
