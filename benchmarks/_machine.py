"""Which machine a benchmark ran on, and what kind of machine that is.

:func:`describe_machine` records the CPU (model name from ``/proc/cpuinfo``, the ISA flags that decide matmul speed,
the cores the run may use and the torch threads it uses), the GPU (name, compute capability, memory), the torch and
transformers versions, and the git commit of the checkout (with whether tracked files differ from it).

Its ``fingerprint`` is a short hash of the *hardware* fields only (CPU model, the CPU's family/model/stepping, those
ISA flags, cores available, GPU names and capabilities): two runs with the same fingerprint ran on the same kind of
machine with the same cores; versions and commit are recorded but do not change it (a torch upgrade on one machine
is still that machine). The family/model/stepping is there because a VM's model name and flags do not tell CPU
generations apart: two 2-core "AMD EPYC" VMs with the same flags measured bf16 matmul peaks of ~0.41 and ~0.91
TFLOP/s; the second reports family 26 (Zen 5). Descriptions without the field keep the fingerprint they had.

:func:`machine_kind` names the kind of machine from the same hardware fields (``gpu-h100``,
``cpu-zen5-avx512bf16``, ``cpu-avx2``): the folder of ``benchmarks/results/`` its results live in
(``benchmarks/_results.py``).
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import subprocess
from pathlib import Path

import torch


ROOT = Path(__file__).resolve().parents[1]
# The ISA flags that decide a CPU's matmul speed per precision (AVX2 / AVX-512 float32, native bf16, int8).
ISA_FLAGS = ("avx2", "avx512f", "avx512_bf16", "amx_bf16", "amx_tile", "avx512_vnni")
# The fields of describe_machine() that identify the hardware (the fingerprint's input).
HARDWARE_FIELDS = ("cpu_model", "cpu_signature", "cpu_isa_flags", "cpus_available", "gpus")
# Environment variables that change which kernels run (an AVX2 stand-in on an AVX-512 CPU, bf16 switched off, the
# thread count): recorded with every result, the ones set, since they change the numbers on the same hardware.
KERNEL_ENVIRONMENT = (
    "ATEN_CPU_CAPABILITY",
    "ONEDNN_MAX_CPU_ISA",
    "DNNL_MAX_CPU_ISA",
    "MKL_ENABLE_INSTRUCTIONS",
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "BIOPTIMUS_DISABLE_BF16",
    "BIOPTIMUS_FORCE_BF16",
    "MALLOC_MMAP_THRESHOLD_",
    "MALLOC_TRIM_THRESHOLD_",
    "MALLOC_MMAP_MAX_",
    "LD_PRELOAD",
)


def cpu_model_name(cpuinfo_path: str = "/proc/cpuinfo") -> str | None:
    """The first ``model name`` in /proc/cpuinfo (None where there is none, e.g. not Linux)."""
    from bioptimus_hf.utils.hardware import cpuinfo_field

    return cpuinfo_field("model name", cpuinfo_path) or None


def cpu_signature(cpuinfo_path: str = "/proc/cpuinfo") -> dict | None:
    """The CPU's vendor, family, model and stepping from /proc/cpuinfo (x86); None where it has none of them."""
    from bioptimus_hf.utils.hardware import cpuinfo_field

    fields = {"vendor": "vendor_id", "family": "cpu family", "model": "model", "stepping": "stepping"}
    signature = {key: cpuinfo_field(name, cpuinfo_path) for key, name in fields.items()}
    if not any(value for key, value in signature.items() if key != "vendor"):
        return None
    return {key: int(value) if value and value.isdigit() else value for key, value in signature.items()}


