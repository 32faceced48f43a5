#!/usr/bin/env python
"""Fine-tune and evaluate an encoder on biomedical NER over several seeds: ``bioptimus ner``, as a script.

    python run_ner.py configs/ner_blurb.yaml --seeds 1,2 --num_train_epochs 1
    torchrun --nproc_per_node 2 run_ner.py configs/ner_blurb.yaml ...

The command is :mod:`bioptimus_hf.commands.ner`; the run :func:`bioptimus_hf.ner.run.fine_tune_ner` (docs/ner.md).
"""

if __name__ == "__main__":  # through the dispatcher: Ctrl-C ends it in one line, from the first import on
    from bioptimus_hf.commands.dispatch import main

    main()
else:
    from bioptimus_hf.commands.ner import main, parse_args  # noqa: F401  (names importers use)
