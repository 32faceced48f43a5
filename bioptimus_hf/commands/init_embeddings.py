"""``bioptimus-init-embeddings``: write a base model initialised for a new vocabulary, reusable by training.

    bioptimus-init-embeddings --model_name_or_path B --tokenizer_name NEW_TOK --init_strategy contextualized \
        --init_corpus_files corpus.txt --output_dir out/init        # + init_report.json

The settings are the same :class:`~bioptimus_hf.vocabulary.init_config.EmbeddingInitArguments` as
``run_pretraining.py``'s, with the same defaults, so the checkpoint written here is the model
``run_pretraining.py`` would build (older spellings ``--base_model``, ``--new_tokenizer``,
``--strategy``, ``--corpus_files``, ``--norm_match``, ``--batch_size`` still work).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from ..utils.cli import exit_on_bad_input
from ..utils.files import write_json_atomic, writing_directory
from ..vocabulary.embedding_init import INIT_REPORT_NAME, build_initialized_model
from ..vocabulary.init_config import EmbeddingInitArguments
from ..vocabulary.tokenizer_training import save_tokenizer
from .config_parser import parse_args


@dataclass
class InitCommandArguments:
    model_name_or_path: str = field(metadata={"help": "Base masked-LM (path or Hub id).", "aliases": ["--base_model"]})
    output_dir: str = field(metadata={"help": "Where the initialised checkpoint and init_report.json go."})
    tokenizer_name: str | None = field(
        default=None,
        metadata={"help": "The new vocabulary (not needed for 'continued').", "aliases": ["--new_tokenizer"]},
    )
    config_name: str | None = field(
        default=None, metadata={"help": "Architecture for 'scratch' (default: the base's)."}
    )
    seed: int = field(default=0, metadata={"help": "Seed of the context sample and of random rows."})
    disable_tqdm: bool = field(
        default=False,
        metadata={"help": "No progress bars (as the Trainer's flag); they are drawn on the main process only."},
    )


ARGUMENT_TYPES = (InitCommandArguments, EmbeddingInitArguments)


def run(argv: list[str] | None = None) -> dict:
    """Parse the command line, build and save the model, return the report."""
    args, init_args = parse_args(ARGUMENT_TYPES, argv, description=__doc__)
    return write_initialized_model(args, init_args)


def write_initialized_model(args: InitCommandArguments, init_args: EmbeddingInitArguments) -> dict:
    """Build the initialised model, write it with its tokenizer and ``init_report.json`` to ``args.output_dir``
    (all at once), print the counts and return the report."""
    model, tokenizer, report = build_initialized_model(
        args.model_name_or_path,
        args.tokenizer_name,
        init_args,
        seed=args.seed,
        config_name=args.config_name,
        progress=not args.disable_tqdm,
    )
    with writing_directory(args.output_dir) as output_dir:  # all or nothing, whenever the process dies
        model.save_pretrained(output_dir)
        save_tokenizer(tokenizer, str(output_dir))
        write_json_atomic(output_dir / INIT_REPORT_NAME, report)
    print(json.dumps({k: report[k] for k in ("strategy", "counts") if k in report}, indent=2))
    return report


@exit_on_bad_input()
def main(argv: list[str] | None = None) -> None:
    """Console entry point (returns None so that the exit status is 0)."""
    run(argv)


if __name__ == "__main__":
    main()
