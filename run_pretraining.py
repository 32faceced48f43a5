#!/usr/bin/env python
"""Continued masked-LM pre-training through the BIOptimus curriculum: ``bioptimus pretrain``, as a script.

    python run_pretraining.py configs/demo_minilm.yaml --max_steps 400
    torchrun --nproc_per_node 8 run_pretraining.py configs/bioptimus_full_scale.yaml

The run is :mod:`bioptimus_hf.commands.pretrain`.
"""

from bioptimus_hf.commands.pretrain import ModelArguments, main, pretrain  # noqa: F401  (names importers use)


if __name__ == "__main__":
    main()
