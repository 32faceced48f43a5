"""How close a computed tensor must be to its reference: the suite's one owner of numerical tolerances. A test states
what was computed and gets a normwise bound (Higham & Mary's probabilistic bound, times the scale measured on the
float64 reference: :func:`linear_output_scale`); tests/README.md ("How numbers are compared") gives the model."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator

import torch
from torch import nn


# Higham & Mary's confidence parameter (see the module docstring).
CONFIDENCE = 4.0
# What CPUs (oneDNN, MKL) and GPUs (cuBLAS) accumulate float32 and bf16 matrix products in.
ACCUMULATION_DTYPE = torch.float32


def unit_roundoff(dtype: torch.dtype) -> float:
    """Half the machine epsilon: the largest relative error of rounding one real number to ``dtype``."""
    return torch.finfo(dtype).eps / 2


def relative_tolerance(dtype: torch.dtype, reduction_length: int, depth: int = 1) -> float:
    """Normwise relative error bound for ``depth`` chained matrix-product stages whose inputs are in
    ``dtype`` and whose longest reduction sums ``reduction_length`` terms (see the module docstring)."""
    if reduction_length < 1 or depth < 1:
        raise ValueError(f"reduction_length and depth must be at least 1, got {reduction_length} and {depth}")
    stage = math.sqrt(3) * unit_roundoff(dtype) + math.sqrt(reduction_length) * unit_roundoff(ACCUMULATION_DTYPE)
    return CONFIDENCE * math.sqrt(depth) * stage


def transformer_depth(num_hidden_layers: int) -> int:
    """Chained matrix products in a BERT-style encoder: per layer the longest chain is query/key
    projection, scores, attention-weighted values, output projection, two feed-forward products (6)."""
    return 6 * num_hidden_layers


def encoder_tolerance(config, dtype: torch.dtype, extra_depth: int = 0, contribution_scale: float = 1.0) -> float:
    """:func:`relative_tolerance` for the last hidden states of a transformer encoder with ``config`` (plus
    ``extra_depth`` matrix products after it, e.g. an MLM head), times ``contribution_scale`` (see
    :func:`linear_output_scale`; 1 is always valid, only looser). The longest reduction is the feed-forward
    output's (intermediate size) or the hidden size, whichever is larger (attention's are shorter in the tests)."""
    depth = transformer_depth(config.num_hidden_layers) + extra_depth
    reduction = max(int(getattr(config, "intermediate_size", 0) or 0), int(config.hidden_size))
    return contribution_scale * relative_tolerance(dtype, reduction, depth)


@contextlib.contextmanager
def recorded_linear_outputs(model: nn.Module) -> Iterator[list[float]]:
    """Within the block, the root-mean-square output of every ``nn.Linear`` call of ``model`` is appended
    to the yielded list."""
    sizes: list[float] = []

    def record(module, inputs, output):
        sizes.append(output.detach().double().pow(2).mean().sqrt().item())

    handles = [m.register_forward_hook(record) for m in model.modules() if isinstance(m, nn.Linear)]
    try:
        yield sizes
    finally:
        for handle in handles:
            handle.remove()


def linear_output_scale(linear_output_rms: list[float], compared: torch.Tensor) -> float:
    """The contribution scale: the largest linear-layer output (root mean square, from
    :func:`recorded_linear_outputs` on the float64 reference forward) over the root mean square of the
    compared values. At least ``2**-10``, so that a degenerate reference cannot make the bound vanish."""
    if not linear_output_rms:
        raise ValueError("no linear layer ran: record the reference forward inside recorded_linear_outputs(model)")
    compared_rms = compared.detach().double().pow(2).mean().sqrt().item()
    if compared_rms == 0.0:
        return 1.0
    return max(max(linear_output_rms) / compared_rms, 2.0**-10)


def normwise_relative_error(actual: torch.Tensor, expected: torch.Tensor) -> float:
    """``||actual - expected|| / ||expected||`` in float64 (0 when both are zero)."""
    actual, expected = actual.detach().double().cpu(), expected.detach().double().cpu()
    if actual.shape != expected.shape:
        raise ValueError(f"shapes differ: {tuple(actual.shape)} vs {tuple(expected.shape)}")
    scale = expected.norm().item()
    difference = (actual - expected).norm().item()
    if scale == 0.0:
        return 0.0 if difference == 0.0 else math.inf
    return difference / scale


def assert_close_normwise(
    actual: torch.Tensor, expected: torch.Tensor, tolerance: float, what: str = "values"
) -> float:
    """Fail, naming ``what``, the error and the bound, when the normwise relative error exceeds
    ``tolerance``; return the error (tests may also check it is not suspiciously zero)."""
    error = normwise_relative_error(actual, expected)
    if not error <= tolerance:
        raise AssertionError(f"{what}: normwise relative error {error:.3e} exceeds the bound {tolerance:.3e}")
    return error
