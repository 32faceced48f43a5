"""``bioptimus ner`` (``python run_ner.py``): fine-tune and evaluate a BERT-style encoder on biomedical NER (BLURB
protocol), over several seeds.

Modelled on transformers' examples/pytorch/token-classification/run_ner.py, plus: CoNLL directories
with validation, training tagging scheme IO/BIO/BIOUL with span-level evaluation against the original
gold spans, windowing instead of truncation, Tinn et al. stabilisation flags and multi-seed reporting.

    bioptimus ner configs/ner_blurb.yaml                        # a yaml (or json) config file
    bioptimus ner configs/ner_blurb.yaml --seeds 1,2 --num_train_epochs 1   # later flags override
    bioptimus ner --model_name_or_path M --data_dir ../shared/data/ner/NCBI-disease-IOB --output_dir out

Outputs in ``output_dir``: ``all_results.json`` (keys documented in docs/ner.md), ``results.md``,
``model_index.json``, and per seed ``seed_<s>/`` with ``test_predictions.conll``, the seqeval reports,
and the fine-tuned model (unless ``--save_model false``). Bad input (a missing split, a malformed CoNLL line, an
entity type absent from the training file) ends with one line naming the file. :func:`fine_tune_ner` is the same
run for parsed arguments (the study and the comparison call it).
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field

import transformers
from transformers import AutoConfig, AutoTokenizer, TrainingArguments

from bioptimus_hf.commands.config_parser import parse_args as parse_config_and_flags
from bioptimus_hf.ner.conll import (
    NER_SPLITS,
    REQUIRED_NER_SPLITS,
    ConllFormatError,
    check_entity_types,
    ner_split_path,
    read_conll,
    sentences_from_tags,
)
from bioptimus_hf.ner.encoding import encode_split
from bioptimus_hf.ner.fine_tuning import fine_tune_seeds
from bioptimus_hf.ner.fine_tuning_config import FineTuningModelArguments
from bioptimus_hf.ner.hub_data import check_string_tags, load_ner_dataset
from bioptimus_hf.ner.hub_push import push_best_seed, take_ner_hub_settings
from bioptimus_hf.ner.results import merge_seed_results, run_settings, write_run_outputs, write_seed_result
from bioptimus_hf.ner.schemes import label_list, normalize_scheme
from bioptimus_hf.ner.stabilisation import StabilisationArguments
from bioptimus_hf.releases.lineage import base_model_hub_id_field
from bioptimus_hf.utils.bulk_dropout import BULK_DROPOUT_HELP, use_bulk_dropout
from bioptimus_hf.utils.cli import exit_on_bad_input
from bioptimus_hf.utils.distributed import close_process_group, share_from_main
from bioptimus_hf.utils.hardware import resolve_bf16
from bioptimus_hf.utils.sequence_length import max_config_tokens
from bioptimus_hf.utils.tokenizer_families import tokenizer_for_words


logger = logging.getLogger(__name__)


@dataclass
class ModelArguments(FineTuningModelArguments):
    bulk_dropout: bool = field(
        default=False,
        metadata={
            "help": BULK_DROPOUT_HELP + " Default: off here, so a seed's fine-tuning follows torch's stream as "
            "transformers' own scripts do: the gain is small (1.06-1.08x on 2 cores, "
            "benchmarks/ner_training_dropout.py)."
        },
    )
    base_model_hub_id: str | None = base_model_hub_id_field()


@dataclass
class DataTrainingArguments:
    data_dir: str | None = field(
        default=None, metadata={"help": "Directory with train.tsv, devel.tsv and test.tsv (token<TAB>label)."}
    )
    dataset_name: str | None = field(
        default=None, metadata={"help": "A `datasets` name (or a save_to_disk directory) instead of data_dir."}
    )
    dataset_config_name: str | None = field(default=None, metadata={"help": "The `datasets` configuration."})
    text_column_name: str = field(default="tokens", metadata={"help": "Column of word lists (datasets only)."})
    label_column_name: str = field(default="ner_tags", metadata={"help": "Column of tags (datasets only)."})
    tagging_scheme: str = field(
        default="BIO", metadata={"help": "Training tagging scheme: IO, BIO (IOB2) or BIOUL. Evaluation is span-level."}
    )
    max_seq_length: int = field(
        default=512, metadata={"help": "Window size in sub-tokens; longer sentences are split, never truncated."}
    )
    window_stride: int = field(
        default=32, metadata={"help": "Maximum overlap, in sub-tokens, of consecutive windows."}
    )
    label_all_tokens: bool = field(
        default=False, metadata={"help": "Label every sub-token (default: only the first sub-token of each word)."}
    )
    strict_iob: bool = field(
        default=False, metadata={"help": "Make `I-` without `B-` an error instead of starting a new entity."}
    )
    max_train_samples: int | None = field(default=None, metadata={"help": "Use only the first N training sentences."})
    max_eval_samples: int | None = field(default=None, metadata={"help": "Use only the first N devel sentences."})
    max_test_samples: int | None = field(default=None, metadata={"help": "Use only the first N test sentences."})


# The arguments of a NER run, in the order parse_args() returns them and fine_tune_ner() takes them.
ARGUMENT_TYPES = (ModelArguments, DataTrainingArguments, StabilisationArguments, TrainingArguments)


def parse_args(argv: list[str] | None = None):
    """``[config.{yaml,json}] [--flag value ...]``; flags given after the config file override it."""
    return parse_config_and_flags(ARGUMENT_TYPES, argv)


def load_splits(data_args: DataTrainingArguments):
    """(name, train, devel, test-or-None) as validated ConllSplits."""
    strict = data_args.strict_iob
    if data_args.data_dir:
        paths = {split: ner_split_path(data_args.data_dir, split) for split in NER_SPLITS}
        for split in REQUIRED_NER_SPLITS:
            if not os.path.isfile(paths[split]):
                raise ConllFormatError(
                    f"{data_args.data_dir}: missing {split}.tsv (need train.tsv, devel.tsv, test.tsv)"
                )
        train, devel = read_conll(paths["train"], strict), read_conll(paths["devel"], strict)
        test = read_conll(paths["test"], strict) if os.path.isfile(paths["test"]) else None
        name = os.path.basename(os.path.normpath(data_args.data_dir))
    elif data_args.dataset_name:
        raw = load_ner_dataset(data_args.dataset_name, data_args.dataset_config_name)

        def to_split(split_names):
            split = next((s for s in split_names if s in raw), None)
            if split is None:
                return None
            column = raw[split].features[data_args.label_column_name]
            names = getattr(getattr(column, "feature", None), "names", None)  # Sequence(ClassLabel) -> strings
            tags = raw[split][data_args.label_column_name]
            if names is not None:
                tags = [[names[i] for i in row] for row in tags]
            else:
                check_string_tags(tags, f"{data_args.dataset_name}[{split}]", data_args.label_column_name)
            return sentences_from_tags(
                raw[split][data_args.text_column_name], tags, f"{data_args.dataset_name}[{split}]", strict
            )

        train, devel, test = to_split(["train"]), to_split(["validation", "devel", "dev"]), to_split(["test"])
        if train is None or devel is None:
            raise ConllFormatError(
                f"{data_args.dataset_name}: needs a 'train' and a 'validation' split, has {list(raw)}"
            )
        name = data_args.dataset_name
    else:
        raise ValueError("give --data_dir (train.tsv/devel.tsv/test.tsv) or --dataset_name")
    for split, limit in (
        (train, data_args.max_train_samples),
        (devel, data_args.max_eval_samples),
        (test, data_args.max_test_samples),
    ):
        if split is not None and limit is not None and limit < len(split.sentences):
            split.sentences = split.sentences[:limit]
            split.path = f"{split.path} (first {limit} sentences)"
    # after subsetting: the label set comes from the training sentences actually used
    for other in (devel, test):
        if other is not None:
            check_entity_types(train, other)
    return name, train, devel, test


def main(argv: list[str] | None = None) -> dict:
    """``[config.{yaml,json}] [--flag value ...]``: parse, then :func:`fine_tune_ner`; returns its results."""
    return fine_tune_ner(*parse_args(argv))


def fine_tune_ner(
    model_args: ModelArguments,
    data_args: DataTrainingArguments,
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
        dataset_name, train, devel, test = load_splits(data_args)
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


if __name__ == "__main__":
    main()
