"""FLOPs of a masked-LM pre-training step and the device's measured matmul peak: the one owner of the MFU formulas.

Shared by the pre-training benchmarks (``benchmarks/_pretraining_bench.py``); not a script, no timing claims.

**Useful FLOPs** of one batch of ``B`` sequences of ``s`` tokens (``T = B * s`` tokens) of which ``M`` positions are
labelled (``labels != -100``), for a model with ``L`` layers and hidden size ``h``::

    useful = T * (6 * N_encoder + 12 * L * s * h + R_token) + M * 6 * N_head + R_batch

* ``N_encoder``: weights of the ``nn.Linear`` modules of the base model (``model.base_model``: embedding
  projections such as ELECTRA's, Q/K/V/output, feed-forward, GLU inputs). Each multiplies every token once
  forward (2 FLOPs per weight) and twice backward (gradient of the input and of the weight): 6 FLOPs per weight
  per token. Embedding lookups, position/type embeddings, LayerNorms and biases are not matmuls: not counted.
* ``12 * L * s * h``: attention scores ``Q K^T`` and values ``P V``, ``2 * s * h`` FLOPs each per token forward,
  twice that backward, with the batch's real sequence length ``s``. Masked (ModernBERT's local layers) and
  unmasked scores are both counted: SDPA computes them all.
* ``N_head``: weights of the ``nn.Linear`` modules of the MLM head (the transform's dense layer and the decoder
  projection onto the vocabulary), run on the ``M`` labelled positions only: that is all the loss needs, so a
  head that runs on every position does ``(T - M) * 6 * N_head`` FLOPs of no use.
* DeBERTa-v2 with relative attention (disentangled attention, ``span`` = ``position_buckets`` or
  ``max_relative_positions``): per token and layer ``12 * span * h`` for each of the content-to-position and
  position-to-content score products (``R_token``); per batch and layer ``12 * span * h * h`` for each
  projection of the ``2 * span`` relative embeddings (``R_batch``; both Q and K when ``share_att_key``, else one
  per attention type). Zero for every other model.

**Nominal FLOPs**: the same count with the head on every position (``M = T``): what a step computes with the
standard head, the same for every recipe. (Before issue 31 the benchmark's "model FLOPs" were ``6 *`` all
parameters, so embeddings, LayerNorms and biases counted as matmuls; that differs from the nominal count here by
under 1 % for BERT-base.) ``useful == nominal`` when every position is labelled, ``useful < nominal`` otherwise.

**MFU** = FLOPs per second / the device's measured peak in the arm's precision (bf16 arms against the bf16 peak,
tf32 against tf32, float32 against float32). The peak is measured, not taken from a data sheet:
:func:`measure_matmul_peak` times a square ``n x n`` matmul in that precision (``n`` = 2048 on a CPU, 8192 on a
GPU), ``warmup`` runs excluded, the *fastest* of ``repeats`` (a peak is the best rate the device showed; under a
shared machine's noise a median understates it and so flatters the MFU), ``2 n^3`` FLOPs each, with the torch
threads the runs use.
A CPU's bf16 peak is measured only where it multiplies bf16 natively
(:func:`bioptimus_hf.utils.hardware.cpu_has_fast_bf16`); elsewhere bf16 arms have no MFU.

The formulas are checked against ``torch.utils.flop_counter.FlopCounterMode`` for every architecture the
benchmark builds (tests/test_benchmark_mfu.py).
"""

from __future__ import annotations

import statistics
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass

import torch
from torch import nn


PRECISIONS = ("bf16", "tf32", "float32")
DEFAULT_PEAK_MATMUL_SIZE = {"cpu": 2048, "cuda": 8192}
DEFAULT_PEAK_REPEATS = 7
DEFAULT_PEAK_WARMUP = 2
# DeBERTa-v2's relative-position projections when share_att_key is false: applied to the relative embeddings
# once per batch, not to tokens, so they are counted in R_batch and kept out of N_encoder.
_RELATIVE_POSITION_PROJECTIONS = ("pos_key_proj", "pos_query_proj")


