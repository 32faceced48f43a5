"""Tiny release directories written through the release record (:mod:`bioptimus_hf.releases.record`), for tests."""

from __future__ import annotations

from pathlib import Path

import torch
from transformers import BertConfig, BertForMaskedLM, BertTokenizer

from bioptimus_hf.releases.record import ReleaseInfo, RunFacts


TINY_CURRICULUM = [
    {"version": "0.1", "masking_unit": "token", "masking_rate": 0.15, "corruption": True, "steps": 4},
    {"version": "0.2", "masking_unit": "word", "masking_rate": 0.15, "corruption": True, "steps": 4},
    {"version": "0.3", "masking_unit": "word", "masking_rate": 0.25, "corruption": True, "steps": 4},
    {"version": "0.4", "masking_unit": "word", "masking_rate": 0.25, "corruption": False, "steps": 4},
]
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + "the protein gene cell binds to a of and in".split()


def tiny_run_args(**overrides) -> dict:
    """RunFacts fields of a typical run (16 sequences per device, accumulation 2, one process)."""
    run = {
        "base_model": "bert-base-uncased",
        "base_model_hub_id": "bert-base-uncased",
        "init_strategy": "contextualized",
        "tokenizer": "biomed-wordpiece",
        "learning_rate": 1e-4,
        "lr_scheduler_type": "linear",
        "warmup_ratio": 0.06,
        "warmup_steps": 1,
        "weight_decay": 0.01,
        "per_device_train_batch_size": 16,
        "gradient_accumulation_steps": 2,
        "world_size": 1,
        "max_seq_length": 128,
        "max_steps": 16,
        "seed": 42,
        "train_files": ["pubmed_sentences.txt"],
    }
    return run | overrides


def make_release(
    release_dir: Path, phase_index: int, seed: int = 0, run: dict | None = None, heldout: bool = True
) -> Path:
    """Write one release: tiny random BertForMaskedLM, tokenizer and bioptimus_phase.json (no README)."""
    release_dir = Path(release_dir)
    release_dir.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(seed + phase_index)
    sizes = dict(hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32)
    BertForMaskedLM(BertConfig(vocab_size=len(VOCAB), max_position_embeddings=32, **sizes)).save_pretrained(
        release_dir
    )
    BertTokenizer(vocab={token: i for i, token in enumerate(VOCAB)}).save_pretrained(release_dir)
    phase = TINY_CURRICULUM[phase_index]
    start = sum(p["steps"] for p in TINY_CURRICULUM[:phase_index])
    ReleaseInfo(
        **phase,
        phase_index=phase_index,
        start_step=start,
        end_step=start + phase["steps"],
        global_step=start + phase["steps"],
        realised_masked_fraction=0.1501,
        heldout_mlm_loss=2.3125 - 0.1 * phase_index if heldout else None,
        heldout_perplexity=10.1 if heldout else None,
        curriculum=TINY_CURRICULUM,
        run=RunFacts.from_dict(run if run is not None else tiny_run_args()),
    ).save(release_dir)
    return release_dir


def make_run(output_dir: Path, n_versions: int = 4, with_cards: bool = True, seed: int = 0) -> Path:
    """``<output_dir>/releases/v0.k/`` for the first ``n_versions`` phases, with README.md as the callback writes it."""
    from bioptimus_hf.releases.card import render_release_card

    for k in range(n_versions):
        release = make_release(Path(output_dir) / "releases" / f"v{TINY_CURRICULUM[k]['version']}", k, seed=seed)
        if with_cards:
            (release / "README.md").write_text(render_release_card(release), encoding="utf-8")
    return Path(output_dir)
