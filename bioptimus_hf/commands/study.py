"""``bioptimus study`` (``python run_study.py``): the paper's study as one command: pre-training arms under one
token budget, NER of each, tables and figures.

    bioptimus study configs/study_cpu.yaml                          # what runs on a 2-core CPU machine
    bioptimus study configs/study_cpu.yaml --only_arms continued    # some arms this time
    bioptimus study configs/study_paper.yaml --model_name_or_path bert-base-uncased   # the paper, on GPUs
    bioptimus study configs/study_gpu.yaml --prepare_only true      # shared tokenizer + start models, then
    bioptimus study configs/study_gpu.yaml --only_arms averaged --include_base false &   # arms side by side

Run it again after an interruption: finished arms and NER runs are skipped, an interrupted arm resumes from
its last checkpoint. ``<results_dir>`` (default ``<output_dir>/study``) gets ``results.json``,
``results.md`` (the paper's tables, base model and arms side by side), ``figures/*.png`` and
``command.txt`` (the ``bioptimus study`` command that reproduces it, its local paths named as a record names them:
``bioptimus_hf/utils/public_paths.py``); they are rewritten after every finished unit. See docs/study.md.
"""

import logging
import shlex
import sys

from bioptimus_hf.commands.config_parser import parse_args
from bioptimus_hf.study.study_config import StudyArguments
from bioptimus_hf.utils.cli import BadInput, exit_on_bad_input
from bioptimus_hf.utils.public_paths import public_command


def main(argv=None):
    """``[config.{yaml,json}] [--flag value ...]``: run (or resume) the study; returns its results
    (:func:`bioptimus_hf.study.run.run_study`). Bad input, in the study's settings or a unit's, ends it with one
    line."""
    (args,) = parse_args((StudyArguments,), argv, description=__doc__)
    logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", level=logging.INFO)
    command = public_command(shlex.join(["bioptimus", "study", *(sys.argv[1:] if argv is None else argv)]))
    from bioptimus_hf.study.run import run_study  # models and datasets load only to run
    from bioptimus_hf.utils.distributed import close_process_group

    with exit_on_bad_input(BadInput):
        results = run_study(args, command)
    close_process_group()
    return results


if __name__ == "__main__":  # through the dispatcher: Ctrl-C ends it in one line
    from bioptimus_hf.commands.dispatch import run_module

    run_module(__spec__.name)