def arm_precision(options) -> str:
    """The matmul precision of an arm with these options: bf16 autocast wins over tf32, else float32."""
    return "bf16" if "bf16" in options else "tf32" if "tf32" in options else "float32"


# ----------------------------------------------------------------------------------------------- FLOPs
def base_model_of(model: nn.Module) -> nn.Module:
    """The encoder: ``model.base_model`` (transformers' ``base_model_prefix`` attribute)."""
    base = getattr(model, "base_model", model)
    if base is model:
        raise ValueError(
            f"{type(model).__name__}: no base model (base_model_prefix) to tell the encoder from the head"
        )
    return base


def mlm_head_modules(model: nn.Module) -> dict[str, nn.Module]:
    """The MLM head: the model's direct children other than the base model that hold parameters.

    Generic over the masked LMs of transformers: BERT/DeBERTa-v2 ``cls``, RoBERTa ``lm_head``, DistilBERT
    ``vocab_transform`` + ``vocab_layer_norm`` + ``vocab_projector``, ELECTRA ``generator_predictions`` +
    ``generator_lm_head``, ModernBERT ``head`` + ``decoder``. The decoder (``get_output_embeddings()``) must be one
    of them or inside one, else the split is not understood and this raises.
    """
    base = base_model_of(model)
    heads = {
        name: child
        for name, child in model.named_children()
        if child is not base and any(True for _ in child.parameters())
    }
    decoder = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    if decoder is None or not any(decoder is module for head in heads.values() for module in head.modules()):
        raise ValueError(
            f"{type(model).__name__}: the output embeddings (decoder) are not in the modules beside the base model "
            f"({sorted(heads)}): cannot tell its MLM head apart"
        )
    return heads


def _linear_weights(module: nn.Module, skip_names=()) -> int:
    return sum(
        m.in_features * m.out_features
        for name, m in module.named_modules()
        if isinstance(m, nn.Linear) and name.rsplit(".", 1)[-1] not in skip_names
    )


@dataclass(frozen=True)
class MaskedLMFlops:
    """What a masked LM's step must compute, from its modules and config (see the module docstring)."""

    model_type: str
    num_layers: int
    hidden_size: int
    encoder_matmul_parameters: int
    head_matmul_parameters: int
    head_modules: tuple[str, ...]
    relative_attention_span: int = 0  # DeBERTa-v2 relative attention only
    relative_attention_score_products: int = 0  # c2p, p2c
    relative_position_projections: int = 0  # projections of the relative embeddings per layer

    @classmethod
    def of(cls, model: nn.Module) -> "MaskedLMFlops":
        config = model.config
        heads = mlm_head_modules(model)
        span = products = projections = 0
        if getattr(config, "relative_attention", False):  # DeBERTa(-v2) disentangled attention
            types = [t for t in (config.pos_att_type or []) if t in ("c2p", "p2c")]
            buckets = getattr(config, "position_buckets", -1)
            max_relative = getattr(config, "max_relative_positions", -1)
            span = buckets if buckets > 0 else max_relative if max_relative >= 1 else config.max_position_embeddings
            products = len(types)
            projections = 2 if getattr(config, "share_att_key", False) else len(types)
        return cls(
            model_type=config.model_type,
            num_layers=config.num_hidden_layers,
            hidden_size=config.hidden_size,
            encoder_matmul_parameters=_linear_weights(base_model_of(model), skip_names=_RELATIVE_POSITION_PROJECTIONS),
            head_matmul_parameters=sum(_linear_weights(head) for head in heads.values()),
            head_modules=tuple(heads),
            relative_attention_span=span,
            relative_attention_score_products=products,
            relative_position_projections=projections,
        )

    def attention_flops_per_token(self, seq_len: int) -> float:
        relative = 12.0 * self.relative_attention_score_products * self.relative_attention_span * self.hidden_size
        return self.num_layers * (12.0 * seq_len * self.hidden_size + relative)

    def encoder_flops_per_token(self, seq_len: int) -> float:
        return 6.0 * self.encoder_matmul_parameters + self.attention_flops_per_token(seq_len)

    def head_flops_per_position(self) -> float:
        return 6.0 * self.head_matmul_parameters

    def flops_per_batch_fixed(self) -> float:
        """FLOPs per forward+backward that do not scale with tokens (DeBERTa's relative-embedding projections)."""
        rows = 2 * self.relative_attention_span
        return 6.0 * self.num_layers * self.relative_position_projections * rows * self.hidden_size**2

    def useful_flops(self, sequences: int, seq_len: int, labelled: int) -> float:
        """FLOPs one batch must compute: encoder on every token, head on the ``labelled`` positions."""
        tokens = sequences * seq_len
        return (
            tokens * self.encoder_flops_per_token(seq_len)
            + labelled * self.head_flops_per_position()
            + self.flops_per_batch_fixed()
        )

    def nominal_flops(self, sequences: int, seq_len: int) -> float:
        """FLOPs of one batch with the head on every position (the standard head's work)."""
        return self.useful_flops(sequences, seq_len, labelled=sequences * seq_len)

    def describe(self) -> dict:
        return asdict(self)


