"""Inference speed of models on the same batches, measured alternately (so load on a shared machine hits all
models alike): encoder forward passes per second, as recorded on a student's card."""

from __future__ import annotations

import statistics
import time
from typing import Any, Iterable, Mapping

import torch
from torch import nn


@torch.inference_mode()
def measure_inference_speed(
    models: Mapping[str, nn.Module], batches: Iterable[Mapping[str, torch.Tensor]], rounds: int = 3
) -> dict[str, Any]:
    """Sequences per second of each model's encoder (``model.base_model``) over ``batches``: each round runs every
    model over all batches in turn (one warm-up round first), the median round counts. Returns
    ``{"<name>_sequences_per_s", "batch_size", "seq_length", "batches", "rounds", "device"}``, with a ``teacher``
    and a ``student`` also ``speedup`` (student over teacher)."""
    batches = [{k: v for k, v in b.items() if k in ("input_ids", "attention_mask")} for b in batches]
    if not batches or not models:
        return {}
    sequences = sum(int(b["input_ids"].shape[0]) for b in batches)
    timings: dict[str, list[float]] = {name: [] for name in models}
    modes = {name: model.training for name, model in models.items()}
    for model in models.values():
        model.eval()
    try:
        for round_index in range(rounds + 1):
            for name, model in models.items():
                device = next(model.parameters()).device
                encoder = model.base_model
                start = time.perf_counter()
                for batch in batches:
                    encoder(**{k: v.to(device) for k, v in batch.items()})
                if device.type == "cuda":
                    torch.cuda.synchronize(device)
                if round_index > 0:  # round 0 warms up
                    timings[name].append(time.perf_counter() - start)
    finally:
        for name, model in models.items():
            model.train(modes[name])
    result: dict[str, Any] = {
        "device": str(next(next(iter(models.values())).parameters()).device),
        "batch_size": int(batches[0]["input_ids"].shape[0]),
        "seq_length": int(batches[0]["input_ids"].shape[1]),
        "batches": len(batches),
        "rounds": rounds,
    }
    for name, seconds in timings.items():
        result[f"{name}_sequences_per_s"] = round(sequences / statistics.median(seconds), 2)
    if "teacher" in models and "student" in models:
        result["speedup"] = round(result["student_sequences_per_s"] / result["teacher_sequences_per_s"], 3)
    return result
