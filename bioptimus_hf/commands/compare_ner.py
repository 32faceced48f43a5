"""``bioptimus-ner-compare``: evaluate several models on several NER datasets with run_ner.py, one table.

    bioptimus-ner-compare --config configs/ner_blurb.yaml \
        --models v0.1=out/releases/v0.1,v0.4=out/releases/v0.4,base=path/to/bert \
        --datasets ../shared/data/ner/NCBI-disease-IOB,../shared/data/ner/BC5CDR-chem-IOB \
        --output_dir ner_comparison -- --seeds 1,2,3

Everything after ``--`` is passed to every run_ner.py call (overriding the config). Runs whose
``all_results.json`` already exists are not repeated (``--rerun`` forces them), so an interrupted
comparison resumes; ``--results_only`` only rebuilds the table.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

from ..ner.compare import DEFAULT_RUN_NER, compare_models, parse_models
from .config_parser import parse_args


@dataclass
class CompareArguments:
    models: str = field(metadata={"help": "Comma-separated name=path (or path) list of models."})
    datasets: str = field(metadata={"help": "Comma-separated data directories (train/devel/test.tsv)."})
    output_dir: str = field(metadata={"help": "Where each run and comparison.md/json go."})
    config: str | None = field(default=None, metadata={"help": "run_ner.py yaml/json config shared by all runs."})
    run_ner: str = field(default=DEFAULT_RUN_NER, metadata={"help": "Path to run_ner.py."})
    rerun: bool = field(default=False, metadata={"help": "Repeat runs that already have all_results.json."})
    results_only: bool = field(default=False, metadata={"help": "Only rebuild the table from existing runs."})


def main(argv: list[str] | None = None) -> str:
    argv = list(sys.argv[1:] if argv is None else argv)
    passthrough: list[str] = []
    if "--" in argv:
        cut = argv.index("--")
        argv, passthrough = argv[:cut], argv[cut + 1 :]
    (args,) = parse_args((CompareArguments,), argv, description=__doc__)
    datasets = [d for d in (p.strip() for p in args.datasets.split(",")) if d]
    table = compare_models(parse_models(args.models), datasets, args.output_dir, config=args.config,
                           run_ner=args.run_ner, run_ner_args=passthrough, rerun=args.rerun,
                           results_only=args.results_only)
    print(table)
    return table


if __name__ == "__main__":
    main()
