"""``bioptimus prepare-corpus``: NLM's PubMed baseline and update files in, a corpus every stage reads out.

    bioptimus prepare-corpus --input_files pubmed/pubmed25n*.xml.gz --output_dir corpus/pubmed
    bioptimus train-tokenizer --train_files corpus/pubmed ...       # the directory, or its .parquet shards
    bioptimus pretrain configs/x.yaml --train_file corpus/pubmed --streaming

Writes ``DIR/<input>.parquet`` shards (``pmid``, ``text``: the title then the abstract, ...) and, last,
``DIR/manifest.json`` with the counts and checksums; a rerun skips what is done. A run that skipped records (malformed,
a file cut short) ends with status 1 and a last line saying how many and where, unless ``--on_error skip`` accepts
it. See docs/pubmed.md.
"""

from __future__ import annotations

import json

from ..corpus.prepare import PrepareCorpusError, lost_records_message, prepare_corpus
from ..corpus.prepare_config import PrepareCorpusArguments
from ..utils.cli import exit_on_bad_input
from .config_parser import parse_args


def run(argv: list[str] | None = None) -> dict:
    """Parse the command line, prepare the corpus, print its counts and return the manifest."""
    (args,) = parse_args((PrepareCorpusArguments,), argv, description=__doc__)
    with exit_on_bad_input(ValueError, FileNotFoundError, PrepareCorpusError):
        manifest = prepare_corpus(args)
    print(json.dumps(manifest["counts"], indent=2), flush=True)
    lost = lost_records_message(manifest)
    if lost and args.on_error == "report":
        raise SystemExit(f"error: {lost}")
    return manifest


def main(argv: list[str] | None = None) -> None:
    """Console entry point (returns None so that the exit status is 0)."""
    run(argv)


if __name__ == "__main__":  # through the dispatcher: Ctrl-C ends it in one line
    from bioptimus_hf.commands.dispatch import run_module

    run_module(__spec__.name)
