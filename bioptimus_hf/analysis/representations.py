"""What a model makes of each token: its input embedding row, and its contextual representation (the last
layer's state at the token, averaged over the token's occurrences in a sample of corpus sentences)."""

from __future__ import annotations

from typing import Sequence

import torch
from tqdm.auto import tqdm


def input_embeddings(model) -> torch.Tensor:
    return model.get_input_embeddings().weight.detach().float().cpu()


@torch.no_grad()
def contextual_token_vectors(
    model, tokenizer, sentences: Sequence[str], batch_size: int = 32, max_length: int = 128, progress: bool = False
) -> tuple[torch.Tensor, torch.Tensor]:
    """(mean last-layer state per token id, occurrences per token id) over ``sentences``; ids that never occur
    have a zero row and count 0. Special tokens are not counted."""
    model.eval()
    hidden = model.config.hidden_size
    sums = torch.zeros(len(tokenizer), hidden, dtype=torch.float64)
    counts = torch.zeros(len(tokenizer), dtype=torch.long)
    special = torch.tensor(sorted(set(tokenizer.all_special_ids)))
    starts = range(0, len(sentences), batch_size)
    for start in tqdm(starts, desc="contextual vectors", disable=not progress):
        encoded = tokenizer(
            list(sentences[start : start + batch_size]),
            truncation=True,
            max_length=max_length,
            padding=True,
            return_tensors="pt",
        )
        output = model(
            input_ids=encoded["input_ids"], attention_mask=encoded["attention_mask"], output_hidden_states=True
        )
        states = output.hidden_states[-1].double()
        keep = encoded["attention_mask"].bool() & ~torch.isin(encoded["input_ids"], special)
        ids = encoded["input_ids"][keep]
        sums.index_add_(0, ids, states[keep])
        counts.index_add_(0, ids, torch.ones_like(ids))
    means = sums / counts.clamp(min=1).unsqueeze(1)
    return means.float(), counts
