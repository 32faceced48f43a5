"""Model cards for releases (minimal renderer; the Hub-publishing work extends it)."""

from __future__ import annotations

import json
from pathlib import Path


def render_release_card(release_dir, ner_results=None) -> str:
    info = json.loads((Path(release_dir) / "bioptimus_phase.json").read_text())
    version = info.get("version", "?")
    rows = []
    for phase in info.get("curriculum", []):
        mark = " **(this release)**" if phase.get("version") == version else ""
        rows.append(
            f"| {phase.get('version')}{mark} | {phase.get('masking_unit')} | {phase.get('masking_rate')} | "
            f"{'80/10/10' if phase.get('corruption') else 'all [MASK]'} | {phase.get('steps')} |"
        )
    loss = info.get("heldout_mlm_loss")
    return (
        "---\nlanguage: en\nlicense: apache-2.0\ntags:\n- biomedical\n- fill-mask\n- bioptimus\n---\n\n"
        f"# BIOptimus {version}\n\n"
        "| version | masking unit | rate | corruption | steps |\n|---|---|---|---|---|\n"
        + "\n".join(rows)
        + f"\n\nHeld-out MLM loss: {loss if loss is not None else 'not measured'}\n"
    )
