"""One NER run from its typed settings: every seed's fine-tune of one model on one dataset, then the results of every
seed of ``output_dir``; what ``bioptimus ner`` runs, callable by anyone (the study, the comparison, BLURB). Outputs
are in docs/ner.md; bad input raises naming the file before any model loads. It configures no logging and pushes
nothing: ``bioptimus ner`` does."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass

from transformers import (
    AutoConfig,
    AutoModelForTokenClassification,
    AutoTokenizer,
    DataCollatorForTokenClassification,
    PreTrainedTokenizerBase,
    TrainingArguments,
)

from ..finetuning.model_card import build_ner_card
from ..finetuning.results import merge_seed_results, results_table, run_settings, write_results
from ..finetuning.seed_loop import SeedRecipe, fine_tune_seeds, use_batched_seeds
from ..releases.lineage import Lineage
from ..releases.ner_results import METRICS, model_index
from ..utils.bulk_dropout import enable_bulk_dropout, use_bulk_dropout
from ..utils.distributed import share_from_main
from ..utils.errors import bad_input
from ..utils.files import write_json_atomic
from ..utils.hardware import pin_memory_where_useful, resolve_bf16
from ..utils.masked_lm_loading import load_with_new_head
from ..utils.sequence_length import max_config_tokens
from ..utils.tokenizer_families import tokenizer_for_words
from .conll import NER_SPLITS, ConllSplit, write_conll
from .data import load_ner_splits
from .encoding import EncodedSplit, encode_split
from .evaluation import argmax_logits, build_compute_metrics, predicted_spans, span_report, span_scores
from .fine_tuning_config import NerDataArguments, NerModelArguments, StabilisationArguments
from .schemes import label_list, normalize_scheme, pipeline_caveat


logger = logging.getLogger(__name__)
# results.md's columns: header -> key of all_results.json
NER_COLUMNS = {"devel F1": "eval_f1", "test P": "test_precision", "test R": "test_recall", "test F1": "test_f1"}


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

    @property
    def id2label(self) -> dict[int, str]:
        return dict(enumerate(self.labels))


def load_ner_run_data(model_args: NerModelArguments, data_args: NerDataArguments) -> NerRunData:
    """Steps 1 and 2 of a run, before any model: the splits, validated, the tokenizer and each split's windows. Bad
    input raises ``ValueError``/``FileNotFoundError`` naming the file or flag."""
    # 1. The data: train, devel and (optional) test, validated; the label set comes from the training sentences.
    scheme = normalize_scheme(data_args.tagging_scheme)
    scheme = "BIOUL" if scheme == "IOBES" else scheme  # the same scheme; one spelling for the labels
    dataset_name, train, devel, test = load_ner_splits(data_args)
    labels = label_list(train.entity_types, scheme)
    sizes = "/".join(str(len(split.sentences)) if split else "-" for split in (train, devel, test))
    logger.info(
        "%s: %s sentences, entity types %s, training scheme %s", dataset_name, sizes, train.entity_types, scheme
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
        logger.info("%s windows: %s", split, stats)
    return NerRunData(dataset_name, scheme, labels, train, devel, test, tokenizer, max_len, encoded, window_stats)


def ner_run_info(data: NerRunData, model_args, data_args, stab_args, training_args, bulk_dropout: bool) -> dict:
    """The settings every seed of a run records beside its scores (seeds under other settings are never merged)."""
    train, devel, test = data.train, data.devel, data.test
    return {
        "model_name_or_path": model_args.model_name_or_path,
        "model_name": model_args.name,
        "dataset": data.dataset_name,
        "entity_types": train.entity_types,
        "tagging_scheme": data.scheme,
        "gold_scheme": {"train": train.scheme, "devel": devel.scheme, "test": test.scheme if test else None},
        "label_all_tokens": data_args.label_all_tokens,
        "max_seq_length": data.max_len,
        "window_stride": data_args.window_stride,
        "windows": data.window_stats,
        "repaired_tags": {
            name: len(split.repaired_lines) if split else 0 for name, split in zip(NER_SPLITS, (train, devel, test))
        },
        **run_settings(stab_args, training_args),
        "dropout_masks": "bulk" if bulk_dropout else "torch",
        "train_sampling_strategy": training_args.train_sampling_strategy,
        "num_train_sentences": len(train.sentences),
    }


def load_token_classifier(model_name_or_path: str, labels: Sequence[str], scheme: str, ignore_mismatched_sizes=False):
    """The model with a fresh token-classification head for ``labels``; its config records ``ner_tagging_scheme``,
    read back by the tagger to decode predictions."""
    id2label = dict(enumerate(labels))
    config = AutoConfig.from_pretrained(
        model_name_or_path, num_labels=len(labels), id2label=id2label, label2id={v: k for k, v in id2label.items()}
    )
    config.ner_tagging_scheme = scheme
    return load_with_new_head(
        AutoModelForTokenClassification,
        model_name_or_path,
        config=config,
        ignore_mismatched_sizes=ignore_mismatched_sizes,
    )


def score_ner_seed(trainer, data: NerRunData) -> dict[str, float]:
    """A trained seed's span scores: ``eval_{f1,precision,recall}`` on devel and, with a test split,
    ``test_{f1,precision,recall}``, ``test_predict_runtime_s`` and ``test_sentences_per_s``; the main process
    writes ``test_predictions.conll`` and ``test_report.txt`` into the seed's directory."""
    scores = trainer.evaluate(metric_key_prefix="eval")
    run = {f"eval_{metric}": scores[f"eval_{metric}"] for metric in METRICS}
    if data.test is None:
        return run
    trainer.compute_metrics = None  # the devel-bound metrics would not fit the test windows
    start = time.perf_counter()
    output = trainer.predict(data.encoded["test"].dataset)
    seconds = time.perf_counter() - start
    spans = predicted_spans(data.encoded["test"], output.predictions, data.id2label, data.scheme)
    scores = span_scores(data.test.sentences, spans)
    run.update({f"test_{metric}": scores[metric] for metric in METRICS})
    run.update(test_predict_runtime_s=seconds, test_sentences_per_s=len(data.test.sentences) / seconds)
    if trainer.is_world_process_zero():  # every rank holds the gathered predictions; one writes them
        seed_dir = trainer.args.output_dir
        os.makedirs(seed_dir, exist_ok=True)
        write_conll(os.path.join(seed_dir, "test_predictions.conll"), data.test.sentences, spans)
        with open(os.path.join(seed_dir, "test_report.txt"), "w", encoding="utf-8") as handle:
            handle.write(span_report(data.test.sentences, spans))
    return run


