"""``bioptimus tag``: tag entities in raw text with a model fine-tuned by run_ner.py (JSON lines out).

    bioptimus tag --model_name_or_path out/seed_1 --text "Mutations in BRCA1 cause breast cancer."
    bioptimus tag --model_name_or_path acme/ner-model --revision v1 --input_file abstracts.txt \
        --output_file entities.jsonl

One line per input line: ``{"line": n, "entities": [...]}``, each entity in the shape of transformers'
token-classification pipeline (``entity_group``, ``score``, ``word``, ``start``, ``end``; ner/tagger.py).

The input file is read lazily and results are written as they are done, in input order, so memory
stays bounded whatever the file size. The output goes to ``<output_file>.partial`` and is renamed to
``output_file`` only when every line is tagged; an interrupted run leaves the lines done so far there.
"""

from __future__ import annotations

from ..ner.tagger_config import TaggingArguments
from ..utils.cli import BadInput, exit_on_bad_input
from .config_parser import parse_args


def main(argv: list[str] | None = None) -> None:
    """Parse the command line, then tag (:func:`bioptimus_hf.ner.tagging_run.run_tagging`); bad input ends with
    one line naming the flag, file or line."""
    (args,) = parse_args((TaggingArguments,), argv, description=__doc__)
    from ..ner.tagging_run import run_tagging  # the model loads only to run

    with exit_on_bad_input(BadInput):
        run_tagging(args)


if __name__ == "__main__":  # through the dispatcher: Ctrl-C ends it in one line
    from bioptimus_hf.commands.dispatch import run_module

    run_module(__spec__.name)
