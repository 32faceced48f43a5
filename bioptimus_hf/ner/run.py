"""One NER run from its typed settings: every seed's fine-tune of one model on one dataset, then the results of every
seed of ``output_dir``. What ``bioptimus ner`` runs, callable by anyone (the study, the comparison, the BLURB
benchmark).

    from transformers import TrainingArguments
    from bioptimus_hf.ner.fine_tuning_config import NerDataArguments, NerModelArguments, StabilisationArguments
    from bioptimus_hf.ner.run import fine_tune_ner

    results = fine_tune_ner(
        NerModelArguments(model_name_or_path="out/releases/v0.4"),
        NerDataArguments(data_dir="../shared/data/ner/NCBI-disease-IOB"),
        StabilisationArguments(seeds=[1, 2, 3]),
        TrainingArguments(output_dir="ner/NCBI-disease", num_train_epochs=3, report_to="none"),
    )

Outputs in ``output_dir``: ``all_results.json`` (keys documented in docs/ner.md), ``results.md``,
``model_index.json``, and per seed ``seed_<s>/`` with ``test_predictions.conll``, the span reports and the fine-tuned
model (unless ``save_model`` is off). Bad input (a missing split, a malformed CoNLL line, an entity type absent from
the training file) ends with one line naming the file, before any model is loaded.
"""

from __future__ import annotations

import logging
import os

import transformers
from transformers import AutoConfig, AutoTokenizer, TrainingArguments

from ..finetuning.results import merge_seed_results, run_settings, write_seed_result
from ..utils.bulk_dropout import use_bulk_dropout
from ..utils.cli import exit_on_bad_input
from ..utils.distributed import close_process_group, share_from_main
from ..utils.hardware import resolve_bf16
from ..utils.sequence_length import max_config_tokens
from ..utils.tokenizer_families import tokenizer_for_words
from .data import load_ner_splits
from .encoding import encode_split
from .fine_tuning import fine_tune_seeds
from .fine_tuning_config import NerDataArguments, NerModelArguments, StabilisationArguments
from .hub_push import push_best_seed, take_ner_hub_settings
from .results import write_run_outputs
from .schemes import label_list, normalize_scheme


logger = logging.getLogger(__name__)


