"""What the hardware does fast: the one owner of bf16 detection, of the ``auto|bf16|float32`` choice and of the report
of every visible GPU's memory (:func:`visible_gpus`). ``auto`` takes bf16 only where it is native (CUDA with bf16,
x86 with AMX or AVX-512 BF16; docs/speed.md). ``BIOPTIMUS_DISABLE_BF16=1`` / ``BIOPTIMUS_FORCE_BF16=1`` force the
answer; ``BIOPTIMUS_FAKE_GPUS=10/12,10/12`` (free/total GiB) makes :func:`visible_gpus` report those devices."""

from __future__ import annotations

import contextlib
import functools
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING


if TYPE_CHECKING:
    import torch


PRECISION_CHOICES = ("auto", "bf16", "float32")
DISABLE_BF16_ENV = "BIOPTIMUS_DISABLE_BF16"
FORCE_BF16_ENV = "BIOPTIMUS_FORCE_BF16"
FAST_BF16_CPU_FLAGS = ("amx_bf16", "avx512_bf16")
FAKE_GPUS_ENV = "BIOPTIMUS_FAKE_GPUS"


def _env_flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes")


def bf16_disabled_by_environment() -> bool:
    return _env_flag(DISABLE_BF16_ENV) and not bf16_forced_by_environment()


def bf16_forced_by_environment() -> bool:
    forced = _env_flag(FORCE_BF16_ENV)
    if forced and _env_flag(DISABLE_BF16_ENV):
        raise ValueError(f"{DISABLE_BF16_ENV} and {FORCE_BF16_ENV} are both set: unset one of them")
    return forced


