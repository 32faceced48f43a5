"""``bioptimus compare``: evaluate several models on several NER datasets with
``bioptimus ner``, one table.

    bioptimus compare --config configs/ner_blurb.yaml \
        --models v0.1=out/releases/v0.1,v0.4=out/releases/v0.4,base=path/to/bert \
        --datasets ../shared/data/ner/NCBI-disease-IOB,../shared/data/ner/BC5CDR-chem-IOB \
        --output_dir ner_comparison -- --seeds 1,2,3

Everything after ``--`` is a ``bioptimus ner`` flag of every run (overriding the config); each job sets its own
model, dataset, output directory and seed. The runs are fine-tuned in this process. Runs whose
``all_results.json`` already exists are not repeated (``--rerun`` forces them), so an interrupted
comparison resumes; ``--results_only`` only rebuilds the table.

Parallel jobs (several GPUs, a SLURM array): with ``--seeds 1,2,3`` every model × dataset × seed is a job
of its own. ``--list_jobs`` prints one ``bioptimus ner`` command per job (for ``xargs -P``, GNU parallel...),
``--job_index i`` runs job i only; then ``--results_only`` merges the seeds into the same table as one sequential
run:

    bioptimus compare ... --seeds 1,2,3 --list_jobs | parallel -j 4 CUDA_VISIBLE_DEVICES='$(({%} - 1))' {}
    bioptimus compare ... --seeds 1,2,3 --results_only
"""

from __future__ import annotations

import shlex
import sys
from dataclasses import dataclass, field

from ..ner.compare import compare_models, parse_models, plan_jobs
from ..utils.cli import exit_on_bad_input
from . import ner
from .config_parser import parse_args


@dataclass
class CompareArguments:
    models: str = field(metadata={"help": "Comma-separated name=path (or path) list of models."})
    datasets: str = field(metadata={"help": "Comma-separated data directories (train/devel/test.tsv)."})
    output_dir: str = field(metadata={"help": "Where each run and comparison.md/json go."})
    config: str | None = field(default=None, metadata={"help": "`bioptimus ner` yaml/json config shared by all runs."})
    rerun: bool = field(default=False, metadata={"help": "Repeat runs that already have all_results.json."})
    results_only: bool = field(default=False, metadata={"help": "Only rebuild the table from existing runs."})
    seeds: str | None = field(
        default=None,
        metadata={
            "help": "Comma-separated fine-tuning seeds, each seed a job of its own (default: one job per "
            "model x dataset with the config's seeds)."
        },
    )
    job_index: int | None = field(
        default=None,
        metadata={"help": "Run only this job (0-based, in --list_jobs order), e.g. $SLURM_ARRAY_TASK_ID."},
    )
    list_jobs: bool = field(default=False, metadata={"help": "Print one shell command per job and exit."})


def run(argv: list[str] | None = None) -> str | None:
    """Parse the command line, run (or list) the jobs; returns the table (the job list with ``--list_jobs``,
    None with ``--job_index``)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    ner_flags: list[str] = []
    if "--" in argv:
        cut = argv.index("--")
        argv, ner_flags = argv[:cut], argv[cut + 1 :]
    (args,) = parse_args((CompareArguments,), argv, description=__doc__)
    datasets = [d for d in (p.strip() for p in args.datasets.split(",")) if d]
    models = parse_models(args.models)
    try:
        seeds = [int(s) for s in args.seeds.split(",") if s.strip()] if args.seeds else None
    except ValueError:
        raise ValueError(f"--seeds must be comma-separated integers, got {args.seeds!r}") from None
    if args.list_jobs:
        # Through the Python that listed them: the same installation runs every job.
        command = [
            sys.executable,
            "-m",
            "bioptimus_hf.commands",
            "ner",
            *([args.config] if args.config else []),
            *ner_flags,
        ]
        commands = [shlex.join(command + job.flags(args.output_dir)) for job in plan_jobs(models, datasets, seeds)]
        print("\n".join(commands))
        return "\n".join(commands)
    ner_arguments = None
    if not args.results_only:
        # The flags every job shares; each job then sets its model (this one stands in), dataset, output and seed.
        ner_arguments = ner.parse_args(
            [
                *([args.config] if args.config else []),
                *ner_flags,
                "--model_name_or_path",
                models[0][1] if models else "",
            ]
        )
    table = compare_models(
        models,
        datasets,
        args.output_dir,
        ner_arguments=ner_arguments,
        fine_tune=ner.fine_tune_ner,
        rerun=args.rerun,
        results_only=args.results_only,
        seeds=seeds,
        job_index=args.job_index,
    )
    if table is not None:
        print(table)
    return table


@exit_on_bad_input()
def main(argv: list[str] | None = None) -> None:
    """Console entry point (returns None so that the exit status is 0)."""
    run(argv)


if __name__ == "__main__":
    main()
