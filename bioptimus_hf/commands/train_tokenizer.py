"""``bioptimus-train-tokenizer``: train a vocabulary on a corpus with a base tokenizer's pipeline and trainer
(WordPiece, byte-level BPE or SentencePiece Unigram/BPE, as the base is; see docs/vocabulary_and_init.md).

    bioptimus-train-tokenizer --train_files corpus.txt --base_tokenizer bert-base-uncased \
        --vocab_size 30522 --output_dir out/biomed_tok      # writes the tokenizer and coverage_report.json
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from ..utils.cli import exit_on_bad_input
from ..utils.corpus_reader import CorpusReadStats
from ..utils.files import write_json_atomic, writing_directory
from ..vocabulary.tokenizer_training import COVERAGE_REPORT_NAME, coverage_report, train_tokenizer
from .config_parser import parse_args


@dataclass
class TokenizerTrainingArguments:
    train_files: list[str] = field(metadata={"help": "Corpus text files (one sentence or document a line; .gz ok)."})
    base_tokenizer: str = field(metadata={"help": "Base tokenizer (path or Hub id) whose pipeline is kept."})
    output_dir: str = field(metadata={"help": "Where the tokenizer and coverage_report.json are written."})
    vocab_size: int = field(default=30522, metadata={"help": "Vocabulary size, special tokens included."})
    min_frequency: int | None = field(
        default=None,
        metadata={"help": "Minimum pair frequency for a merge (WordPiece and BPE; default 2). Not for Unigram bases."},
    )
    limit_alphabet: int | None = field(
        default=None,
        metadata={"help": "Maximum number of initial characters kept (WordPiece and SentencePiece BPE; default 1000). "
                          "Not for byte-level BPE (256 bytes, all kept) or Unigram (every character kept)."},
    )
    coverage_sample_lines: int = field(default=2000, metadata={"help": "Corpus lines sampled for the report."})
    seed: int = field(default=0, metadata={"help": "Seed of the coverage sample."})


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
            tokenizer = train_tokenizer(
                args.train_files,
                args.base_tokenizer,
                vocab_size=args.vocab_size,
                min_frequency=args.min_frequency,
                limit_alphabet=args.limit_alphabet,
                output_dir=str(output_dir),
                stats=stats,
            )
            report = coverage_report(tokenizer, args.base_tokenizer, args.train_files, args.coverage_sample_lines,
                                     args.seed)
            report["corpus"] = stats.to_dict()
            report["requested_vocab_size"] = args.vocab_size
            write_json_atomic(output_dir / COVERAGE_REPORT_NAME, report)
    print(json.dumps(report, indent=2))
    return report


def main(argv: list[str] | None = None) -> None:
    """Console entry point (returns None so that the exit status is 0)."""
    run(argv)


if __name__ == "__main__":
    main()
