"""The flags of a BLURB comparison (``bioptimus blurb-compare``): the runs compared and where the table goes."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class BlurbCompareArguments:
    runs: list[str] = field(metadata={"help": "NAME=DIR of each bioptimus blurb output; the first is the reference."})
    output_dir: str | None = field(default=None, metadata={"help": "Write blurb_comparison.json/.md here."})
