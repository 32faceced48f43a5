#!/usr/bin/env python
"""``bioptimus ner`` as a script: fine-tune and evaluate an encoder on biomedical NER over several seeds
(docs/ner.md).

    python run_ner.py configs/ner_blurb.yaml --seeds 1 2 --num_train_epochs 1
    torchrun --nproc_per_node 2 run_ner.py configs/ner_blurb.yaml ...

``main(argv)`` runs it in this process and returns its results; ``parse_args(argv)`` gives its dataclasses.
"""

import sys

from bioptimus_hf import commands


def main(argv: list[str] | None = None):
    return commands.run("ner", argv, prog="run_ner.py")


def parse_args(argv: list[str] | None = None) -> tuple:
    return commands.parse("ner", argv, prog="run_ner.py")


if __name__ == "__main__":  # Ctrl-C ends it in one line, from the first import of torch on
    commands.main(["ner", *sys.argv[1:]], prog="run_ner.py")
