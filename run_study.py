#!/usr/bin/env python
"""The paper's study as one command: ``bioptimus study``, as a script.

    python run_study.py configs/study_cpu.yaml --only_arms continued

The study is :mod:`bioptimus_hf.commands.study` (docs/study.md).
"""

if __name__ == "__main__":  # through the dispatcher: Ctrl-C ends it in one line, from the first import on
    from bioptimus_hf.commands.dispatch import main

    main()
else:
    from bioptimus_hf.commands.study import main  # noqa: F401  (the name importers use)
