"""The vocabulary stage's runs from their typed settings, callable by anyone: :func:`train_and_report` (``bioptimus
train-tokenizer``: a vocabulary and its ``coverage_report.json``) and :func:`write_initialized_model` (``bioptimus
init-embeddings``: a base model initialised for a new vocabulary, with ``init_report.json``). Each writes its
directory all at once: a killed run leaves nothing that looks finished."""

from __future__ import annotations

import json
from typing import Any

from ..utils.corpus_reader import CorpusReadStats
from ..utils.errors import bad_input
from ..utils.files import write_json_atomic, writing_directory
from .embedding_init import INIT_REPORT_NAME, build_initialized_model
from .init_config import StartModelArguments
from .tokenizer_config import TokenizerTrainingArguments
from .tokenizer_training import (
    COVERAGE_REPORT_NAME,
    coverage_report,
    extend_tokenizer,
    save_tokenizer,
    train_tokenizer,
)


def train_and_report(args: TokenizerTrainingArguments) -> dict:
    """Train the vocabulary into ``args.output_dir`` with ``coverage_report.json``; print and return the report.
    Bad input raises :class:`~bioptimus_hf.utils.errors.BadInput` (the message names the flag)."""
    stats = CorpusReadStats()
    # All or nothing: a killed run leaves no tokenizer directory that looks finished (and reusable).
    with bad_input():  # bad input, said plainly (the message names the flag)
        with writing_directory(args.output_dir) as output_dir:
            if args.vocabulary_mode == "extend":
                extension = extend_tokenizer(args, stats=stats)
                tokenizer = extension.tokenizer
                save_tokenizer(tokenizer, str(output_dir))
                compared = {"replaced": extension.candidate, "extended": tokenizer}
            else:
                tokenizer = train_tokenizer(
                    args.train_files,
                    args.base_tokenizer,
                    int(args.vocab_size),
                    min_frequency=args.min_frequency,
                    limit_alphabet=args.limit_alphabet,
                    output_dir=str(output_dir),
                    stats=stats,
                )
                compared = {"replaced": tokenizer}
            report = coverage_report(
                tokenizer,
                args.base_tokenizer,
                args.train_files,
                args.coverage_sample_lines,
                args.seed,
                compared=compared,
                heldout_files=args.heldout_files,
            )
            report["vocabulary_mode"] = args.vocabulary_mode
            if args.vocabulary_mode == "extend":
                report["added_tokens"] = extension.added_tokens
                report["added_tokens_ranked_by"] = extension.usefulness
                report["auto_steps"] = extension.auto_steps
            report["corpus"] = stats.to_dict()
            report["requested_vocab_size"] = int(args.vocab_size) if args.vocab_size.isdigit() else args.vocab_size
            write_json_atomic(output_dir / COVERAGE_REPORT_NAME, report)
    print(json.dumps(report, indent=2))
    return report


def write_initialized_model(args: StartModelArguments, init_args: Any) -> dict:
    """Build the initialised model of the initialisation settings ``init_args``, write it with its tokenizer and
    ``init_report.json`` to ``args.output_dir`` (all at once), print the counts and return the report."""
    model, tokenizer, report = build_initialized_model(
        args.model_name_or_path,
        args.tokenizer_name,
        init_args,
        seed=args.seed,
        config_name=init_args.config_name,
        progress=not args.disable_tqdm,
    )
    with writing_directory(args.output_dir) as output_dir:  # all or nothing, whenever the process dies
        model.save_pretrained(output_dir)
        save_tokenizer(tokenizer, str(output_dir))
        write_json_atomic(output_dir / INIT_REPORT_NAME, report)
    print(json.dumps({k: report[k] for k in ("strategy", "counts") if k in report}, indent=2))
    return report
