"""glibc's allocator told to keep freed memory in the process, for CPU training.

Why: torch's CPU allocator has no cache; every activation of a training step is a fresh ``malloc``. glibc
serves blocks above its mmap threshold with ``mmap`` and returns them with ``munmap``, and trims the heap's top
back to the OS above its trim threshold, so each step maps, page-faults and zeroes the same megabytes again.
On the developers' 2-core AMD EPYC the first two settings below saved 7 % of the plain recipe's MiniLM step in the
benchmark and 9-20 % of a masked-only bf16 step in a profiling loop; on a Zen 5 VM the third then gave masked-only
MiniLM another 1.1-1.2x (docs/speed.md, section 9).

What: ``mallopt(M_MMAP_THRESHOLD, 32 MiB)`` (glibc's largest: blocks up to 32 MiB come from the heap and are
reused), ``mallopt(M_TRIM_THRESHOLD, 1 GiB)`` (freed memory stays for the next step) and ``mallopt(M_MMAP_MAX, 0)``
(no block is served by ``mmap`` at all: the threshold cannot go above 32 MiB, yet a step's largest tensors are
bigger -- the 30,522 x 384 embedding gradient is 45 MiB, the masked positions' vocabulary-wide logits 35 MiB --
and were mapped, faulted in page by page and unmapped every step), the settings the ``MALLOC_MMAP_THRESHOLD_`` /
``MALLOC_TRIM_THRESHOLD_`` / ``MALLOC_MMAP_MAX_`` environment variables would give, applied at run time.
The cost: the process keeps its high-water mark instead of returning memory between steps, and large blocks
freed inside the heap can fragment it (peak RSS: masked-only unchanged, the plain recipe +19 % in the benchmark).
Elsewhere (musl, macOS, Windows) it does nothing and says so.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import platform


M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
M_MMAP_MAX = -4
MMAP_THRESHOLD_BYTES = 32 * 2**20  # glibc's maximum on 64-bit (HEAP_MAX_SIZE / 2)
TRIM_THRESHOLD_BYTES = 2**30


def retain_freed_memory() -> str:
    """Apply the settings above where the C library is glibc; returns what was done, for the log."""
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return f"unchanged ({platform.system()} {platform.libc_ver()[0] or 'without glibc'})"
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    mmap_ok = libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES) == 1
    trim_ok = libc.mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES) == 1
    no_mmap_ok = libc.mallopt(M_MMAP_MAX, 0) == 1
    if not (mmap_ok and trim_ok and no_mmap_ok):
        return f"glibc refused mallopt (mmap threshold: {mmap_ok}, trim threshold: {trim_ok}, no mmap: {no_mmap_ok})"
    return (
        f"glibc keeps freed memory (mmap threshold {MMAP_THRESHOLD_BYTES // 2**20} MiB, "
        f"trim threshold {TRIM_THRESHOLD_BYTES // 2**20} MiB, larger blocks from the heap too)"
    )