def ner_recipe(model_args, stab_args, training_args, data: NerRunData, bulk_dropout: bool) -> SeedRecipe:
    """How a seed is fine-tuned: the token classifier with a fresh head (bulk dropout where asked), the Trainer
    scoring devel at the span level; its card says how to tag with it and what transformers' pipeline gets wrong
    for the scheme."""

    def load_model():
        model = load_token_classifier(
            model_args.model_name_or_path, data.labels, data.scheme, model_args.ignore_mismatched_sizes
        )
        if bulk_dropout:
            enable_bulk_dropout(model)
        return model

    card = {
        "model_name": model_args.name,
        "dataset": data.dataset_name,
        "scheme": data.scheme,
        "labels": data.labels,
        "caveat": pipeline_caveat(data.scheme),
    }
    lineage = Lineage.of(model_args.model_name_or_path, model_args.base_model_hub_id)
    trainer_kwargs = dict(
        train_dataset=data.encoded["train"].dataset,
        eval_dataset=data.encoded["devel"].dataset,
        processing_class=data.tokenizer,
        data_collator=DataCollatorForTokenClassification(
            data.tokenizer, pad_to_multiple_of=8 if training_args.fp16 else None
        ),
        compute_metrics=build_compute_metrics(data.encoded["devel"], data.devel.sentences, data.id2label, data.scheme),
        preprocess_logits_for_metrics=argmax_logits,
    )
    return SeedRecipe(
        model_args,
        stab_args,
        load_model,
        trainer_kwargs,
        score=lambda trainer: score_ner_seed(trainer, data),
        card=lambda run, run_info: build_ner_card(card, lineage),
    )