def fine_tune_ner(
    model_args: NerModelArguments,
    data_args: NerDataArguments,
    stab_args: StabilisationArguments,
    training_args: TrainingArguments,
) -> dict:
    """Every seed's fine-tune of one model on one dataset, then the results of every seed of ``output_dir``
    (``all_results.json``...); returns them. Bad input ends with one line, before any model is loaded."""
    # under torchrun only the main process logs at INFO (transformers' --log_level / --log_level_replica)
    logging.basicConfig(
        format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", level=training_args.get_process_log_level()
    )
    transformers.utils.logging.set_verbosity_warning()
    training_args = resolve_bf16(training_args, model_args.bf16_if_supported, model_args.allow_emulated_bf16)
    with exit_on_bad_input():  # --push_to_hub pushes the best seed's model at the end; the Trainer never pushes
        hub = take_ner_hub_settings(training_args, model_args.save_model)

    # 1. The data: train, devel and (optional) test, validated; the label set comes from the training sentences.
    with exit_on_bad_input():
        scheme = normalize_scheme(data_args.tagging_scheme)
        if scheme == "IOBES":
            scheme = "BIOUL"  # the same scheme; one spelling for the labels
        dataset_name, train, devel, test = load_ner_splits(data_args)
    labels = label_list(train.entity_types, scheme)
    label2id = {label: i for i, label in enumerate(labels)}
    logger.info(
        "%s: %d/%d/%s sentences, entity types %s, training scheme %s",
        dataset_name,
        len(train.sentences),
        len(devel.sentences),
        len(test.sentences) if test else "-",
        train.entity_types,
        scheme,
    )

    # 2. The tokenizer and each split's windows (long sentences are split into windows, never truncated).
    # words come pre-split: byte-level BPE must see each as a word after a space, as in running text
    tokenizer = tokenizer_for_words(
        AutoTokenizer.from_pretrained(model_args.tokenizer_name or model_args.model_name_or_path)
    )
    max_len = min(
        data_args.max_seq_length,
        max_config_tokens(AutoConfig.from_pretrained(model_args.model_name_or_path), tokenizer),
    )
    window = max_len - tokenizer.num_special_tokens_to_add(pair=False)
    if not 0 <= data_args.window_stride < window:
        with exit_on_bad_input():
            raise ValueError(
                f"--window_stride {data_args.window_stride} must be in [0, {window}): the window holds {window} "
                f"sub-tokens (--max_seq_length {max_len} minus the special tokens)"
            )

    def encode(split, sort_by_length=False):
        return encode_split(
            tokenizer,
            split.sentences,
            scheme,
            label2id,
            max_len,
            data_args.window_stride,
            data_args.label_all_tokens,
            sort_by_length,
        )

    # prediction windows go longest first so that sequential batches are padded little (NerTrainer reads
    # them in order); training batches are grouped by --train_sampling_strategy group_by_length
    encoded = {"train": encode(train), "devel": encode(devel, sort_by_length=True)}
    if test is not None:
        encoded["test"] = encode(test, sort_by_length=True)
    window_stats = {split: enc.stats.as_dict() for split, enc in encoded.items()}
    for split, stats in window_stats.items():
        logger.info(
            "%s: %d sentences -> %d windows; %d sentences split into windows, %d over-long words cut",
            split,
            stats["sentences"],
            stats["windows"],
            stats["sentences_split"],
            stats["words_cut"],
        )

    # 3. One full fine-tune per seed, each from the same pre-trained model, into <output_dir>/seed_<s>/.
    seeds = stab_args.seed_list(training_args.seed)
    model_name = model_args.model_name or os.path.basename(os.path.normpath(model_args.model_name_or_path))
    base_output_dir = training_args.output_dir
    os.makedirs(base_output_dir, exist_ok=True)
    bulk_dropout = use_bulk_dropout(model_args.bulk_dropout, training_args)
    logger.info("dropout masks: %s", "drawn in bulk (docs/speed.md, section 9)" if bulk_dropout else "torch's")
    per_seed = fine_tune_seeds(
        seeds,
        model_args.model_name_or_path,
        training_args,
        labels=labels,
        scheme=scheme,
        tokenizer=tokenizer,
        encoded=encoded,
        devel=devel,
        test=test,
        stabilisation=stab_args,
        save_model=model_args.save_model,
        keep_checkpoints=model_args.keep_checkpoints,
        ignore_mismatched_sizes=model_args.ignore_mismatched_sizes,
        bulk_dropout=bulk_dropout,
        model_name=model_name,
        dataset_name=dataset_name,
        base_model_hub_id=model_args.base_model_hub_id,
    )

    # 4. The results: each seed's, then every seed of output_dir merged (all_results.json, results.md...).
    run_info = {
        "model_name_or_path": model_args.model_name_or_path,
        "model_name": model_name,
        "dataset": dataset_name,
        "entity_types": train.entity_types,
        "tagging_scheme": scheme,
        "gold_scheme": {"train": train.scheme, "devel": devel.scheme, "test": test.scheme if test else None},
        "label_all_tokens": data_args.label_all_tokens,
        "max_seq_length": max_len,
        "window_stride": data_args.window_stride,
        "windows": window_stats,
        "repaired_tags": {
            "train": len(train.repaired_lines),
            "devel": len(devel.repaired_lines),
            "test": len(test.repaired_lines) if test else 0,
        },
        **run_settings(stab_args, training_args),
        "dropout_masks": "bulk" if bulk_dropout else "torch",
        "train_sampling_strategy": training_args.train_sampling_strategy,
        "num_train_sentences": len(train.sentences),
    }

    # Each seed's result on its own, then all seeds of output_dir merged: seeds run as separate jobs
    # (`--seeds 2` on one GPU, `--seeds 3` on another) end in the same all_results.json as one run.
    # Under torchrun the main process writes and merges; every rank gets its result (or its error).
    def write_and_merge() -> dict:
        for run in per_seed:
            write_seed_result(base_output_dir, run, run_info)
        merged = merge_seed_results(base_output_dir)
        print(write_run_outputs(base_output_dir, merged))
        return merged

    results = share_from_main(write_and_merge)
    close_process_group()
    if hub is not None and training_args.process_index == 0:
        push_best_seed(
            hub,
            base_output_dir,
            results,
            model_args.model_name_or_path,
            data_args.dataset_name,
            base_model_hub_id=model_args.base_model_hub_id,
        )
    return results
