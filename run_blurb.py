#!/usr/bin/env python
"""``bioptimus blurb-task`` as a script: fine-tune and evaluate an encoder on one BLURB dataset beyond NER over
several seeds (docs/blurb.md).

    python run_blurb.py --model_name_or_path out/releases/v0.4 --data_dir ../shared/data/blurb/GAD \\
        --output_dir blurb/v0.4/GAD --seeds 1 2 3

``main(argv)`` runs it in this process and returns its results; ``parse_args(argv)`` gives its dataclasses.
"""

import sys

from bioptimus_hf import commands


def main(argv: list[str] | None = None):
    return commands.run("blurb-task", argv, prog="run_blurb.py")


def parse_args(argv: list[str] | None = None) -> tuple:
    return commands.parse("blurb-task", argv, prog="run_blurb.py")


if __name__ == "__main__":  # Ctrl-C ends it in one line, from the first import of torch on
    commands.main(["blurb-task", *sys.argv[1:]], prog="run_blurb.py")
