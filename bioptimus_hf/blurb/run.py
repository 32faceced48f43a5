"""One model fine-tuned and evaluated on one BLURB dataset beyond NER, over several seeds: the steps of
``run_blurb.py`` as a library function, called by it and by the benchmark (:mod:`bioptimus_hf.blurb.benchmark`),
over the arguments :func:`~bioptimus_hf.blurb.blurb_config.blurb_arguments` builds.
"""

from __future__ import annotations

import logging
import os

from transformers import AutoConfig, AutoTokenizer, TrainingArguments

from ..finetuning.finetuning_config import StabilisationArguments
from ..finetuning.results import run_settings
from ..finetuning.seed_loop import use_batched_seeds
from ..releases.lineage import Lineage
from ..utils.distributed import share_from_main
from ..utils.hardware import resolve_bf16
from ..utils.hub_settings import clear_hub_token
from ..utils.sequence_length import max_config_tokens
from .blurb_config import BlurbDataArguments, BlurbModelArguments, recipe_for, recipe_name
from .data import BlurbData, load_blurb_data
from .encoding import encode_rows
from .finetune import BlurbTask, fine_tune_seeds
from .metrics import metric_description, negative_label_of
from .results import merge_blurb_results, write_blurb_outputs
from .tasks import DOCUMENT_CLASSIFICATION, RELATION_EXTRACTION


logger = logging.getLogger(__name__)


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
    output_dir = training_args.output_dir

    def merge_and_write() -> dict:
        results = merge_blurb_results(output_dir)
        print(write_blurb_outputs(output_dir, results))
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
    clear_hub_token(training_args)  # no seed's training_args.bin holds it (the benchmark's jobs start here)
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
    recipe = recipe_for(data.task, data_args.data_dir)
    tokenizer = AutoTokenizer.from_pretrained(model_args.tokenizer_name or model_args.model_name_or_path)
    max_length = min(
        data_args.max_seq_length or recipe.max_seq_length,
        max_config_tokens(AutoConfig.from_pretrained(model_args.model_name_or_path), tokenizer),
    )
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
        # the start model as the cards name it: its Hub id when it is one or --base_model_hub_id gives it
        Lineage.of(model_args.model_name_or_path, model_args.base_model_hub_id),
        model_args.keep_checkpoints,
        use_batched_seeds(model_args.batched_seeds, training_args),
    )
    return training_args


def blurb_run_info(
    model_args: BlurbModelArguments,
    data_args: BlurbDataArguments,
    data: BlurbData,
    negative: str | None,
    max_length: int,
) -> dict:
    """What a seed records of its dataset and model beside its scores (the fine-tuning settings aside)."""
    return {
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
    }
