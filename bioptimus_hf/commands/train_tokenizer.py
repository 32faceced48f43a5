"""``bioptimus-train-tokenizer``: train a vocabulary on a corpus with a base tokenizer's pipeline and trainer
(WordPiece, byte-level BPE or SentencePiece Unigram/BPE, as the base is; see docs/vocabulary_and_init.md).

    bioptimus-train-tokenizer --train_files corpus.txt --base_tokenizer bert-base-uncased \
        --vocab_size 30522 --output_dir out/biomed_tok      # writes the tokenizer and coverage_report.json

    bioptimus-train-tokenizer --train_files out/pubmed_corpus ...   # a prepared corpus directory (prepare-corpus)

    bioptimus-train-tokenizer --vocabulary_mode extend --vocab_size auto ...   # the base's vocabulary + domain tokens
"""

from __future__ import annotations

from ..utils.cli import BadInput, exit_on_bad_input
from ..vocabulary.tokenizer_config import TokenizerTrainingArguments
from .config_parser import parse_args


def run(argv: list[str] | None = None) -> dict:
    """Parse the command line, train, write and return the coverage report
    (:func:`bioptimus_hf.vocabulary.run.train_and_report`); bad input ends with one line naming the flag."""
    (args,) = parse_args((TokenizerTrainingArguments,), argv, description=__doc__)
    from ..vocabulary.run import train_and_report  # tokenizers and the corpus load only to run

    with exit_on_bad_input(BadInput):
        return train_and_report(args)


def main(argv: list[str] | None = None) -> None:
    """Console entry point (returns None so that the exit status is 0)."""
    run(argv)


if __name__ == "__main__":  # through the dispatcher: Ctrl-C ends it in one line
    from bioptimus_hf.commands.dispatch import run_module

    run_module(__spec__.name)
