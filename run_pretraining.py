#!/usr/bin/env python
"""Continued masked-LM pre-training through the BIOptimus curriculum: ``bioptimus pretrain``, as a script.

    python run_pretraining.py configs/demo_minilm.yaml --max_steps 400
    torchrun --nproc_per_node 8 run_pretraining.py configs/bioptimus_full_scale.yaml

The command is :mod:`bioptimus_hf.commands.pretrain`; the run :func:`bioptimus_hf.pretraining.run.run_pretraining`.
"""

if __name__ == "__main__":  # through the dispatcher: Ctrl-C ends it in one line, from the first import on
    from bioptimus_hf.commands.dispatch import main

    main()
else:
    from bioptimus_hf.commands.pretrain import main  # noqa: F401  (the name importers use)