def cpus_available() -> int:
    """The cores this process may run on (taskset/cgroups affinity), not the machine's count."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def run_torch_threads() -> int:
    """The torch intra-op threads a CPU benchmark run uses: one per available core (no oversubscription), or
    ``OMP_NUM_THREADS`` where it is set lower (a run sharing the machine with other work)."""
    threads = max(1, cpus_available())
    requested = os.environ.get("OMP_NUM_THREADS", "")
    return min(threads, int(requested)) if requested.isdigit() and int(requested) > 0 else threads


def git_state(root: Path = ROOT) -> dict:
    """Commit of the checkout the benchmark scripts came from and whether tracked files differ from it."""
    try:
        commit = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, check=True, timeout=20
        ).stdout.strip()
        status = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        ).stdout
    except (OSError, subprocess.SubprocessError) as error:
        return {"commit": None, "dirty": None, "why_unknown": f"{type(error).__name__}: no git checkout at {root}"}
    return {"commit": commit, "dirty": bool(status.strip()), "changed_tracked_files": len(status.splitlines())}


def _gpus() -> list[dict]:
    if not torch.cuda.is_available():
        return []
    gpus = []
    for index in range(torch.cuda.device_count()):
        properties = torch.cuda.get_device_properties(index)
        gpus.append(
            {
                "name": properties.name,
                "capability": f"{properties.major}.{properties.minor}",
                "memory_gib": round(properties.total_memory / 2**30, 1),
            }
        )
    return gpus


def fingerprint_of(machine: dict) -> str:
    """Short hash of the hardware fields of a :func:`describe_machine` result."""
    hardware = {key: machine.get(key) for key in HARDWARE_FIELDS}
    if hardware["cpu_signature"] is None:  # recorded before the field existed, or not x86: the fingerprint it had
        del hardware["cpu_signature"]
    hardware["gpus"] = [{k: gpu[k] for k in ("name", "capability")} for gpu in hardware["gpus"] or []]
    return hashlib.sha256(json.dumps(hardware, sort_keys=True).encode()).hexdigest()[:12]


def describe_machine(cpuinfo_path: str = "/proc/cpuinfo", torch_threads: int | None = None) -> dict:
    """The machine a run is on (see the module docstring), with its ``fingerprint``, ``kind`` and ``label``."""
    import transformers

    from bioptimus_hf.utils.hardware import FAST_BF16_CPU_FLAGS, bf16_disabled_by_environment, cpu_flags

    flags = cpu_flags(cpuinfo_path)
    gpus = _gpus()
    machine = {
        "cpu_model": cpu_model_name(cpuinfo_path) or platform.processor() or None,
        "cpu_signature": cpu_signature(cpuinfo_path),
        "cpu_isa_flags": {flag: flag in flags for flag in ISA_FLAGS},
        "cpu_native_bf16": any(flag in flags for flag in FAST_BF16_CPU_FLAGS) and not bf16_disabled_by_environment(),
        "torch_cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "kernel_environment": {name: os.environ[name] for name in KERNEL_ENVIRONMENT if name in os.environ},
        "logical_cpus": os.cpu_count(),
        "cpus_available": cpus_available(),
        # what a run uses: the worker sets run_torch_threads() on a CPU; on a GPU it keeps torch's default
        "torch_threads": torch_threads
        if torch_threads is not None
        else torch.get_num_threads()
        if gpus
        else run_torch_threads(),
        "gpus": gpus,
        "cuda": torch.version.cuda if gpus else None,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "git": git_state(),
        "load_average": os.getloadavg() if hasattr(os, "getloadavg") else None,  # other jobs, when recorded
    }
    machine["fingerprint"] = fingerprint_of(machine)
    cores = f"{machine['cpus_available']} of {machine['logical_cpus']} CPUs"
    signature = machine["cpu_signature"]
    generation = f", family {signature['family']} model {signature['model']}" if signature else ""
    machine["label"] = f"{machine['cpu_model']} ({cores}{generation})" + "".join(f" + {gpu['name']}" for gpu in gpus)
    machine["kind"] = machine_kind(machine)
    return machine


# The CPU generations a results folder is named after, by (vendor, family) for AMD and (vendor, model) for Intel's
# family 6; a CPU outside them is named by its numbers. Zen 3 and Zen 4 share family 25: AVX-512 tells them apart.
AMD_GENERATIONS = {23: "zen2", 25: "zen3", 26: "zen5"}
INTEL_GENERATIONS = {85: "skylake", 106: "icelake", 143: "sapphirerapids", 207: "emeraldrapids", 173: "graniterapids"}


def _cpu_generation(signature: dict | None, flags: dict) -> str | None:
    if not signature:
        return None
    vendor, family, model = signature.get("vendor"), signature.get("family"), signature.get("model")
    if vendor == "AuthenticAMD":
        if family == 25 and flags.get("avx512f"):
            return "zen4"
        return AMD_GENERATIONS.get(family, f"amd-family{family}")
    if vendor == "GenuineIntel":
        if family == 6:
            return INTEL_GENERATIONS.get(model, f"intel-model{model}")
        return f"intel-family{family}"
    return None


def _cpu_isa(flags: dict) -> str:
    for flag, name in (("amx_bf16", "amx"), ("avx512_bf16", "avx512bf16"), ("avx512f", "avx512"), ("avx2", "avx2")):
        if flags.get(flag):
            return name
    return "x86-64"


def _gpu_name(name: str) -> str:
    """``NVIDIA H100 80GB HBM3`` -> ``h100``: the first word with a digit after the vendor."""
    words = [word for word in re.split(r"[\s_-]+", name.lower()) if word not in ("nvidia", "amd", "tesla", "geforce")]
    return next((word for word in words if re.search(r"\d", word)), "-".join(words) or "unknown")


def machine_kind(machine: dict) -> str:
    """The kind of machine a :func:`describe_machine` result is, from its hardware fields.

    A GPU machine is named by its GPUs (``gpu-h100``, ``gpu-h100-x8``); a CPU by its generation where
    ``cpu_signature`` tells it and by the fastest matmul ISA it has (``cpu-zen5-avx512bf16``, ``cpu-avx2``); a
    description without ISA flags is ``cpu-unrecorded``. A ``kind`` already in the description (set for results
    recorded before the hardware fields existed, with the reason in ``kind_note``) is taken as is.
    """
    if machine.get("kind"):
        return machine["kind"]
    gpus = machine.get("gpus") or []
    if gpus:
        names = sorted({_gpu_name(gpu["name"]) for gpu in gpus})
        return "gpu-" + "-".join(names) + (f"-x{len(gpus)}" if len(gpus) > 1 else "")
    flags = machine.get("cpu_isa_flags") or {}
    if not flags:
        return "cpu-unrecorded"
    generation = _cpu_generation(machine.get("cpu_signature"), flags)
    return "-".join(part for part in ("cpu", generation, _cpu_isa(flags)) if part)
