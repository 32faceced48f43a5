"""One full fine-tune per seed (BLURB reports the mean and spread over seeds): each seed starts from the same
pre-trained model, with its own classification head, stabilisation and Trainer, and writes into
``<output_dir>/seed_<s>/``.

:func:`fine_tune_seeds` is the loop of ``bioptimus ner``; it leaves the caller's ``TrainingArguments`` as they
are (each seed trains under a copy with its own ``seed`` and ``output_dir``). With batched seeds, the seeds train
together first, then each is evaluated and saved as alone (the steps shared with BLURB:
:mod:`bioptimus_hf.finetuning.seed_loop`; a seed's fine-tune is :func:`ner_recipe`).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Sequence
from typing import Any

from transformers import (
    AutoConfig,
    AutoModelForTokenClassification,
    DataCollatorForTokenClassification,
    PreTrainedTokenizerBase,
    TrainingArguments,
)

from ..finetuning.model_card import build_ner_card, write_card
from ..finetuning.row_order_trainer import RowOrderTrainer
from ..finetuning.seed_loop import SeedRecipe, log_seed, seed_arguments, seed_trainer, train_seeds_together
from ..finetuning.stabilisation import StabilisationArguments, stabilisation_optimizer, stabilise_model
from ..releases.lineage import Lineage
from ..utils.bulk_dropout import enable_bulk_dropout
from .conll import ConllSplit, write_conll
from .encoding import EncodedSplit
from .evaluation import (
    argmax_logits,
    build_compute_metrics,
    predicted_spans,
    span_report,
    span_scores,
)
from .schemes import pipeline_caveat


logger = logging.getLogger(__name__)


def load_token_classifier(
    model_name_or_path: str, labels: Sequence[str], scheme: str, ignore_mismatched_sizes: bool = False
):
    """The model with a fresh token-classification head for ``labels``; its config records ``ner_tagging_scheme``,
    read back by the tagger to decode predictions."""
    id2label = dict(enumerate(labels))
    config = AutoConfig.from_pretrained(
        model_name_or_path, num_labels=len(labels), id2label=id2label, label2id={v: k for k, v in id2label.items()}
    )
    config.ner_tagging_scheme = scheme
    return AutoModelForTokenClassification.from_pretrained(
        model_name_or_path, config=config, ignore_mismatched_sizes=ignore_mismatched_sizes
    )


def seed_card(model_name: str, dataset_name: str, scheme: str, labels: Sequence[str], lineage: Lineage):
    """A saved seed's card: ``model_name`` fine-tuned on ``dataset_name`` in ``scheme``, how to tag with it and what
    transformers' pipeline gets wrong for the scheme."""
    return build_ner_card(model_name, dataset_name, scheme, labels, caveat=pipeline_caveat(scheme), base_model=lineage)


def score_test_split(
    trainer: RowOrderTrainer,
    encoded: EncodedSplit,
    test: ConllSplit,
    id2label: dict[int, str],
    scheme: str,
    seed_dir: str,
) -> dict[str, float]:
    """The test split predicted and scored at the span level: ``test_{f1,precision,recall}``,
    ``test_predict_runtime_s`` and ``test_sentences_per_s``; the main process writes ``test_predictions.conll`` and
    ``test_report.txt`` into ``seed_dir``."""
    trainer.compute_metrics = None  # the devel-bound metrics would not fit the test windows
    start = time.perf_counter()
    output = trainer.predict(encoded.dataset)
    seconds = time.perf_counter() - start
    spans = predicted_spans(encoded, output.predictions, id2label, scheme)
    scores = span_scores(test.sentences, spans)
    run = {f"test_{metric}": scores[metric] for metric in ("f1", "precision", "recall")}
    run["test_predict_runtime_s"] = seconds
    run["test_sentences_per_s"] = len(test.sentences) / seconds
    if trainer.is_world_process_zero():  # every rank holds the gathered predictions; one writes them
        os.makedirs(seed_dir, exist_ok=True)
        write_conll(os.path.join(seed_dir, "test_predictions.conll"), test.sentences, spans)
        with open(os.path.join(seed_dir, "test_report.txt"), "w", encoding="utf-8") as handle:
            handle.write(span_report(test.sentences, spans))
    return run


