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
the training file) raises ``ValueError`` or ``FileNotFoundError`` naming the file, before any model is loaded
(:func:`load_ner_run_data`; ``bioptimus ner`` makes it one line). A library function: it configures no logging,
pushes nothing and leaves the process group alone; ``bioptimus ner`` (:mod:`bioptimus_hf.commands.ner`) does those
around it, the best seed's push included (:mod:`.hub_push`).
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass

from transformers import AutoConfig, AutoTokenizer, PreTrainedTokenizerBase, TrainingArguments

from ..finetuning.results import merge_seed_results, run_settings, write_seed_result
from ..finetuning.seed_loop import use_batched_seeds
from ..utils.bulk_dropout import use_bulk_dropout
from ..utils.cli import bad_input
from ..utils.distributed import share_from_main
from ..utils.hardware import resolve_bf16
from ..utils.sequence_length import max_config_tokens
from ..utils.tokenizer_families import tokenizer_for_words
from .conll import ConllSplit
from .data import load_ner_splits
from .encoding import EncodedSplit, encode_split
from .fine_tuning import fine_tune_seeds
from .fine_tuning_config import NerDataArguments, NerModelArguments, StabilisationArguments
from .results import write_run_outputs
from .schemes import label_list, normalize_scheme


logger = logging.getLogger(__name__)


@dataclass
class NerRunData:
    """What every seed of a run fine-tunes on: the splits, the training scheme and label set, the tokenizer and each
    split's windows (``encoded``; ``window_stats`` their counts)."""

    dataset_name: str
    scheme: str
    labels: list[str]
    train: ConllSplit
    devel: ConllSplit
    test: ConllSplit | None
    tokenizer: PreTrainedTokenizerBase
    max_len: int
    encoded: dict[str, EncodedSplit]
    window_stats: dict[str, dict]


def load_ner_run_data(model_args: NerModelArguments, data_args: NerDataArguments) -> NerRunData:
    """Steps 1 and 2 of a run, before any model: the splits, validated (the label set from the training sentences),
    the tokenizer and each split's windows. Bad input raises ``ValueError``/``FileNotFoundError`` naming the file or
    flag."""
    # 1. The data: train, devel and (optional) test, validated; the label set comes from the training sentences.
    scheme = normalize_scheme(data_args.tagging_scheme)
    if scheme == "IOBES":
        scheme = "BIOUL"  # the same scheme; one spelling for the labels
    dataset_name, train, devel, test = load_ner_splits(data_args)
    labels = label_list(train.entity_types, scheme)
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
        raise ValueError(
            f"--window_stride {data_args.window_stride} must be in [0, {window}): the window holds {window} "
            f"sub-tokens (--max_seq_length {max_len} minus the special tokens)"
        )
    label2id = {label: i for i, label in enumerate(labels)}
    splits = {"train": train, "devel": devel, **({"test": test} if test is not None else {})}
    # prediction windows go longest first so that sequential batches are padded little (RowOrderTrainer reads
    # them in order); training batches are grouped by --train_sampling_strategy group_by_length
    encoded = {
        name: encode_split(
            tokenizer,
            split.sentences,
            scheme,
            label2id,
            max_len,
            data_args.window_stride,
            data_args.label_all_tokens,
            name != "train",
        )
        for name, split in splits.items()
    }
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
    return NerRunData(dataset_name, scheme, labels, train, devel, test, tokenizer, max_len, encoded, window_stats)


def ner_run_info(
    data: NerRunData,
    model_name: str,
    model_args: NerModelArguments,
    data_args: NerDataArguments,
    stab_args: StabilisationArguments,
    training_args: TrainingArguments,
    bulk_dropout: bool,
    batched_seeds: bool = False,
) -> dict:
    """The settings every seed of a run records beside its scores (``run_info``: seeds under other settings are
    never merged)."""
    train, devel, test = data.train, data.devel, data.test
    return {
        "model_name_or_path": model_args.model_name_or_path,
        "model_name": model_name,
        "dataset": data.dataset_name,
        "entity_types": train.entity_types,
        "tagging_scheme": data.scheme,
        "gold_scheme": {"train": train.scheme, "devel": devel.scheme, "test": test.scheme if test else None},
        "label_all_tokens": data_args.label_all_tokens,
        "max_seq_length": data.max_len,
        "window_stride": data_args.window_stride,
        "windows": data.window_stats,
        "repaired_tags": {
            "train": len(train.repaired_lines),
            "devel": len(devel.repaired_lines),
            "test": len(test.repaired_lines) if test else 0,
        },
        **run_settings(stab_args, training_args),
        "dropout_masks": "bulk" if bulk_dropout else "torch",
        "batched_seeds": batched_seeds,
        "train_sampling_strategy": training_args.train_sampling_strategy,
        "num_train_sentences": len(train.sentences),
    }


