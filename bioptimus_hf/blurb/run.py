"""One model fine-tuned and evaluated on one BLURB dataset beyond NER, over several seeds: the steps of
``run_blurb.py`` as a library function, called by it and by the benchmark (:mod:`bioptimus_hf.blurb.benchmark`).
"""

from __future__ import annotations

import logging
import os

from transformers import AutoConfig, AutoTokenizer, HfArgumentParser, TrainingArguments

from ..finetuning.finetuning_config import StabilisationArguments
from ..finetuning.results import run_settings
from ..releases.lineage import Lineage
from ..utils.distributed import share_from_main
from ..utils.hardware import resolve_bf16
from ..utils.sequence_length import max_config_tokens
from .blurb_config import (
    ARGUMENTS,
    BlurbDataArguments,
    BlurbModelArguments,
    fill_recipe_length,
    recipe_for,
    recipe_name,
    recipe_training_arguments,
)
from .data import load_blurb_data, read_task_type
from .encoding import encode_rows
from .finetune import BlurbTask, fine_tune_seeds
from .metrics import metric_description, negative_label_of
from .results import merge_blurb_results, write_blurb_outputs
from .tasks import DOCUMENT_CLASSIFICATION, RELATION_EXTRACTION


logger = logging.getLogger(__name__)


def blurb_arguments_from_dict(values: dict):
    """The four argument objects of ``run_blurb.py`` from a mapping of flag names to values, over the defaults of
    the dataset's recipe."""
    task = read_task_type(values["data_dir"], values.get("task_type"))
    model_args, data_args, stab_args, training_args = HfArgumentParser(
        ARGUMENTS + (recipe_training_arguments(task, values["data_dir"]),)
    ).parse_dict(values)
    return model_args, fill_recipe_length(data_args), stab_args, training_args


def run_blurb_task(
    model_args: BlurbModelArguments,
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
    model_args: BlurbModelArguments,
    data_args: BlurbDataArguments,
    stab_args: StabilisationArguments,
    training_args: TrainingArguments,
) -> TrainingArguments:
    """Steps 1-4 of :func:`run_blurb_task`: each unfinished seed fine-tuned, its ``seed_<s>/seed_results.json``
    written as it ends, nothing merged (the benchmark merges a dataset once its concurrent seeds are done);
    returns the training arguments as resolved (precision)."""
    # 1. precision: bf16 where the device has it natively
    training_args = resolve_bf16(training_args, model_args.bf16_if_supported, model_args.allow_emulated_bf16)

    # 2. data: the splits, checked against the task type; the class the metric leaves out
    data = load_blurb_data(
        data_args.data_dir,
        data_args.task_type,
        (data_args.max_train_samples, data_args.max_eval_samples, data_args.max_test_samples),
        data_args.document_unit,
    )
    negative = negative_label_of(data.labels, data_args.negative_label) if data.task is RELATION_EXTRACTION else None
    logger.info(
        "%s: %s, %s rows, labels %s",
        data.name,
        data.task.name,
        "/".join(str(len(split.rows)) for split in data.splits().values()),
        data.labels,
    )

    # 3. inputs: [CLS] text [SEP] (text [SEP]), truncated to the model's and the recipe's length
    tokenizer = AutoTokenizer.from_pretrained(model_args.tokenizer_name or model_args.model_name_or_path)
    max_length = min(
        fill_recipe_length(data_args).max_seq_length,
        max_config_tokens(AutoConfig.from_pretrained(model_args.model_name_or_path), tokenizer),
    )
    encoded = {
        name: encode_rows(tokenizer, split.rows, data.task, data.labels, max_length)
        for name, split in data.splits().items()
    }

    # 4. fine-tune each seed not finished yet
    run_info = {
        "model_name_or_path": model_args.model_name_or_path,
        "model_name": model_args.model_name or os.path.basename(os.path.normpath(model_args.model_name_or_path)),
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
        **run_settings(stab_args, training_args),
    }
    recipe = recipe_for(data.task, data_args.data_dir)
    seeds = stab_args.seed_list(training_args.seed) if stab_args.seeds else recipe.seed_list()
    logger.info("%s: recipe %s, seeds %s", data.name, recipe_name(data.task, data_args.data_dir), seeds)
    fine_tune_seeds(
        seeds,
        model_args.model_name_or_path,
        BlurbTask(data, encoded, negative),
        tokenizer,
        training_args,
        stab_args,
        run_info,
        model_args.save_model,
        model_args.ignore_mismatched_sizes,
        Lineage.of(model_args.model_name_or_path),  # its Hub id when it is one; a local start by its folder name
        model_args.keep_checkpoints,
    )
    return training_args
