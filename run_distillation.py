#!/usr/bin/env python
"""``bioptimus distill`` as a script: distil a compact student from a BIOptimus release (docs/distillation.md).

    python run_distillation.py --teacher_model_name_or_path T --student_layers 0 2 4 --train_file corpus.txt \\
        --output_dir O --max_steps N
    torchrun --nproc_per_node 8 run_distillation.py ...

``main(argv)`` runs it in this process.
"""

import sys

from bioptimus_hf import commands


def main(argv: list[str] | None = None):
    return commands.run("distill", argv, prog="run_distillation.py")


if __name__ == "__main__":  # Ctrl-C ends it in one line, from the first import of torch on
    commands.main(["distill", *sys.argv[1:]], prog="run_distillation.py")
