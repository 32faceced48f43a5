#!/usr/bin/env python
"""Fine-tune and evaluate a BERT-style encoder on one BLURB dataset beyond NER, over several seeds.

The task type is read from the data (or ``--task_type``): relation extraction (DDI, GAD, ChemProt), sentence
similarity (BIOSSES), document classification (HoC), question answering (PubMedQA, BioASQ). Its default
recipe (learning rate, batch size, epochs, input length: ``bioptimus_hf/blurb/blurb_config.py``) applies
unless a config file or a flag sets the value. Modelled on transformers'
examples/pytorch/text-classification/run_glue.py; docs/blurb.md.

    python run_blurb.py --model_name_or_path out/releases/v0.4 --data_dir ../shared/data/blurb/GAD \\
        --output_dir blurb/v0.4/GAD --seeds 1,2,3,4,5
    python run_blurb.py config.yaml --data_dir ../shared/data/blurb/HoC --num_train_epochs 3   # flags override

Outputs in ``output_dir``: ``all_results.json`` (BLURB's metric as ``test_score``, mean and std over seeds),
``results.md``, and per seed ``seed_<s>/`` with ``seed_results.json``, ``dev_predictions.jsonl``,
``test_predictions.jsonl`` and the fine-tuned model (unless ``--save_model false``). A seed whose
``seed_results.json`` exists is skipped.
"""

from __future__ import annotations

import logging
import os
from dataclasses import asdict

import transformers
from transformers import AutoConfig, AutoTokenizer, TrainingArguments

from bioptimus_hf.blurb.blurb_config import (BlurbDataArguments, BlurbModelArguments, recipe_for,
                                             recipe_training_arguments)
from bioptimus_hf.blurb.data import load_blurb_data, read_task_type
from bioptimus_hf.blurb.encoding import encode_rows
from bioptimus_hf.blurb.finetune import BlurbTask, fine_tune_seeds
from bioptimus_hf.blurb.metrics import metric_description, negative_label_of
from bioptimus_hf.blurb.results import merge_blurb_results, write_blurb_outputs
from bioptimus_hf.blurb.tasks import RELATION_EXTRACTION
from bioptimus_hf.commands.config_parser import parse_args as parse_config_and_flags
from bioptimus_hf.ner.stabilisation import StabilisationArguments
from bioptimus_hf.utils.distributed import close_process_group, share_from_main
from bioptimus_hf.utils.hardware import resolve_bf16
from bioptimus_hf.utils.sequence_length import max_config_tokens
from bioptimus_hf.utils.cli import exit_on_bad_input

logger = logging.getLogger(__name__)
ARGUMENTS = (BlurbModelArguments, BlurbDataArguments, StabilisationArguments)


def parse_args(argv: list[str] | None = None):
    """``[config.{yaml,json}] [--flag value ...]``, over the defaults of the data's task type (its recipe)."""
    _, data_args, _, _ = parse_config_and_flags(ARGUMENTS + (TrainingArguments,), argv)
    dataset = os.path.basename(os.path.normpath(data_args.data_dir))
    task = read_task_type(data_args.data_dir, data_args.task_type)
    model_args, data_args, stab_args, training_args = parse_config_and_flags(
        ARGUMENTS + (recipe_training_arguments(task),), argv)
    recipe = recipe_for(task, dataset)
    if data_args.max_seq_length is None:
        data_args.max_seq_length = recipe.max_seq_length
    return model_args, data_args, stab_args, training_args


def main(argv: list[str] | None = None) -> dict:
    # 1. arguments: flags over a config file over the task's recipe
    model_args, data_args, stab_args, training_args = parse_args(argv)
    logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s",
                        level=training_args.get_process_log_level())
    transformers.utils.logging.set_verbosity_warning()

    # 2. precision: bf16 where the device has it natively
    training_args = resolve_bf16(training_args, model_args.bf16_if_supported, model_args.allow_emulated_bf16)

    # 3. data: the splits, checked against the task type; the class the metric leaves out
    data = load_blurb_data(data_args.data_dir, data_args.task_type,
                           (data_args.max_train_samples, data_args.max_eval_samples, data_args.max_test_samples))
    negative = negative_label_of(data.labels, data_args.negative_label) if data.task is RELATION_EXTRACTION else None
    logger.info("%s: %s, %s rows, labels %s", data.name, data.task.name,
                "/".join(str(len(split.rows)) for split in data.splits().values()), data.labels)

    # 4. inputs: [CLS] text [SEP] (text [SEP]), truncated to the model's and the recipe's length
    tokenizer = AutoTokenizer.from_pretrained(model_args.tokenizer_name or model_args.model_name_or_path)
    max_length = min(data_args.max_seq_length,
                     max_config_tokens(AutoConfig.from_pretrained(model_args.model_name_or_path), tokenizer))
    encoded = {name: encode_rows(tokenizer, split.rows, data.task, data.labels, max_length)
               for name, split in data.splits().items()}

    # 5. fine-tune each seed not finished yet
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
        "num_rows": {name: len(split.rows) for name, split in data.splits().items()},
        "stabilisation": {k: v for k, v in asdict(stab_args).items() if k != "seeds"},
        "learning_rate": training_args.learning_rate,
        "num_train_epochs": training_args.num_train_epochs,
        "max_steps": training_args.max_steps,
        "warmup_steps": training_args.warmup_steps,
        "lr_scheduler_type": str(getattr(training_args.lr_scheduler_type, "value", training_args.lr_scheduler_type)),
        "train_batch_size": training_args.per_device_train_batch_size,
        "world_size": training_args.world_size,
        "bf16": training_args.bf16,
    }
    fine_tune_seeds(stab_args.seed_list(training_args.seed), model_args.model_name_or_path,
                    BlurbTask(data, encoded, negative), tokenizer, training_args, stab_args, run_info,
                    model_args.save_model, model_args.ignore_mismatched_sizes)

    # 6. every seed of output_dir merged: all_results.json (mean ± std) and results.md, written by the main process
    def merge_and_write() -> dict:
        results = merge_blurb_results(training_args.output_dir)
        print(write_blurb_outputs(training_args.output_dir, results))
        return results

    results = share_from_main(merge_and_write)
    close_process_group()
    return results


if __name__ == "__main__":
    with exit_on_bad_input():  # bad input: one line naming the flag or file
        main()