@dataclass
class BatchCount:
    """What one timed batch held: sequences, their length, labelled positions."""

    sequences: int
    seq_len: int
    labelled: int


def step_flops(flops: MaskedLMFlops, batches: list[BatchCount]) -> dict:
    """Useful and nominal FLOPs of these batches, with their token and labelled-position totals."""
    tokens = sum(b.sequences * b.seq_len for b in batches)
    labelled = sum(b.labelled for b in batches)
    useful = sum(flops.useful_flops(b.sequences, b.seq_len, b.labelled) for b in batches)
    nominal = sum(flops.nominal_flops(b.sequences, b.seq_len) for b in batches)
    return {
        "tokens": tokens,
        "labelled_positions": labelled,
        "labelled_fraction": labelled / tokens if tokens else None,
        "useful_flops": useful,
        "nominal_flops": nominal,
        "useful_flops_per_token": useful / tokens if tokens else None,
        "nominal_flops_per_token": nominal / tokens if tokens else None,
    }


def utilisation(flops: dict, seconds: float, peak: dict | None) -> dict:
    """TFLOP/s (useful and nominal) over ``seconds`` and their share of ``peak["tflops"]`` (None without a peak)."""
    useful = flops["useful_flops"] / seconds / 1e12 if seconds > 0 else None
    nominal = flops["nominal_flops"] / seconds / 1e12 if seconds > 0 else None
    peak_tflops = (peak or {}).get("tflops")
    return {
        "useful_tflops": useful,
        "nominal_model_tflops": nominal,
        "useful_mfu": useful / peak_tflops if useful and peak_tflops else None,
        "nominal_mfu": nominal / peak_tflops if nominal and peak_tflops else None,
    }


# ----------------------------------------------------------------------------------------------- peak
@contextmanager
def _matmul_precision(precision: str, device_type: str):
    """float32 matmuls exactly (no tf32 / bf16 shortcuts) unless ``precision == "tf32"`` on CUDA."""
    before = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("high" if precision == "tf32" and device_type == "cuda" else "highest")
    try:
        yield
    finally:
        torch.set_float32_matmul_precision(before)


def device_peak_precisions(device_type: str) -> dict[str, str | None]:
    """Precisions whose peak a device's runs are measured against: name -> None (measure) or why not."""
    if device_type == "cuda":
        return {"bf16": None, "tf32": None, "float32": None}
    from bioptimus_hf.utils.hardware import cpu_has_fast_bf16

    bf16 = (
        None
        if cpu_has_fast_bf16()
        else (
            "no native bf16 on this CPU (no amx_bf16/avx512_bf16, or BIOPTIMUS_DISABLE_BF16 set): emulated, not a peak"
        )
    )
    return {"bf16": bf16, "tf32": "tf32 is a CUDA mode", "float32": None}


