"""Which machine a benchmark ran on, and keeping results of different machines apart.

:func:`describe_machine` records the CPU (model name from ``/proc/cpuinfo``, the ISA flags that decide matmul speed,
the cores the run may use and the torch threads it uses), the GPU (name, compute capability, memory), the torch and
transformers versions, and the git commit of the checkout (with whether tracked files differ from it).

Its ``fingerprint`` is a short hash of the *hardware* fields only (CPU model, the CPU's family/model/stepping, those
ISA flags, cores available, GPU names and capabilities): two runs with the same fingerprint ran on the same kind of
machine with the same cores; versions and commit are recorded but do not change it (a torch upgrade on one machine
is still that machine). The family/model/stepping is there because a VM's model name and flags do not tell CPU
generations apart: two 2-core "AMD EPYC" VMs with the same flags measured bf16 matmul peaks of ~410 and ~915
GFLOP/s (docs/speed.md, section 8); the second reports family 26 (Zen 5). Descriptions recorded before it have no
such field and keep their fingerprint.

Keeping results apart (:func:`file_section`): a results JSON holds named sections, each written whole by one
benchmark run. Each section records the ``machine`` it ran on and its ``machine_fingerprint``; the file's
``machines`` maps every fingerprint to its description. Overwriting a section that holds another machine's
results, or a section whose runs carry different fingerprints, is refused: a section is one machine's, and
summaries (medians, ratios) are only ever taken within a section. Sections written before issue 31 have no
fingerprint (the file's old top-level ``machine`` described the last of them) and may be overwritten.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
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
KERNEL_ENVIRONMENT = ("ATEN_CPU_CAPABILITY", "ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA", "MKL_ENABLE_INSTRUCTIONS",
                      "OMP_NUM_THREADS", "MKL_NUM_THREADS", "BIOPTIMUS_DISABLE_BF16", "BIOPTIMUS_FORCE_BF16",
                      "MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_MAX_", "LD_PRELOAD")


class MachineMismatchError(ValueError):
    """Results of different machines would be mixed in one section."""


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
    """The torch intra-op threads a CPU benchmark run uses: one per available core (no oversubscription)."""
    return max(1, cpus_available())


def git_state(root: Path = ROOT) -> dict:
    """Commit of the checkout the benchmark scripts came from and whether tracked files differ from it."""
    try:
        commit = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                                check=True, timeout=20).stdout.strip()
        status = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                                capture_output=True, text=True, check=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError) as error:
        return {"commit": None, "dirty": None, "why_unknown": f"{type(error).__name__}: no git checkout at {root}"}
    return {"commit": commit, "dirty": bool(status.strip()), "changed_tracked_files": len(status.splitlines())}


def _gpus() -> list[dict]:
    if not torch.cuda.is_available():
        return []
    gpus = []
    for index in range(torch.cuda.device_count()):
        properties = torch.cuda.get_device_properties(index)
        gpus.append({"name": properties.name, "capability": f"{properties.major}.{properties.minor}",
                     "memory_gib": round(properties.total_memory / 2**30, 1)})
    return gpus


def fingerprint_of(machine: dict) -> str:
    """Short hash of the hardware fields of a :func:`describe_machine` result."""
    hardware = {key: machine.get(key) for key in HARDWARE_FIELDS}
    if hardware["cpu_signature"] is None:  # recorded before the field existed, or not x86: the fingerprint it had
        del hardware["cpu_signature"]
    hardware["gpus"] = [{k: gpu[k] for k in ("name", "capability")} for gpu in hardware["gpus"] or []]
    return hashlib.sha256(json.dumps(hardware, sort_keys=True).encode()).hexdigest()[:12]


def describe_machine(cpuinfo_path: str = "/proc/cpuinfo", torch_threads: int | None = None) -> dict:
    """The machine a run is on (see the module docstring), with its ``fingerprint`` and a readable ``label``."""
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
        "torch_threads": torch_threads if torch_threads is not None
        else torch.get_num_threads() if gpus else run_torch_threads(),
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
    return machine


def _run_fingerprints(value: dict) -> set[str]:
    runs = value.get("runs") if isinstance(value, dict) else None
    runs = runs.values() if isinstance(runs, dict) else runs or []
    return {run["machine_fingerprint"] for run in runs if isinstance(run, dict) and run.get("machine_fingerprint")}


def file_section(document: dict, section: str, value: dict, machine: dict) -> dict:
    """``document`` with ``section`` set to ``value`` stamped with ``machine``; refuses to mix machines.

    Raises :class:`MachineMismatchError` when the section already holds another machine's results or when the
    runs in ``value`` come from a machine other than ``machine``.
    """
    fingerprint = machine["fingerprint"]
    others = _run_fingerprints(value) - {fingerprint}
    if others:
        raise MachineMismatchError(
            f"section {section!r}: runs from machines {sorted(others)} given with results of {fingerprint} "
            f"({machine['label']}); results of different machines are never combined"
        )
    existing = document.get(section)
    previous = existing.get("machine_fingerprint") if isinstance(existing, dict) else None
    if previous is not None and previous != fingerprint:
        label = document.get("machines", {}).get(previous, {}).get("label", "another machine")
        raise MachineMismatchError(
            f"section {section!r} holds results of machine {previous} ({label}); this is {fingerprint} "
            f"({machine['label']}): write another --section or --output_json"
        )
    document = dict(document)
    document[section] = dict(value, machine_fingerprint=fingerprint, machine=machine)
    hardware = {key: machine.get(key) for key in ("label", *HARDWARE_FIELDS, "logical_cpus")}
    document["machines"] = dict(document.get("machines", {}), **{fingerprint: hardware})
    return document
