#!/usr/bin/env python
"""The paper's study as one command: ``bioptimus study``, as a script.

    python run_study.py configs/study_cpu.yaml --only_arms continued

The study is :mod:`bioptimus_hf.commands.study` (docs/study.md).
"""

from bioptimus_hf.commands.study import main


if __name__ == "__main__":
    main()