def measure_matmul_peak(
    precision: str,
    device: str = "cpu",
    size: int | None = None,
    repeats: int = DEFAULT_PEAK_REPEATS,
    warmup: int = DEFAULT_PEAK_WARMUP,
    threads: int | None = None,
) -> dict:
    """Dense ``size x size`` matmul TFLOP/s in ``precision`` on ``device``: the fastest of ``repeats`` after ``warmup``
    (the median is recorded too)."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision {precision!r}: expected one of {PRECISIONS}")
    device = torch.device(device)
    if precision == "tf32" and device.type != "cuda":
        raise ValueError("tf32 is a CUDA matmul mode")
    size = size or DEFAULT_PEAK_MATMUL_SIZE.get(device.type, 2048)
    dtype = torch.bfloat16 if precision == "bf16" else torch.float32
    threads_before = torch.get_num_threads()
    if threads and device.type == "cpu":
        torch.set_num_threads(threads)
    try:
        with torch.no_grad(), _matmul_precision(precision, device.type):
            generator = torch.Generator(device="cpu").manual_seed(0)
            a = torch.randn(size, size, generator=generator).to(device=device, dtype=dtype)
            b = torch.randn(size, size, generator=generator).to(device=device, dtype=dtype)
            out = torch.empty(size, size, device=device, dtype=dtype)
            seconds = []
            for i in range(warmup + repeats):
                if device.type == "cuda":
                    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                    start.record()
                    torch.mm(a, b, out=out)
                    end.record()
                    torch.cuda.synchronize()
                    elapsed = start.elapsed_time(end) / 1e3
                else:
                    began = time.perf_counter()
                    torch.mm(a, b, out=out)
                    elapsed = time.perf_counter() - began
                if i >= warmup:
                    seconds.append(elapsed)
            threads_used = torch.get_num_threads()
    finally:
        torch.set_num_threads(threads_before)
    median = statistics.median(seconds)
    dtype_name = str(dtype).removeprefix("torch.")
    return {
        "precision": precision,
        "dtype": dtype_name,
        "tflops": 2.0 * size**3 / min(seconds) / 1e12,
        "median_tflops": 2.0 * size**3 / median / 1e12,
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
        "method": f"torch.mm of two {size}x{size} {dtype_name} matrices, {warmup} warm-up runs excluded, "
        f"fastest of {repeats} timed runs, 2*n^3 FLOPs each" + (", tf32 allowed" if precision == "tf32" else ""),
        "size": size,
        "warmup": warmup,
        "repeats": repeats,
        "seconds": seconds,
        "median_seconds": median,
        "torch_threads": threads_used if device.type == "cpu" else None,
    }


def measure_device_peaks(
    device: str = "cpu",
    size: int | None = None,
    repeats: int = DEFAULT_PEAK_REPEATS,
    warmup: int = DEFAULT_PEAK_WARMUP,
    threads: int | None = None,
) -> dict[str, dict]:
    """Every precision's measured peak on ``device`` (or ``{"skipped": why}``), measured once per benchmark run."""
    peaks = {}
    for precision, why_not in device_peak_precisions(torch.device(device).type).items():
        peaks[precision] = (
            {"precision": precision, "tflops": None, "skipped": why_not}
            if why_not
            else measure_matmul_peak(precision, device, size=size, repeats=repeats, warmup=warmup, threads=threads)
        )
    return peaks


def peak_for_arm(precision: str, measured: dict[str, dict] | None, override_tflops: float | None) -> dict:
    """The peak an arm of this precision is compared with: ``--peak_tflops`` if given, else the measured one."""
    if override_tflops is not None:
        return {"precision": precision, "tflops": override_tflops, "source": "--peak_tflops"}
    record = (measured or {}).get(precision) or {"precision": precision, "tflops": None, "skipped": "not measured"}
    return dict(record, source="measured" if record.get("tflops") else None)
