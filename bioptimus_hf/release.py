"""A release: the model at the end of one curriculum phase, ready for from_pretrained and the Hub."""

from __future__ import annotations

import json
import logging
import math
import os
import shutil
from pathlib import Path

PHASE_FILE = "bioptimus_phase.json"

logger = logging.getLogger(__name__)


def release_name(version: str) -> str:
    return version if version.startswith("v") else f"v{version}"


def write_release(release_dir: str | os.PathLike, model, tokenizer, phase_info: dict) -> Path:
    """Save model (safetensors), tokenizer, config, ``bioptimus_phase.json`` and the model card.

    The directory is written under a temporary name and renamed at the end, so an interrupted
    write never leaves a half release that looks complete.
    """
    release_dir = Path(release_dir)
    staging = release_dir.with_name(release_dir.name + ".partial")
    if staging.exists():
        shutil.rmtree(staging)
    staging.mkdir(parents=True)
    model.save_pretrained(staging, safe_serialization=True)
    if tokenizer is not None:
        tokenizer.save_pretrained(staging)
    info = dict(phase_info)
    loss = info.get("heldout_mlm_loss")
    if loss is not None and "heldout_perplexity" not in info:
        info["heldout_perplexity"] = math.exp(loss) if loss < 50 else float("inf")
    (staging / PHASE_FILE).write_text(json.dumps(info, indent=2, sort_keys=False) + "\n")
    (staging / "README.md").write_text(_render_card(staging))
    if release_dir.exists():
        shutil.rmtree(release_dir)
    staging.rename(release_dir)
    return release_dir


def load_phase_info(release_dir: str | os.PathLike) -> dict:
    path = Path(release_dir) / PHASE_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found: {release_dir} is not a BIOptimus release directory")
    return json.loads(path.read_text())


def _render_card(release_dir: Path) -> str:
    from .model_card import render_release_card

    return render_release_card(release_dir)

