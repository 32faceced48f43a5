#!/usr/bin/env python
"""``bioptimus pretrain`` as a script: continued masked-LM pre-training through the BIOptimus curriculum
(docs/pretraining.md).

    python run_pretraining.py configs/demo_minilm.yaml --max_steps 400
    torchrun --nproc_per_node 8 run_pretraining.py configs/bioptimus_full_scale.yaml

``main(argv)`` runs it in this process.
"""

import sys

from bioptimus_hf import commands


def main(argv: list[str] | None = None):
    return commands.run("pretrain", argv, prog="run_pretraining.py")


if __name__ == "__main__":  # Ctrl-C ends it in one line, from the first import of torch on
    commands.main(["pretrain", *sys.argv[1:]], prog="run_pretraining.py")
