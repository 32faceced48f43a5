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
``command.txt`` (the ``bioptimus study`` command that reproduces it); they are rewritten after every finished
unit. See docs/study.md.
"""

import logging
import shlex
import sys
from pathlib import Path

from bioptimus_hf.commands import init_embeddings, ner, pretrain, train_tokenizer
from bioptimus_hf.commands.config_parser import parse_args, parse_mapping
from bioptimus_hf.study.figures import draw_figures
from bioptimus_hf.study.results import write_results
from bioptimus_hf.study.runner import StudyRunner, StudyUnits
from bioptimus_hf.study.study_config import StudyArguments
from bioptimus_hf.utils.files import write_text_atomic


logger = logging.getLogger(__name__)

# Each unit of a study is a command's library function, given the dataclasses a config file holding the study's
# mapping would give (the study wing sits below the commands, so they are handed to it).
STUDY_UNITS = StudyUnits(
    train_tokenizer=lambda mapping: train_tokenizer.train_and_report(
        *parse_mapping((train_tokenizer.TokenizerTrainingArguments,), mapping)
    ),
    initialize=lambda mapping: init_embeddings.write_initialized_model(
        *parse_mapping(init_embeddings.ARGUMENT_TYPES, mapping)
    ),
    pretrain=lambda mapping: pretrain.pretrain(*parse_mapping(pretrain.ARGUMENT_TYPES, mapping)),
    fine_tune_ner=lambda mapping: ner.fine_tune_ner(*parse_mapping(ner.ARGUMENT_TYPES, mapping)),
)


def main(argv=None):
    """``[config.{yaml,json}] [--flag value ...]``: run (or resume) the study; returns its results."""
    (args,) = parse_args((StudyArguments,), argv, description=__doc__)
    logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", level=logging.INFO)
    results_dir = Path(args.results_dir)
    command = shlex.join(["bioptimus", "study", *(sys.argv[1:] if argv is None else argv)])
    write_text_atomic(results_dir / "command.txt", command + "\n")

    # 1. The report, rewritten after each finished unit (a long study shows its progress as it goes).
    def report(analysis=None):
        results = write_results(args, analysis)
        draw_figures(results, args.output_dir, results_dir / "figures")
        return results

    if args.reference_results:  # an unusable reference study fails now, not after hours of training
        report()

    # 2. Tokenizer, start models, then the base row and every arm: pre-training, NER (skipping what is done).
    runner = StudyRunner(args, STUDY_UNITS, on_progress=report)
    if args.prepare_only:  # shared inputs only; the arms then run as separate jobs (docs/study.md)
        runner.prepare()
        logger.info("study: prepared %s; run the arms now", dict(runner.computed) or "nothing new")
        return None
    if not args.report_only:
        runner.run()

    # 3. Representation analysis of every release (rare vs frequent tokens), then the final report.
    analysis = None
    if not args.skip_analysis:
        from bioptimus_hf.study.analysis import analyse_study

        analysis = analyse_study(args, results_dir / "figures")
    results = report(analysis)
    logger.info("study: ran %s; results in %s", dict(runner.computed) or "nothing new", results_dir)
    return results


if __name__ == "__main__":
    main()
