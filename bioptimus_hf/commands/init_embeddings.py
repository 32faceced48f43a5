"""``bioptimus-init-embeddings``: write a base model initialised for a new vocabulary, reusable by training.

    bioptimus-init-embeddings --model_name_or_path B --tokenizer_name NEW_TOK --init_strategy contextualized \
        --init_corpus_files corpus.txt --output_dir out/init        # + init_report.json

The settings are :class:`~bioptimus_hf.vocabulary.init_config.StartModelArguments` and the initialisation settings
of ``bioptimus pretrain`` (:class:`~bioptimus_hf.pretraining.bioptimus_config.EmbeddingInitArguments`), with the same
defaults, so the checkpoint written here is the model ``bioptimus pretrain`` would build.
"""

from __future__ import annotations

from ..pretraining.bioptimus_config import EmbeddingInitArguments
from ..utils.cli import exit_on_bad_input
from ..vocabulary.init_config import StartModelArguments
from .config_parser import parse_args


ARGUMENT_TYPES = (StartModelArguments, EmbeddingInitArguments)


def run(argv: list[str] | None = None) -> dict:
    """Parse the command line, build and save the model, return the report
    (:func:`bioptimus_hf.vocabulary.run.write_initialized_model`)."""
    args, init_args = parse_args(ARGUMENT_TYPES, argv, description=__doc__)
    from ..vocabulary.run import write_initialized_model  # models load only to run

    return write_initialized_model(args, init_args)


@exit_on_bad_input()
def main(argv: list[str] | None = None) -> None:
    """Console entry point (returns None so that the exit status is 0)."""
    run(argv)


if __name__ == "__main__":  # through the dispatcher: Ctrl-C ends it in one line
    from bioptimus_hf.commands.dispatch import run_module

    run_module(__spec__.name)
