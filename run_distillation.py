#!/usr/bin/env python
"""Distil a compact student from a BIOptimus release: ``bioptimus distill``, as a script.

    python run_distillation.py --teacher_model_name_or_path T --student_layers 0 2 4 --train_file corpus.txt \\
        --output_dir O --max_steps N
    torchrun --nproc_per_node 8 run_distillation.py ...

The run is :mod:`bioptimus_hf.commands.distill` (docs/distillation.md).
"""

if __name__ == "__main__":  # through the dispatcher: Ctrl-C ends it in one line, from the first import on
    from bioptimus_hf.commands.dispatch import main

    main()
else:
    from bioptimus_hf.commands.distill import main  # noqa: F401  (the name importers use)
