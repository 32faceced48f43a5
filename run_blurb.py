#!/usr/bin/env python
"""Fine-tune and evaluate an encoder on one BLURB dataset beyond NER, over seeds: ``bioptimus blurb-task``, as a
script.

    python run_blurb.py --model_name_or_path out/releases/v0.4 --data_dir ../shared/data/blurb/GAD \\
        --output_dir blurb/v0.4/GAD --seeds 1,2,3

The run is :mod:`bioptimus_hf.commands.blurb_task` (docs/blurb.md).
"""

if __name__ == "__main__":  # through the dispatcher: Ctrl-C ends it in one line, from the first import on
    from bioptimus_hf.commands.dispatch import main

    main()
else:
    from bioptimus_hf.commands.blurb_task import main, parse_args, run  # noqa: F401  (names importers use)
