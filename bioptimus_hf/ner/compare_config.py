"""The flags of a NER comparison (``bioptimus compare``): which models on which datasets, where, and which jobs."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class NerComparisonArguments:
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

    @property
    def dataset_list(self) -> list[str]:
        return [d for d in (p.strip() for p in self.datasets.split(",")) if d]

    @property
    def seed_list(self) -> list[int] | None:
        """The seeds, each a job of its own (None: one job per model x dataset)."""
        try:
            return [int(s) for s in self.seeds.split(",") if s.strip()] if self.seeds else None
        except ValueError:
            raise ValueError(f"--seeds must be comma-separated integers, got {self.seeds!r}") from None
