"""One model fine-tuned and evaluated on one BLURB dataset beyond NER over several seeds (``bioptimus blurb-task``, a
job of ``bioptimus blurb``): ``AutoModelForSequenceClassification`` with the task's ``problem_type`` and ``[CLS]``
pooling, each seed through :func:`bioptimus_hf.finetuning.seed_loop.fine_tune_seeds`, dev and test scored with
BLURB's metric (``eval_score``/``test_score``); a rerun resumes after the last finished seed."""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from datasets import Dataset
from transformers import (
    AutoConfig,
    AutoModelForSequenceClassification,
    AutoTokenizer,
    DataCollatorWithPadding,
    TrainingArguments,
)

from ..finetuning.finetuning_config import FineTuningModelArguments, StabilisationArguments
from ..finetuning.model_card import build_blurb_card
from ..finetuning.results import merge_seed_results, run_settings, write_results
from ..finetuning.seed_loop import SeedRecipe, fine_tune_seeds, use_batched_seeds
from ..releases.lineage import Lineage
from ..utils.distributed import share_from_main
from ..utils.hardware import pin_memory_where_useful, resolve_bf16
from ..utils.hub_settings import clear_hub_token
from ..utils.masked_lm_loading import load_with_new_head
from ..utils.sequence_length import max_config_tokens
from .blurb_config import BlurbDataArguments, batch_in_passes, recipe_for, recipe_name
from .data import BlurbData, load_blurb_data
from .metrics import metric_description, negative_label_of, score
from .tasks import DOCUMENT_CLASSIFICATION, RELATION_EXTRACTION, TaskType


logger = logging.getLogger(__name__)
PREDICTION_SPLITS = {"eval": "dev", "test": "test"}  # result-key prefix -> split
BLURB_METRICS = ("score", "f1", "precision", "recall", "pearson", "accuracy")
BLURB_COLUMNS = {"dev": "eval_score", "test": "test_score"}  # results.md's columns: header -> key


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


def encode_rows(tokenizer, rows: Sequence[dict], task: TaskType, labels: Sequence[str], max_length: int):
    """``rows`` as a ``datasets.Dataset`` of the tokenizer's outputs and ``labels``, in row order: ``[CLS] text [SEP]``
    or ``[CLS] text_a [SEP] text_b [SEP]`` (the tokenizer's own special tokens) truncated to ``max_length``; a class
    id (single-label), a float (regression) or a 0/1 float vector over the classes (multi-label, as transformers'
    ``BCEWithLogitsLoss`` wants)."""
    texts = [[row[field] for row in rows] for field in task.text_fields]
    # a pair loses tokens from its longer text first: a question's context (never the error of "only_second"
    # when a question alone is too long)
    encoded = dict(tokenizer(*texts, truncation="longest_first", max_length=max_length))
    gold = [row[task.label_field] for row in rows]
    if task.problem_type == "regression":
        targets = [float(value) for value in gold]
    elif task.problem_type == "multi_label_classification":
        targets = [[float(label in set(row_labels)) for label in labels] for row_labels in gold]
    else:
        index = {label: i for i, label in enumerate(labels)}
        targets = [index[label] for label in gold]
    return Dataset.from_dict({**encoded, "labels": targets})


def decode_logits(task: TaskType, logits: np.ndarray, labels: Sequence[str]) -> list:
    """One prediction per row in label space: a class (argmax), a score, or the classes with a positive logit
    (sigmoid > 0.5)."""
    logits = np.asarray(logits)
    if task.problem_type == "regression":
        return [float(value) for value in logits.reshape(len(logits), -1)[:, 0]]
    if task.problem_type == "multi_label_classification":
        return [[labels[i] for i in np.flatnonzero(row > 0)] for row in logits]
    return [labels[i] for i in logits.argmax(axis=-1)]


