"""Held-out masked-LM loss on new and old tokens apart, for a study's analysis (:mod:`bioptimus_hf.study.analysis`):
with a new vocabulary a release's held-out loss averages targets the base vocabulary also has (rows copied) and new
ones (rows initialised, what the lexical warm-up is for). Per model: the arm's own held-out split, built as
pre-training builds it, tokenized with the model's tokenizer; one seeded masking for every model of every arm (the
paper's phase 0.1: tokens, 15 %, 80/10/10), so the numbers compare across phases and arms; the standard head's
cross-entropy (float32) over the new targets, the old ones and all. A token is new when its string is not in the
base tokenizer's vocabulary.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import torch

from ..pretraining.collator import CurriculumDataCollator
from ..pretraining.phases import BIOPTIMUS_CURRICULUM
from ..utils.tokenizer_loader import load_fast_tokenizer


IGNORE_INDEX = -100
# The masking of every measurement: the curriculum's first phase (tokens, 15 %, 80/10/10).
MEASURING_PHASE = BIOPTIMUS_CURRICULUM[0]


def new_token_mask(tokenizer, base_tokenizer) -> torch.Tensor:
    """``mask[id]`` is True where ``tokenizer``'s token ``id`` is not in ``base_tokenizer``'s vocabulary
    (by string); special tokens are False."""
    base_vocabulary = set(base_tokenizer.get_vocab())
    mask = torch.zeros(len(tokenizer), dtype=torch.bool)
    for token, index in tokenizer.get_vocab().items():
        if index < len(mask) and token not in base_vocabulary:
            mask[index] = True
    mask[[i for i in tokenizer.all_special_ids if i < len(mask)]] = False
    return mask


def loss_by_token_kind(model, batches, is_new: torch.Tensor) -> dict[str, dict[str, Any]]:
    """Mean cross-entropy over the masked positions of ``batches`` (dicts with ``input_ids``,
    ``attention_mask``, ``labels``), over the new-token targets, the old-token targets and all of them."""
    sums = {"new": 0.0, "old": 0.0}
    counts = {"new": 0, "old": 0}
    model.eval()
    with torch.no_grad():
        for batch in batches:
            labels = batch["labels"]
            logits = model(input_ids=batch["input_ids"], attention_mask=batch.get("attention_mask")).logits
            labelled = labels != IGNORE_INDEX
            targets = labels[labelled]
            losses = torch.nn.functional.cross_entropy(logits[labelled].float(), targets, reduction="none").double()
            new = is_new[targets]
            sums["new"] += float(losses[new].sum())
            sums["old"] += float(losses[~new].sum())
            counts["new"] += int(new.sum())
            counts["old"] += int((~new).sum())
    result = {
        kind: {"loss": sums[kind] / counts[kind] if counts[kind] else None, "positions": counts[kind]}
        for kind in ("new", "old")
    }
    total = counts["new"] + counts["old"]
    result["all"] = {"loss": (sums["new"] + sums["old"]) / total if total else None, "positions": total}
    for entry in result.values():
        entry["perplexity"] = math.exp(entry["loss"]) if entry["loss"] is not None and entry["loss"] < 50 else None
    return result


def heldout_loss_by_token_kind(
    model_dir: str | Path, base_tokenizer: str | Path, data_args, seed: int, batch_size: int = 32
) -> dict[str, Any]:
    """:func:`loss_by_token_kind` of the model in ``model_dir`` on its held-out split (see the module
    docstring); ``data_args`` are the arm's :class:`~bioptimus_hf.pretraining.bioptimus_config.PretrainingDataArguments`."""
    import tempfile

    from transformers import AutoModelForMaskedLM, TrainingArguments

    from ..pretraining.data import load_pretraining_datasets

    tokenizer = load_fast_tokenizer(str(model_dir))
    base = load_fast_tokenizer(str(base_tokenizer))
    with tempfile.TemporaryDirectory() as scratch:
        splits = load_pretraining_datasets(
            data_args, tokenizer, TrainingArguments(output_dir=scratch, seed=seed, report_to=[], use_cpu=True)
        )
    if splits.eval is None:
        raise ValueError(
            f"{model_dir}: the arm's data arguments hold no evaluation rows out "
            "(set validation_split_percentage or validation_file)"
        )
    collator = CurriculumDataCollator(tokenizer, phases=[MEASURING_PHASE], seed=seed)
    rows = [splits.eval[i] for i in range(len(splits.eval))]
    batches = [collator(rows[i : i + batch_size]) for i in range(0, len(rows), batch_size)]
    model = AutoModelForMaskedLM.from_pretrained(str(model_dir), dtype=torch.float32)
    result = loss_by_token_kind(model, batches, new_token_mask(tokenizer, base))
    result["rows"] = len(rows)
    result["masking"] = {
        "phase": MEASURING_PHASE.version,
        "unit": MEASURING_PHASE.masking_unit,
        "rate": MEASURING_PHASE.masking_rate,
        "seed": seed,
    }
    return result
