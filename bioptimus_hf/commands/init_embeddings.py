"""``bioptimus-init-embeddings``: write a base model initialised for a new vocabulary, reusable by training.

    bioptimus-init-embeddings --model_name_or_path B --tokenizer_name NEW_TOK --init_strategy contextualized \
        --init_corpus_files corpus.txt --output_dir out/init        # + init_report.json

The settings are :class:`~bioptimus_hf.vocabulary.init_config.StartModelArguments` and the same
:class:`~bioptimus_hf.vocabulary.init_config.EmbeddingInitArguments` as
``run_pretraining.py``'s, with the same defaults, so the checkpoint written here is the model
``run_pretraining.py`` would build (older spellings ``--base_model``, ``--new_tokenizer``,
``--strategy``, ``--corpus_files``, ``--norm_match``, ``--batch_size`` still work).
"""

from __future__ import annotations

from ..utils.cli import exit_on_bad_input
from ..vocabulary.init_config import EmbeddingInitArguments, StartModelArguments
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