def cpuinfo_field(name: str, cpuinfo_path: str = "/proc/cpuinfo") -> str | None:
    """The first value of ``name`` (``flags``, ``vendor_id``, ``model name``) in /proc/cpuinfo; None where the
    kernel reports none (no such file: not Linux; no such line: e.g. ``vendor_id`` on ARM)."""
    with contextlib.suppress(OSError), open(cpuinfo_path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            key, _, value = line.partition(":")
            if key.strip() == name:
                return value.strip()
    return None


@functools.lru_cache(maxsize=None)
def cpu_flags(cpuinfo_path: str = "/proc/cpuinfo") -> frozenset[str]:
    """The CPU feature flags the kernel reports (empty where /proc/cpuinfo does not exist)."""
    return frozenset((cpuinfo_field("flags", cpuinfo_path) or "").split())


def cpu_vendor(cpuinfo_path: str = "/proc/cpuinfo") -> str | None:
    """The CPU's ``vendor_id`` (``GenuineIntel``, ``AuthenticAMD``, ...); None where the kernel reports none."""
    return cpuinfo_field("vendor_id", cpuinfo_path) or None


def torch_draws_dropout_masks_in_bulk(cpuinfo_path: str = "/proc/cpuinfo") -> bool:
    """Whether torch's CPU dropout draws its masks with MKL's vectorised Bernoulli generator: on Intel CPUs, in
    builds with MKL; elsewhere it draws element by element and ``utils/bulk_dropout.py`` pays (docs/speed.md)."""
    import torch

    return torch.backends.mkl.is_available() and cpu_vendor(cpuinfo_path) == "GenuineIntel"


def cpu_has_fast_bf16() -> bool:
    """True when the CPU multiplies bf16 natively (AMX or AVX-512 BF16), or when forced by the environment."""
    if bf16_forced_by_environment() or bf16_disabled_by_environment():  # the environment decides
        return bf16_forced_by_environment()
    return any(flag in cpu_flags() for flag in FAST_BF16_CPU_FLAGS)


def device_has_fast_bf16(device) -> bool:
    """True when bf16 matmuls on ``device`` (a ``torch.device`` or string) are native, hence worth using."""
    import torch

    device = torch.device(device)
    if device.type == "cuda" and not (bf16_forced_by_environment() or bf16_disabled_by_environment()):
        return torch.cuda.is_available() and torch.cuda.is_bf16_supported()
    return cpu_has_fast_bf16() if device.type in ("cpu", "cuda") else bf16_forced_by_environment()


def default_device():
    """``cuda`` when a GPU is visible, else ``cpu``."""
    import torch

    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


@dataclass(frozen=True)
class GpuMemory:
    """One visible CUDA device's memory, now."""

    name: str  # how CUDA_VISIBLE_DEVICES names it for a child process (an index or a UUID)
    free_bytes: int
    total_bytes: int


def _visible_device_names(count: int) -> list[str]:
    """The names a child's ``CUDA_VISIBLE_DEVICES`` takes for this process's devices 0..count-1: this process's own
    ``CUDA_VISIBLE_DEVICES`` entries where it is set (device 0 is its first), else the indices."""
    names = [name.strip() for name in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if name.strip()]
    return names[:count] if len(names) >= count else [str(index) for index in range(count)]


def _fake_gpus(spec: str) -> list[GpuMemory]:
    gpus = []
    for name, entry in zip(_visible_device_names(len(spec.split(","))), spec.split(",")):
        free, _, total = entry.partition("/")
        try:
            gpus.append(GpuMemory(name, int(float(free) * 2**30), int(float(total or free) * 2**30)))
        except ValueError:
            raise ValueError(f"{FAKE_GPUS_ENV}={spec}: give free/total GiB per device, e.g. 10/12,10/12") from None
    return gpus


def visible_gpus() -> list[GpuMemory]:
    """Every CUDA device this process sees, with its free and total memory (``torch.cuda.mem_get_info``, which
    starts a CUDA context on each); none without CUDA. ``BIOPTIMUS_FAKE_GPUS`` fakes the report."""
    spec = os.environ.get(FAKE_GPUS_ENV, "").strip()
    if spec:
        return _fake_gpus(spec)
    import torch

    if not torch.cuda.is_available():
        return []
    count = torch.cuda.device_count()
    report = [torch.cuda.mem_get_info(index) for index in range(count)]
    return [GpuMemory(name, free, total) for name, (free, total) in zip(_visible_device_names(count), report)]


def batched_seeds_by_default(device=None) -> bool:
    """Whether a fine-tuning run trains its seeds as one batched model when ``--batched_seeds`` is unset: on a CUDA
    device, where one K-times larger step replaces K small ones; not on a CPU, where a tiny model gains 4-8 % of the
    wall time over the seeds one after another (benchmarks/results/cpu-emeraldrapids-avx512bf16/batched_seeds_loop.json),
    too little to give its runs other dropout masks than separate runs by default. ``device``: the run's
    (``TrainingArguments.device``); None: this machine's, ``cuda`` where :func:`visible_gpus` reports one."""
    if device is None:
        return bool(visible_gpus())
    return getattr(device, "type", str(device).split(":")[0]) == "cuda"


def resolve_batched_seeds(requested: bool | None, device=None) -> bool:
    """``--batched_seeds``: as asked, or unset (None) :func:`batched_seeds_by_default` on ``device``."""
    return bool(requested) if requested is not None else batched_seeds_by_default(device)


def resolve_precision(precision: str, device) -> "torch.dtype":
    """``auto`` -> bf16 where :func:`device_has_fast_bf16`, float32 otherwise; ``bf16``/``float32`` as asked (bf16 on
    any device: slow without hardware support, the way to measure its accuracy on a machine without it)."""
    import torch

    if precision not in PRECISION_CHOICES:
        raise ValueError(f"precision {precision!r}: expected one of {PRECISION_CHOICES}")
    if precision == "bf16" or (precision == "auto" and device_has_fast_bf16(device)):
        return torch.bfloat16
    return torch.float32


def describe_hardware() -> dict:
    """What a benchmark records about the machine's precision support."""
    import torch

    return {
        "cuda": torch.cuda.is_available(),
        "cuda_device": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
        "cpu_fast_bf16_flags": sorted(set(FAST_BF16_CPU_FLAGS) & cpu_flags()),
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "fast_bf16": device_has_fast_bf16(default_device()),
        "bf16_disabled_by_environment": bf16_disabled_by_environment(),
        "bf16_forced_by_environment": bf16_forced_by_environment(),
    }


_BF16_FALLBACK_SAID: set[str] = set()


def resolve_bf16(training_args, if_supported: bool, allow_emulated: bool):
    """``training_args`` with bf16 on (``--bf16`` or ``--bf16_if_supported``) where its device computes bf16
    natively; float32, with a warning, where bf16 would only be emulated (unless ``allow_emulated``). The warning is
    said once per process and device, by the main process: a run resolves the precision of every seed and task."""
    import dataclasses
    import logging

    wanted = training_args.bf16 or if_supported
    use = wanted and (allow_emulated or device_has_fast_bf16(training_args.device))
    device = str(training_args.device)
    if wanted and not use and device not in _BF16_FALLBACK_SAID and training_args.process_index == 0:
        _BF16_FALLBACK_SAID.add(device)
        why = "has no native bf16 (AMX/AVX512-BF16 or an Ampere+ GPU); running in float32"
        logging.getLogger(__name__).warning(
            "bf16: %s %s (--allow_emulated_bf16 true to use emulated bf16)", training_args.device, why
        )
    if use == training_args.bf16 and (use or not training_args.bf16_full_eval):
        return training_args
    # transformers refuses bf16 without a GPU unless --use_cpu says the CPU is meant
    use_cpu = training_args.use_cpu or (use and training_args.device.type == "cpu")
    return dataclasses.replace(
        training_args, bf16=use, bf16_full_eval=training_args.bf16_full_eval and use, use_cpu=use_cpu
    )


def pin_memory_where_useful(training_args) -> None:
    """``--dataloader_pin_memory`` off where no accelerator is there to pin for: it pins nothing there, and torch
    warns so at every data loader the Trainer builds (each evaluation, each seed: dozens of lines a run)."""
    import torch

    if training_args.dataloader_pin_memory and not torch.accelerator.is_available():
        training_args.dataloader_pin_memory = False


def trainer_precision_flags() -> list[str]:
    """``TrainingArguments`` flags for bf16 where it is native: ``--bf16 true`` (plus ``--use_cpu true`` on a
    CPU, which transformers requires with bf16 when no GPU is visible); none elsewhere."""
    device = default_device()
    if not device_has_fast_bf16(device):
        return []
    return ["--bf16", "true"] + (["--use_cpu", "true"] if device.type == "cpu" else [])


if __name__ == "__main__":  # scripts/demo.sh: python -m bioptimus_hf.utils.hardware
    print(" ".join(trainer_precision_flags()))