def fine_tune_ner(
    model_args: NerModelArguments,
    data_args: NerDataArguments,
    stab_args: StabilisationArguments,
    training_args: TrainingArguments,
    data: NerRunData | None = None,
) -> dict:
    """Every seed's fine-tune of one model on one dataset (:func:`~bioptimus_hf.finetuning.seed_loop.fine_tune_seeds`),
    then the results of every seed of ``output_dir`` merged (``all_results.json``...); returns them. ``data``: the
    run's splits and windows when the caller has loaded them (:func:`load_ner_run_data`), else loaded here, bad data
    raising ``BadInput`` before any model is loaded. ``--push_to_hub`` is refused (``bioptimus ner`` takes it)."""
    if training_args.push_to_hub:
        raise ValueError(
            "--push_to_hub: fine_tune_ner pushes nothing; bioptimus ner pushes the best seed "
            "(take_ner_hub_settings before the run, push_best_seed after it)"
        )
    training_args = resolve_bf16(training_args, model_args.bf16_if_supported, model_args.allow_emulated_bf16)
    pin_memory_where_useful(training_args)
    if data is None:
        with bad_input():  # the study's NER units: bad data ends the study in one line
            data = load_ner_run_data(model_args, data_args)

    # 3. One full fine-tune per seed, each from the same pre-trained model, into <output_dir>/seed_<s>/.
    os.makedirs(training_args.output_dir, exist_ok=True)
    bulk_dropout = use_bulk_dropout(model_args.bulk_dropout, training_args)
    logger.info("dropout masks: %s", "drawn in bulk (docs/speed.md, section 9)" if bulk_dropout else "torch's")
    batched = use_batched_seeds(model_args.batched_seeds, training_args)
    if batched and bulk_dropout:  # bulk dropout draws its masks outside torch.func.vmap's per-seed randomness
        logger.warning("batched seeds: not with bulk dropout (--bulk_dropout); the seeds train one after another")
        batched = False
    recipe = ner_recipe(model_args, stab_args, training_args, data, bulk_dropout)
    run_info = ner_run_info(data, model_args, data_args, stab_args, training_args, bulk_dropout)
    fine_tune_seeds(recipe, stab_args.seed_list(training_args.seed), training_args, run_info, batched)

    # 4. Every seed of output_dir merged: seeds run as separate jobs (`--seeds 2` on one GPU, `--seeds 3` on
    # another) end in the same all_results.json as one run. The main process merges; every rank gets the result.
    def merge() -> dict:
        results, table = merge_ner_run(training_args.output_dir)
        print(table)
        return results

    return share_from_main(merge)


def markdown_table(results: dict) -> str:
    """``results.md``'s table: a row per seed, then mean ± std (%)."""
    return results_table(results, NER_COLUMNS)


def write_run_outputs(output_dir: str, results: dict) -> str:
    """``all_results.json``, ``results.md`` and (with test scores) ``model_index.json`` (the card's own
    :func:`~bioptimus_hf.releases.ner_results.model_index`); returns the markdown table."""
    title = f"{results['model_name']} on {results['dataset']} ({results['tagging_scheme']} training, entity-level, %)"
    table = write_results(output_dir, results, title, NER_COLUMNS)
    if results.get("test_f1") is not None:
        index = model_index(results, results["model_name"], results["dataset"])
        write_json_atomic(os.path.join(output_dir, "model_index.json"), index)
    return table


def merge_ner_run(output_dir: str, into: str | None = None, extra: dict | None = None) -> tuple[dict, str]:
    """Every seed of ``output_dir`` merged and the run's outputs written, in ``into`` where given and with
    ``extra``'s keys (the BLURB benchmark's search: a dataset's results from its chosen point's seeds); returns
    the results and their markdown table."""
    results = {**merge_seed_results(output_dir), **(extra or {})}
    return results, write_run_outputs(into or output_dir, results)
