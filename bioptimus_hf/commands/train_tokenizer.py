"""``bioptimus-train-tokenizer``: train a vocabulary on a corpus with a base tokenizer's pipeline and trainer
(WordPiece, byte-level BPE or SentencePiece Unigram/BPE, as the base is; see docs/vocabulary_and_init.md).

    bioptimus-train-tokenizer --train_files corpus.txt --base_tokenizer bert-base-uncased \
        --vocab_size 30522 --output_dir out/biomed_tok      # writes the tokenizer and coverage_report.json

    bioptimus-train-tokenizer --vocabulary_mode extend --vocab_size auto ...   # the base's vocabulary + domain tokens
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from ..utils.cli import exit_on_bad_input
from ..utils.corpus_reader import CorpusReadStats
from ..utils.files import write_json_atomic, writing_directory
from ..vocabulary.tokenizer_training import (
    COVERAGE_REPORT_NAME,
    coverage_report,
    extend_tokenizer,
    train_tokenizer,
)
from ..vocabulary.vocabulary_extension import VOCABULARY_MODES
from .config_parser import parse_args


@dataclass
class TokenizerTrainingArguments:
    train_files: list[str] = field(metadata={"help": "Corpus text files (one sentence or document a line; .gz ok)."})
    base_tokenizer: str = field(metadata={"help": "Base tokenizer (path or Hub id) whose pipeline is kept."})
    output_dir: str = field(metadata={"help": "Where the tokenizer and coverage_report.json are written."})
    vocabulary_mode: str = field(
        default="replace",
        metadata={
            "help": "replace: a new vocabulary of --vocab_size entries in place of the base's; extend: the "
            "base vocabulary kept (strings, ids, pipeline) with domain tokens appended.",
            "choices": list(VOCABULARY_MODES),
        },
    )
    vocab_size: str = field(
        default="30522",
        metadata={
            "help": "Vocabulary size, special tokens included (extend: the total, base included). 'auto' "
            "(extend only): grow by --auto_vocab_step until tokens per word improve by less than "
            "--auto_vocab_threshold."
        },
    )
    candidate_vocab_size: int | None = field(
        default=None,
        metadata={
            "help": "extend: size of the corpus vocabulary the added tokens are drawn from (default "
            "--vocab_size; with auto, twice the base's)."
        },
    )
    auto_vocab_step: int | None = field(
        default=None, metadata={"help": "--vocab_size auto: tokens added per step (default a tenth of the base's)."}
    )
    auto_vocab_threshold: float = field(
        default=0.01,
        metadata={"help": "--vocab_size auto: stop when a step lowers tokens per word by less than this fraction."},
    )
    min_frequency: int | None = field(
        default=None,
        metadata={"help": "Minimum pair frequency for a merge (WordPiece and BPE; default 2). Not for Unigram bases."},
    )
    limit_alphabet: int | None = field(
        default=None,
        metadata={
            "help": "Maximum number of initial characters kept (WordPiece and SentencePiece BPE; default 1000). "
            "Not for byte-level BPE (256 bytes, all kept) or Unigram (every character kept)."
        },
    )
    coverage_sample_lines: int = field(default=2000, metadata={"help": "Corpus lines sampled for the report."})
    heldout_files: list[str] | None = field(
        default=None, metadata={"help": "Held-out text files measured in coverage_report.json besides the corpus."}
    )
    seed: int = field(default=0, metadata={"help": "Seed of the coverage sample."})

    def __post_init__(self):
        self.vocab_size = str(self.vocab_size)  # a number from a config or a caller, or "auto"
        if self.vocab_size != "auto" and not self.vocab_size.isdigit():
            raise ValueError(f"--vocab_size {self.vocab_size!r} is neither a number nor auto")
        if self.vocab_size == "auto" and self.vocabulary_mode != "extend":
            raise ValueError("--vocab_size auto grows an extended vocabulary: it needs --vocabulary_mode extend")


def run(argv: list[str] | None = None) -> dict:
    """Parse the command line, train, write and return the coverage report."""
    (args,) = parse_args((TokenizerTrainingArguments,), argv, description=__doc__)
    return train_and_report(args)


def train_and_report(args: TokenizerTrainingArguments) -> dict:
    """Train the vocabulary into ``args.output_dir`` with ``coverage_report.json``; print and return the report.
    Bad input (the message names the flag) ends with one line."""
    stats = CorpusReadStats()
    # All or nothing: a killed run leaves no tokenizer directory that looks finished (and reusable).
    with exit_on_bad_input():  # bad input, said plainly (the message names the flag)
        with writing_directory(args.output_dir) as output_dir:
            options = {
                "min_frequency": args.min_frequency,
                "limit_alphabet": args.limit_alphabet,
                "output_dir": str(output_dir),
                "stats": stats,
            }
            if args.vocabulary_mode == "extend":
                extension = extend_tokenizer(
                    args.train_files,
                    args.base_tokenizer,
                    vocab_size=args.vocab_size,
                    candidate_vocab_size=args.candidate_vocab_size,
                    auto_step=args.auto_vocab_step,
                    auto_threshold=args.auto_vocab_threshold,
                    sample_lines=args.coverage_sample_lines,
                    seed=args.seed,
                    **options,
                )
                tokenizer = extension.tokenizer
                compared = {"replaced": extension.candidate, "extended": tokenizer}
            else:
                tokenizer = train_tokenizer(
                    args.train_files, args.base_tokenizer, vocab_size=int(args.vocab_size), **options
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


def main(argv: list[str] | None = None) -> None:
    """Console entry point (returns None so that the exit status is 0)."""
    run(argv)


if __name__ == "__main__":
    main()
