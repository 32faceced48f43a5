"""Does this device compute in bfloat16 natively? (Detected, never required.)

bf16 halves memory traffic and, on CPUs with AMX or AVX512-BF16 and on Ampere+ GPUs, runs matrix
products in hardware. Elsewhere torch still accepts bf16 but emulates it (slower than float32), so
callers use ``bf16_supported`` to choose bf16 only where it pays and fall back to float32 otherwise.
"""

from __future__ import annotations

import functools

import torch

CPU_BF16_FLAGS = ("amx_bf16", "avx512_bf16")


@functools.lru_cache(maxsize=None)
def _cpu_flags() -> frozenset:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("flags"):
                    return frozenset(line.split(":", 1)[1].split())
    except OSError:  # not Linux: rely on torch's own check
        pass
    return frozenset()


def _torch_cpu_bf16() -> bool:
    """torch's own CPU check (private helpers of torch.cpu; absent in some versions)."""
    checks = ("_is_avx512_bf16_supported", "_is_amx_tile_supported")
    return any(getattr(torch.cpu, name, lambda: False)() for name in checks)


def bf16_supported(device: str | torch.device = "cpu") -> bool:
    """True if ``device`` has native bf16 matrix units (CPU: AMX or AVX512-BF16; CUDA: Ampere or newer)."""
    device = torch.device(device)
    if device.type == "cuda":
        return torch.cuda.is_available() and torch.cuda.is_bf16_supported()
    if device.type != "cpu":
        return False
    return any(flag in _cpu_flags() for flag in CPU_BF16_FLAGS) or _torch_cpu_bf16()
