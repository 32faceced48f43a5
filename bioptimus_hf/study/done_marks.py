"""Done-files: a unit of study work (a trained arm, one NER fine-tune) is finished when its mark exists.

The mark is written atomically *after* the unit's own results, so a unit interrupted at any point has no
mark and is redone (pre-training resumes from its own last checkpoint); a marked unit is never recomputed.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from ..utils.files import read_json, write_json_atomic


DONE_FILE = "study_done.json"


def is_done(directory: str | os.PathLike) -> bool:
    return (Path(directory) / DONE_FILE).is_file()


def read_done(directory: str | os.PathLike) -> dict[str, Any]:
    return read_json(Path(directory) / DONE_FILE)


def mark_done(directory: str | os.PathLike, summary: dict[str, Any]) -> Path:
    """Write the mark with ``summary`` (what the unit produced, how long it took) and the time it finished."""
    return write_json_atomic(
        Path(directory) / DONE_FILE, {**summary, "finished_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    )
