"""``bioptimus compare``: evaluate several models on several NER datasets with
``bioptimus ner``, one table.

    bioptimus compare --ner_config ner_blurb \
        --models v0.1=out/releases/v0.1 v0.4=out/releases/v0.4 base=path/to/bert \
        --data_dirs ../shared/data/ner/NCBI-disease-IOB ../shared/data/ner/BC5CDR-chem-IOB \
        --output_dir ner_comparison -- --seeds 1 2 3

Everything after ``--`` is a ``bioptimus ner`` flag of every run (overriding the config); each job sets its own
model, dataset, output directory and seed. The runs are fine-tuned in this process (``--push_to_hub`` is
``bioptimus ner``'s alone). Runs whose
``all_results.json`` already exists are not repeated (``--rerun`` forces them), so an interrupted
comparison resumes; ``--results_only`` only rebuilds the table.

Parallel jobs (several GPUs, a SLURM array): with ``--seeds 1 2 3`` every model × dataset × seed is a job
of its own. ``--list_jobs`` prints one ``bioptimus ner`` command per job (for ``xargs -P``, GNU parallel...),
``--job_index i`` runs job i only; then ``--results_only`` merges the seeds into the same table as one sequential
run:

    bioptimus compare ... --seeds 1 2 3 --list_jobs | parallel -j 4 CUDA_VISIBLE_DEVICES='$(({%} - 1))' {}
    bioptimus compare ... --seeds 1 2 3 --results_only
"""

from __future__ import annotations

import shlex
import sys

from ..ner.compare_config import NerComparisonArguments
from ..utils.cli import exit_on_bad_input
from .config_parser import parse_args
from .run_logging import configure_logging


def run(argv: list[str] | None = None) -> str | None:
    """Parse the command line, run (or list) the jobs; returns the table (the job list with ``--list_jobs``,
    None with ``--job_index``)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    ner_flags: list[str] = []
    if "--" in argv:
        cut = argv.index("--")
        argv, ner_flags = argv[:cut], argv[cut + 1 :]
    (args,) = parse_args((NerComparisonArguments,), argv, description=__doc__)
    from ..ner.compare import compare_models, parse_models, plan_jobs  # the NER wing loads only to run
    from ..utils.distributed import close_process_group
    from . import ner

    models, datasets, seeds = parse_models(args.models), args.data_dirs, args.seeds
    config = [args.ner_config] if args.ner_config else []
    if args.list_jobs:
        # Through the Python that listed them: the same installation runs every job.
        command = [sys.executable, "-m", "bioptimus_hf.commands", "ner", *config, *ner_flags]
        commands = [shlex.join(command + job.flags(args.output_dir)) for job in plan_jobs(models, datasets, seeds)]
        print("\n".join(commands))
        return "\n".join(commands)
    # The flags every job shares; each job then sets its model (this one stands in), dataset, output and seed.
    stand_in = ["--model_name_or_path", models[0][1] if models else ""]
    ner_arguments = None if args.results_only else ner.parse_args([*config, *ner_flags, *stand_in])
    configure_logging(ner_arguments[3] if ner_arguments else None)
    table = compare_models(
        models,
        datasets,
        args.output_dir,
        ner_arguments=ner_arguments,
        rerun=args.rerun,
        results_only=args.results_only,
        seeds=seeds,
        job_index=args.job_index,
    )
    close_process_group()
    if table is not None:
        print(table)
    return table


@exit_on_bad_input()
def main(argv: list[str] | None = None) -> None:
    """Console entry point (returns None so that the exit status is 0)."""
    run(argv)


if __name__ == "__main__":  # through the dispatcher: Ctrl-C ends it in one line
    from bioptimus_hf.commands.dispatch import run_module

    run_module(__spec__.name)