def ner_recipe(
    model_name_or_path: str,
    training_args: TrainingArguments,
    *,
    labels: Sequence[str],
    scheme: str,
    tokenizer: PreTrainedTokenizerBase,
    encoded: dict[str, EncodedSplit],
    devel: ConllSplit,
    stabilisation: StabilisationArguments,
    save_model: bool = True,
    keep_checkpoints: bool = False,
    ignore_mismatched_sizes: bool = False,
    bulk_dropout: bool = False,
) -> SeedRecipe:
    """How a seed is fine-tuned (:class:`~bioptimus_hf.finetuning.seed_loop.SeedRecipe`): the token classifier with
    a fresh head, stabilised (bulk dropout where asked); the Trainer scoring devel at the span level."""
    id2label = dict(enumerate(labels))
    collator = DataCollatorForTokenClassification(tokenizer, pad_to_multiple_of=8 if training_args.fp16 else None)

    def model_init(seed):
        model = stabilise_model(
            load_token_classifier(model_name_or_path, labels, scheme, ignore_mismatched_sizes), stabilisation
        )
        if bulk_dropout:
            enable_bulk_dropout(model)
        return model

    def build_trainer(model, args, optimizers):
        return RowOrderTrainer(
            model=model,
            args=args,
            train_dataset=encoded["train"].dataset,
            eval_dataset=encoded["devel"].dataset,
            processing_class=tokenizer,
            data_collator=collator,
            compute_metrics=build_compute_metrics(encoded["devel"], devel.sentences, id2label, scheme),
            preprocess_logits_for_metrics=argmax_logits,
            optimizers=optimizers,
        )

    return SeedRecipe(
        model_init=model_init,
        build_trainer=build_trainer,
        train_dataset=encoded["train"].dataset,
        data_collator=collator,
        optimizer_factory=lambda model: stabilisation_optimizer(model, stabilisation, training_args),
        processing_class=tokenizer,
        save_model=save_model,
        keep_checkpoints=keep_checkpoints,
    )


def fine_tune_seeds(
    seeds: Sequence[int],
    model_name_or_path: str,
    training_args: TrainingArguments,
    *,
    labels: Sequence[str],
    scheme: str,
    tokenizer: PreTrainedTokenizerBase,
    encoded: dict[str, EncodedSplit],
    devel: ConllSplit,
    test: ConllSplit | None,
    stabilisation: StabilisationArguments,
    save_model: bool = True,
    keep_checkpoints: bool = False,
    model_name: str | None = None,
    dataset_name: str | None = None,
    ignore_mismatched_sizes: bool = False,
    bulk_dropout: bool = False,
    base_model_hub_id: str | None = None,
    batched: bool = False,
) -> tuple[list[dict[str, Any]], bool]:
    """Fine-tune ``model_name_or_path`` once per seed; returns one record per seed, in order: ``seed``,
    ``train_runtime_s``, ``train_steps_per_second`` (the Trainer's), ``train_loss`` (mean over ranks),
    ``eval_{f1,precision,recall}`` on devel and, with a test split, ``test_{f1,precision,recall}``,
    ``test_predict_runtime_s`` and ``test_sentences_per_s``; and whether the seeds trained together as one batched
    model (``batched`` asks it, :func:`~bioptimus_hf.finetuning.seed_loop.train_seeds_together`).

    ``encoded`` holds the windows of ``"train"``, ``"devel"`` and (with ``test``) ``"test"``; ``stabilisation`` is
    Tinn et al.'s (:func:`~.stabilisation.apply_stabilisation`). Each seed's directory gets
    ``test_predictions.conll`` and ``test_report.txt`` (main process), no Trainer checkpoint unless
    ``keep_checkpoints`` (:func:`~.results.remove_checkpoints`) and, with ``save_model``, the fine-tuned model,
    whose config records ``ner_tagging_scheme`` for the tagger, and its card (``model_name`` fine-tuned on
    ``dataset_name``: how to tag with it; ``base_model`` metadata only for a Hub id or ``base_model_hub_id``)."""
    id2label = dict(enumerate(labels))
    recipe = ner_recipe(
        model_name_or_path,
        training_args,
        labels=labels,
        scheme=scheme,
        tokenizer=tokenizer,
        encoded=encoded,
        devel=devel,
        stabilisation=stabilisation,
        save_model=save_model,
        keep_checkpoints=keep_checkpoints,
        ignore_mismatched_sizes=ignore_mismatched_sizes,
        bulk_dropout=bulk_dropout,
    )
    together = train_seeds_together(recipe, seeds, training_args, batched)
    per_seed = []
    for seed in seeds:
        args = seed_arguments(training_args, seed)
        trainer, run = seed_trainer(recipe, args, together[seed] if together else None)
        if save_model and trainer.is_world_process_zero():  # how to tag it; for BIOUL, what the pipeline gets wrong
            lineage = Lineage.of(model_name_or_path, base_model_hub_id)
            write_card(args.output_dir, seed_card(model_name or lineage.name, dataset_name, scheme, labels, lineage))
        eval_metrics = trainer.evaluate(metric_key_prefix="eval")
        for metric in ("f1", "precision", "recall"):
            run[f"eval_{metric}"] = eval_metrics[f"eval_{metric}"]
        if test is not None:
            run.update(score_test_split(trainer, encoded["test"], test, id2label, scheme, args.output_dir))
        log_seed(run)
        per_seed.append(run)
    return per_seed, together is not None
