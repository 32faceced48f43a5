"""``bioptimus ner`` (``python run_ner.py``): fine-tune and evaluate a BERT-style encoder on biomedical NER (BLURB
protocol), over several seeds.

Modelled on transformers' examples/pytorch/token-classification/run_ner.py, plus: CoNLL directories
with validation, training tagging scheme IO/BIO/BIOUL with span-level evaluation against the original
gold spans, windowing instead of truncation, Tinn et al. stabilisation flags and multi-seed reporting.

    bioptimus ner configs/ner_blurb.yaml                        # a yaml (or json) config file
    bioptimus ner configs/ner_blurb.yaml --seeds 1 2 --num_train_epochs 1   # later flags override
    bioptimus ner --model_name_or_path M --data_dir ../shared/data/ner/NCBI-disease-IOB --output_dir out

The run, its outputs and its refusals: :func:`bioptimus_hf.ner.run.fine_tune_ner`; the flags:
:mod:`bioptimus_hf.ner.fine_tuning_config` and ``TrainingArguments``.
"""

from __future__ import annotations

from bioptimus_hf.commands.config_parser import parse_args as parse_config_and_flags
from bioptimus_hf.ner.fine_tuning_config import NER_ARGUMENT_TYPES


def parse_args(argv: list[str] | None = None):
    """``[config.{yaml,json}] [--flag value ...]``; flags given after the config file override it."""
    return parse_config_and_flags(NER_ARGUMENT_TYPES, argv)


def main(argv: list[str] | None = None) -> dict:
    """``[config.{yaml,json}] [--flag value ...]``: parse, then fine-tune every seed; returns the merged results."""
    arguments = parse_args(argv)
    from bioptimus_hf.ner.run import fine_tune_ner as run  # datasets and models load only to run

    return run(*arguments)


if __name__ == "__main__":
    main()
