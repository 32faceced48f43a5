"""The flags of drawing a finished run's figures again (``bioptimus plot``): which run, and where the figures go."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class PlotArguments:
    run_dir: str = field(metadata={"help": "The run's output_dir (trainer_state.json, releases/), or a checkpoint."})
    output_dir: str | None = field(default=None, metadata={"help": "Where the figures go (default: RUN_DIR)."})
