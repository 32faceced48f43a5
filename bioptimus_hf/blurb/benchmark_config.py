"""``bioptimus blurb``'s flags (:class:`BenchmarkArguments`): the benchmark's config, light to import (``--help``
loads no fine-tuning code); :mod:`.benchmark` runs it."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from ..finetuning.finetuning_config import BATCHED_SEEDS_HELP
from ..releases.lineage import base_model_hub_id_field
from ..utils.config_files import resolve_config
from ..utils.job_pool import JOBS_HELP, parse_jobs


DEFAULT_NER_CONFIG = "ner_blurb"  # a packaged config, found from any working directory (utils/config_files.py)
# --search's grid flags, each overriding one axis of the grid (blurb_config.PAPER_*, epoch_choices)
SEARCH_FLAGS = ("search_learning_rates", "search_batch_sizes", "search_epochs")


@dataclass
class BenchmarkArguments:
    model_name_or_path: str = field(metadata={"help": "Pretrained model directory or Hub id (e.g. a release dir)."})
    output_dir: str = field(metadata={"help": "Each dataset's runs in <output_dir>/<DATASET>/, and the table."})
    seeds: list[int] = field(
        default_factory=lambda: [1, 2, 3, 4, 5],
        metadata={"help": "Fine-tuning seeds, the same for every dataset, e.g. --seeds 1 2 3."},
    )
    blurb_dir: str | None = field(
        default=None,
        metadata={
            "help": "Directory of BLURB datasets beyond NER, one sub-directory each with "
            "train/dev/test.jsonl (e.g. ../shared/data/blurb)."
        },
    )
    ner_dir: str | None = field(
        default=None,
        metadata={
            "help": "Directory of NER datasets, one sub-directory each with train/devel/test.tsv "
            "(e.g. ../shared/data/ner)."
        },
    )
    ner_config: str = field(
        default=DEFAULT_NER_CONFIG,
        metadata={
            "help": "bioptimus ner's config for the NER sets: a file or a packaged config's name. With the default, "
            "each of BLURB's NER sets takes its recipe; a file you name sets the values it holds over the recipe."
        },
    )
    datasets: list[str] | None = field(
        default=None, metadata={"help": "Only these datasets (sub-directory names; default: every one present)."}
    )
    model_name: str | None = field(
        default=None, metadata={"help": "Name in the table (default: the path's basename)."}
    )
    save_model: bool = field(default=False, metadata={"help": "Keep each seed's fine-tuned model."})
    base_model_hub_id: str | None = base_model_hub_id_field()
    num_train_epochs: float | None = field(default=None, metadata={"help": "Override every task's epochs."})
    max_steps: int | None = field(default=None, metadata={"help": "Override every task's steps (a CPU budget)."})
    max_train_samples: int | None = field(default=None, metadata={"help": "Use only the first N training rows."})
    max_eval_samples: int | None = field(default=None, metadata={"help": "Use only the first N dev rows."})
    max_test_samples: int | None = field(default=None, metadata={"help": "Use only the first N test rows."})
    jobs: str = field(default="auto", metadata={"help": JOBS_HELP})
    search: bool = field(
        default=False,
        metadata={
            "help": "Run the paper's search on dev: every point of the grid (learning rates × batch sizes × epochs) "
            "over the seeds, each dataset reported at the point of the highest mean dev score. Default: false, "
            "each dataset at its recipe."
        },
    )
    search_learning_rates: list[float] | None = field(
        default=None, metadata={"help": "The grid's learning rates, e.g. 1e-5 3e-5 (default: the paper's)."}
    )
    search_batch_sizes: list[int] | None = field(
        default=None, metadata={"help": "The grid's batch sizes, e.g. 16 32 (default: the paper's)."}
    )
    search_epochs: list[float] | None = field(
        default=None,
        metadata={"help": "The grid's epochs for every dataset, e.g. 5 10 (default: each dataset's choices)."},
    )
    max_tokens_per_pass: int | None = field(
        default=None,
        metadata={"help": "bioptimus blurb-task's --max_tokens_per_pass for every dataset beyond NER (default: its)."},
    )
    batched_seeds: bool | None = field(
        default=None,
        metadata={"help": BATCHED_SEEDS_HELP + " Here: one job per dataset holds its unfinished seeds."},
    )
    disable_tqdm: bool = field(
        default=False, metadata={"help": "No progress bars: the jobs' bar, and the fine-tunes' own."}
    )

    def __post_init__(self):
        parse_jobs(self.jobs)
        if not self.seeds:
            raise ValueError("--seeds: give at least one seed")
        if len(set(self.seeds)) != len(self.seeds):
            raise ValueError(f"--seeds {' '.join(map(str, self.seeds))}: a seed is given twice")
        if not self.blurb_dir and not self.ner_dir:
            raise ValueError("give --blurb_dir, --ner_dir or both: nothing to benchmark")
        for flag in ("blurb_dir", "ner_dir"):
            if getattr(self, flag) and not os.path.isdir(getattr(self, flag)):
                raise ValueError(f"--{flag} {getattr(self, flag)}: not a directory")
        self._check_search()
        if self.ner_dir:
            try:
                resolve_config(self.ner_config)
            except FileNotFoundError as error:
                raise ValueError(f"--ner_config {str(error).removeprefix('config file ')}") from None

    def _check_search(self) -> None:
        """The grid flags: positive values, none twice, only with ``--search true``, whose epochs are the grid's."""
        for flag in SEARCH_FLAGS:
            values = getattr(self, flag)
            if values is None:
                continue
            shown = f"--{flag} {' '.join(f'{value:g}' for value in values)}"
            if not self.search:
                raise ValueError(f"{shown}: a grid of --search: give --search true as well")
            if not values or min(values) <= 0:
                raise ValueError(f"{shown}: give one or more values above 0")
            if len(set(values)) != len(values):
                raise ValueError(f"{shown}: a value is given twice")
        if self.search and self.num_train_epochs is not None:
            raise ValueError(
                f"--num_train_epochs {self.num_train_epochs:g}: not with --search true, whose epochs are the grid's "
                "(--search_epochs)"
            )

    @property
    def uses_default_ner_config(self) -> bool:
        """Whether ``--ner_config`` is the packaged default: then each of BLURB's NER sets takes its own recipe over
        its values (a config file the user names sets what it holds over the recipe)."""
        return self.ner_config == DEFAULT_NER_CONFIG

    @property
    def name(self) -> str:
        return self.model_name or os.path.basename(os.path.normpath(self.model_name_or_path))
