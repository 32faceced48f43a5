"""Arguments of the pre-training data (``run_pretraining.py``; reused by every script that trains on a corpus)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..utils.corpus_reader import DEFAULT_MAX_UNDECODABLE_FRACTION


# File suffixes and the `datasets` builder that reads them (".gz" means compressed text; ".parquet": the shards of a
# prepared corpus, whose directory is given as itself).
CORPUS_BUILDERS = {
    ".txt": "text",
    ".text": "text",
    ".gz": "text",
    ".json": "json",
    ".jsonl": "json",
    ".csv": "csv",
    ".parquet": "parquet",
}
# The shuffle buffer of a streaming run whose corpus is not a prepared one with shuffled rows.
DEFAULT_SHUFFLE_BUFFER_SIZE = 10_000


@dataclass
class PretrainingDataArguments:
    dataset_name: str | None = field(default=None, metadata={"help": "A `datasets` dataset name."})
    dataset_config_name: str | None = field(default=None, metadata={"help": "Its configuration."})
    train_file: list[str] | None = field(
        default=None,
        metadata={
            "help": "Local corpus file(s): text (.txt, .gz; one document or sentence a line), JSON lines "
            "(.json/.jsonl) or CSV (.csv) with a --text_column_name column, Parquet (.parquet), or the directory "
            "of a prepared corpus (bioptimus prepare-corpus). One kind per run."
        },
    )
    validation_file: str | None = field(default=None, metadata={"help": "Held-out file, same kind as --train_file."})
    text_column_name: str = field(default="text", metadata={"help": "Column holding the text (json/csv/datasets)."})
    validation_split_percentage: float = field(
        default=5,
        metadata={"help": "Held-out share of the training lines when there is no validation file (0 = none)."},
    )
    max_train_samples: int | None = field(default=None)
    max_eval_samples: int | None = field(default=None)
    max_seq_length: int | None = field(default=128)
    line_by_line: bool = field(
        default=False, metadata={"help": "One sequence per line (long lines chunked) instead of packed blocks."}
    )
    preprocessing_num_workers: int | None = field(default=None)
    overwrite_cache: bool = field(default=False)
    streaming: bool = field(default=False, metadata={"help": "Stream the corpus (never pre-tokenised whole)."})
    shuffle_buffer_size: int | None = field(
        default=None,
        metadata={
            "help": "Shuffle buffer with --streaming; 0: none, the files (shards) read in a seeded order. Default: 0 "
            f"for a prepared corpus whose rows were shuffled when written, else {DEFAULT_SHUFFLE_BUFFER_SIZE}. A "
            "run with a buffer resumes with the buffer refilled (docs/pubmed.md)."
        },
    )
    streaming_resume: str = field(
        default="state",
        metadata={
            "help": "How a --streaming run resumes: state (the data loader's position saved in each checkpoint: "
            "seconds, whatever the step) or replay (transformers' skip: every batch trained is read again).",
            "choices": ["state", "replay"],
        },
    )
    max_undecodable_fraction: float = field(
        default=DEFAULT_MAX_UNDECODABLE_FRACTION,
        metadata={
            "help": "Refuse a text file whose share of lines with bytes that are not UTF-8 is above this "
            "(such lines are otherwise kept with U+FFFD and counted); 1 disables the check."
        },
    )

    def __post_init__(self):
        if not 0 <= self.validation_split_percentage < 100:
            raise ValueError("--validation_split_percentage must be in [0, 100)")
        if self.shuffle_buffer_size is not None and self.shuffle_buffer_size < 0:
            raise ValueError(f"--shuffle_buffer_size must be >= 0, got {self.shuffle_buffer_size}")
        if not 0 <= self.max_undecodable_fraction <= 1:
            raise ValueError("--max_undecodable_fraction must be in [0, 1]")