def load_classifier(model_name_or_path: str, data: BlurbData, ignore_mismatched_sizes: bool = False):
    """The model with a fresh head for ``data``: one output per class (one for regression), classifying from the
    first token's encoding."""
    labels = data.labels
    mapping = {"num_labels": 1}
    if data.task.problem_type != "regression":
        mapping = {"num_labels": len(labels), "id2label": dict(enumerate(labels))}
        mapping["label2id"] = {label: i for i, label in enumerate(labels)}
    config = AutoConfig.from_pretrained(model_name_or_path, problem_type=data.task.problem_type, **mapping)
    if hasattr(config, "classifier_pooling"):  # ModernBERT can mean-pool; the paper's models read [CLS]
        config.classifier_pooling = "cls"
    return load_with_new_head(
        AutoModelForSequenceClassification,
        model_name_or_path,
        config=config,
        ignore_mismatched_sizes=ignore_mismatched_sizes,
    )


def score_blurb_seed(trainer, task: BlurbTask) -> dict[str, float]:
    """A trained seed's dev and test predictions scored; the main process writes each split's predictions
    (``<split>_predictions.jsonl``) into the seed's directory."""
    data, output_dir = task.data, trainer.args.output_dir
    trainer.compute_metrics = None  # dev-bound; each split is scored against its own rows below
    run = {}
    for prefix, split in PREDICTION_SPLITS.items():
        if split not in task.encoded:
            continue
        logits = trainer.predict(task.encoded[split], metric_key_prefix=prefix).predictions
        predictions = decode_logits(data.task, logits, data.labels)
        run.update({f"{prefix}_{name}": value for name, value in task.scores(split, predictions).items()})
        if trainer.is_world_process_zero():
            os.makedirs(output_dir, exist_ok=True)
            with open(os.path.join(output_dir, f"{split}_predictions.jsonl"), "w", encoding="utf-8") as handle:
                for row, prediction in zip(data.splits()[split].rows, predictions):
                    handle.write(json.dumps({"id": row.get("id"), "prediction": prediction}) + "\n")
    return run


def blurb_recipe(model_args, stab_args, task: BlurbTask, tokenizer) -> SeedRecipe:
    """How a seed of ``task`` is fine-tuned: the classifier with a fresh head, the Trainer predicting in row order
    (HoC's documents are groups of rows), the card with the seed's scores."""
    data = task.data

    def compute_metrics(prediction):  # dev scores at evaluation (--eval_strategy, --metric_for_best_model)
        return task.scores("dev", decode_logits(data.task, prediction.predictions, data.labels))

    lineage = Lineage.of(model_args.model_name_or_path, model_args.base_model_hub_id)
    trainer_kwargs = dict(
        train_dataset=task.encoded["train"],
        eval_dataset=task.encoded["dev"],
        processing_class=tokenizer,
        data_collator=DataCollatorWithPadding(tokenizer),
        compute_metrics=compute_metrics,
    )
    return SeedRecipe(
        model_args,
        stab_args,
        lambda: load_classifier(model_args.model_name_or_path, data, model_args.ignore_mismatched_sizes),
        trainer_kwargs,
        score=lambda trainer: score_blurb_seed(trainer, task),
        card=lambda run, run_info: build_blurb_card(run, run_info, lineage),
        resume=True,
    )


def run_blurb_task(
    model_args: FineTuningModelArguments,
    data_args: BlurbDataArguments,
    stab_args: StabilisationArguments,
    training_args: TrainingArguments,
) -> dict:
    """Fine-tune each unfinished seed, then merge every seed of ``output_dir``; returns ``all_results.json``'s dict.
    Configures no logging and leaves the process group alone (``bioptimus blurb-task`` does both around it)."""
    training_args = fine_tune_blurb_seeds(model_args, data_args, stab_args, training_args)

    # 5. every seed of output_dir merged: all_results.json (mean ± std) and results.md, written by the main process
    def merge_and_write() -> dict:
        results = merge_blurb_results(training_args.output_dir)
        print(write_blurb_outputs(training_args.output_dir, results))
        return results

    return share_from_main(merge_and_write)


