"""The settings of a task-difficulty measurement (``bioptimus task-difficulty``): which models, on which text."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class TaskDifficultyArguments:
    model_name_or_path: list[str] = field(
        metadata={
            "help": "One or more masked LMs (directories or Hub ids), e.g. the releases of a run; "
            "LABEL=PATH names one in the table and plot."
        }
    )
    corpus_files: list[str] = field(metadata={"help": "Text files (one sentence or document a line; .gz ok)."})
    max_seq_length: int = field(default=128, metadata={"help": "Block size in tokens, as in pre-training."})
    max_blocks: int = field(default=256, metadata={"help": "Blocks evaluated (the first ones of the corpus)."})
    batch_size: int = field(default=16, metadata={"help": "Blocks per forward pass."})
    seed: int = field(default=0, metadata={"help": "Masking seed (the same for every phase)."})
    output_file: str | None = field(default=None, metadata={"help": "Where to write the results as JSON."})
    output_plot: str | None = field(default=None, metadata={"help": "Where to draw the losses as a PNG (matplotlib)."})