def fine_tune_ner(
    model_args: NerModelArguments,
    data_args: NerDataArguments,
    stab_args: StabilisationArguments,
    training_args: TrainingArguments,
    data: NerRunData | None = None,
) -> dict:
    """Every seed's fine-tune of one model on one dataset, then the results of every seed of ``output_dir``
    (``all_results.json``...); returns them. ``data``: the run's splits and windows when the caller has loaded them
    (:func:`load_ner_run_data`), else loaded here, bad data raising ``BadInput`` before any model is loaded.
    Pushes nothing: ``--push_to_hub`` is refused here (``bioptimus ner`` takes it,
    :func:`~.hub_push.take_ner_hub_settings`)."""
    if training_args.push_to_hub:
        raise ValueError(
            "--push_to_hub: fine_tune_ner pushes nothing; bioptimus ner pushes the best seed "
            "(take_ner_hub_settings before the run, push_best_seed after it)"
        )
    training_args = resolve_bf16(training_args, model_args.bf16_if_supported, model_args.allow_emulated_bf16)
    if data is None:
        with bad_input():  # the study's NER units: bad data ends the study in one line
            data = load_ner_run_data(model_args, data_args)

    # 3. One full fine-tune per seed, each from the same pre-trained model, into <output_dir>/seed_<s>/.
    model_name = model_args.model_name or os.path.basename(os.path.normpath(model_args.model_name_or_path))
    os.makedirs(training_args.output_dir, exist_ok=True)
    bulk_dropout = use_bulk_dropout(model_args.bulk_dropout, training_args)
    logger.info("dropout masks: %s", "drawn in bulk (docs/speed.md, section 9)" if bulk_dropout else "torch's")
    batched = use_batched_seeds(model_args.batched_seeds, training_args)
    if batched and bulk_dropout:  # bulk dropout draws its masks outside torch.func.vmap's per-seed randomness
        logger.warning("batched seeds: not with bulk dropout (--bulk_dropout); the seeds train one after another")
        batched = False
    per_seed, batched = fine_tune_seeds(
        stab_args.seed_list(training_args.seed),
        model_args.model_name_or_path,
        training_args,
        labels=data.labels,
        scheme=data.scheme,
        tokenizer=data.tokenizer,
        encoded=data.encoded,
        devel=data.devel,
        test=data.test,
        stabilisation=stab_args,
        save_model=model_args.save_model,
        keep_checkpoints=model_args.keep_checkpoints,
        ignore_mismatched_sizes=model_args.ignore_mismatched_sizes,
        bulk_dropout=bulk_dropout,
        model_name=model_name,
        dataset_name=data.dataset_name,
        base_model_hub_id=model_args.base_model_hub_id,
        batched=batched,
    )

    # 4. The results: each seed's, then every seed of output_dir merged (all_results.json, results.md...).
    # Seeds run as separate jobs (`--seeds 2` on one GPU, `--seeds 3` on another) end in the same all_results.json
    # as one run. Under torchrun the main process writes and merges; every rank gets its result (or its error).
    run_info = ner_run_info(data, model_name, model_args, data_args, stab_args, training_args, bulk_dropout, batched)
    return share_from_main(lambda: write_and_merge(training_args.output_dir, per_seed, run_info))


def write_and_merge(output_dir: str, per_seed: list[dict], run_info: dict) -> dict:
    """Each seed's ``seed_results.json``, then every seed of ``output_dir`` merged and the run's outputs written
    (the table printed); returns the merged results."""
    for run in per_seed:
        write_seed_result(output_dir, run, run_info)
    merged, table = merge_ner_run(output_dir)
    print(table)
    return merged


def merge_ner_run(output_dir: str, into: str | None = None, extra: dict | None = None) -> tuple[dict, str]:
    """Every seed of ``output_dir`` merged (:func:`~bioptimus_hf.finetuning.results.merge_seed_results`) and the
    run's outputs written (:func:`~.results.write_run_outputs`), in ``into`` where given and with ``extra``'s keys
    (the BLURB benchmark's search: a dataset's results from its chosen point's seeds); returns the results and
    their markdown table."""
    results = {**merge_seed_results(output_dir), **(extra or {})}
    return results, write_run_outputs(into or output_dir, results)
