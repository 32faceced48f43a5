#!/usr/bin/env python
"""``bioptimus study`` as a script: the paper's study as one command (docs/study.md).

    python run_study.py configs/study_cpu.yaml --only_arms continued

``main(argv)`` runs it in this process and returns its results.
"""

import sys

from bioptimus_hf import commands


def main(argv: list[str] | None = None):
    return commands.run("study", argv, prog="run_study.py")


if __name__ == "__main__":  # Ctrl-C ends it in one line, from the first import of torch on
    commands.main(["study", *sys.argv[1:]], prog="run_study.py")
