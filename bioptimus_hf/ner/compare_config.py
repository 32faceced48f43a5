"""The flags of a NER comparison (``bioptimus compare``): which models on which datasets, where, and which jobs."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class NerComparisonArguments:
    models: list[str] = field(metadata={"help": "The models: NAME=PATH (or PATH, named by its basename) each."})
    data_dirs: list[str] = field(metadata={"help": "NER data directories (train/devel/test.tsv)."})
    output_dir: str = field(metadata={"help": "Where each run and comparison.md/json go."})
    ner_config: str | None = field(
        default=None, metadata={"help": "`bioptimus ner` yaml/json config shared by all runs."}
    )
    rerun: bool = field(default=False, metadata={"help": "Repeat runs that already have all_results.json."})
    results_only: bool = field(default=False, metadata={"help": "Only rebuild the table from existing runs."})
    seeds: list[int] | None = field(
        default=None,
        metadata={
            "help": "Fine-tuning seeds, each a job of its own (default: one job per model x dataset with the "
            "config's seeds)."
        },
    )
    job_index: int | None = field(
        default=None,
        metadata={"help": "Run only this job (0-based, in --list_jobs order), e.g. $SLURM_ARRAY_TASK_ID."},
    )
    list_jobs: bool = field(default=False, metadata={"help": "Print one shell command per job and exit."})