def fine_tune_blurb_seeds(
    model_args: FineTuningModelArguments,
    data_args: BlurbDataArguments,
    stab_args: StabilisationArguments,
    training_args: TrainingArguments,
) -> TrainingArguments:
    """Steps 1-4 of :func:`run_blurb_task`: each unfinished seed fine-tuned, its ``seed_<s>/seed_results.json``
    written as it ends, nothing merged (the benchmark merges a dataset once its concurrent seeds are done);
    returns the training arguments as resolved (precision)."""
    clear_hub_token(training_args)  # no seed's training_args.bin holds it (the benchmark's jobs start here)
    # 1. precision: bf16 where the device has it natively
    training_args = resolve_bf16(training_args, model_args.bf16_if_supported, model_args.allow_emulated_bf16)
    pin_memory_where_useful(training_args)

    # 2. data: the splits, checked against the task type; the class the metric leaves out
    limits = (data_args.max_train_samples, data_args.max_eval_samples, data_args.max_test_samples)
    data = load_blurb_data(data_args.data_dir, data_args.task_type, limits, data_args.document_unit)
    negative = negative_label_of(data.labels, data_args.negative_label) if data.task is RELATION_EXTRACTION else None
    sizes = "/".join(str(len(split.rows)) for split in data.splits().values())
    logger.info("%s: %s, %s rows, labels %s", data.name, data.task.name, sizes, data.labels)

    # 3. inputs: [CLS] text [SEP] (text [SEP]), truncated to the model's and the recipe's length
    recipe = recipe_for(data.task, data_args.data_dir)
    tokenizer = AutoTokenizer.from_pretrained(model_args.tokenizer_name or model_args.model_name_or_path)
    max_length = min(
        data_args.max_seq_length or recipe.max_seq_length,
        max_config_tokens(AutoConfig.from_pretrained(model_args.model_name_or_path), tokenizer),
    )
    training_args = batch_in_passes(training_args, max_length)  # the recipe's batch, in passes that fit memory
    encoded = {
        name: encode_rows(tokenizer, split.rows, data.task, data.labels, max_length)
        for name, split in data.splits().items()
    }

    # 4. fine-tune each seed not finished yet
    run_info = {
        **blurb_run_info(model_args, data_args, data, negative, max_length),
        **run_settings(stab_args, training_args),
    }
    seeds = stab_args.seed_list(training_args.seed) if stab_args.seeds else recipe.seed_list()
    logger.info("%s: recipe %s, seeds %s", data.name, recipe_name(data.task, data_args.data_dir), seeds)
    seed_recipe = blurb_recipe(model_args, stab_args, BlurbTask(data, encoded, negative), tokenizer)
    batched = use_batched_seeds(model_args.batched_seeds, training_args)
    fine_tune_seeds(seed_recipe, seeds, training_args, run_info, batched)
    return training_args


def blurb_run_info(model_args, data_args: BlurbDataArguments, data: BlurbData, negative, max_length: int) -> dict:
    """What a seed records of its dataset and model beside its scores (the fine-tuning settings aside)."""
    return {
        "model_name_or_path": model_args.model_name_or_path,
        "model_name": model_args.name,
        "dataset": data.name,
        "task_type": data.task.name,
        "problem_type": data.task.problem_type,
        "metric": data.task.metric,
        "metric_definition": metric_description(data.task, negative),
        "labels": data.labels,
        "negative_label": negative,
        "max_seq_length": max_length,
        **({"document_unit": data_args.document_unit} if data.task is DOCUMENT_CLASSIFICATION else {}),
        "num_rows": {name: len(split.rows) for name, split in data.splits().items()},
    }


def merge_blurb_results(output_dir: str) -> dict[str, Any]:
    """Every seed of ``output_dir`` merged (:func:`~bioptimus_hf.finetuning.results.merge_seed_results`)."""
    return merge_seed_results(output_dir, BLURB_METRICS)


def write_blurb_outputs(output_dir: str, results: dict[str, Any]) -> str:
    """``all_results.json`` and ``results.md``; returns the markdown table."""
    title = f"{results['model_name']} on {results['dataset']} ({results['metric']}, %)"
    return write_results(output_dir, results, title, BLURB_COLUMNS)
