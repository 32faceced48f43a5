"""glibc's allocator told to keep freed memory in the process, for CPU training.

torch's CPU allocator has no cache, so each step maps, faults in and zeroes the same megabytes again.
:func:`retain_freed_memory` sets at run time what ``MALLOC_MMAP_THRESHOLD_``, ``MALLOC_TRIM_THRESHOLD_`` and
``MALLOC_MMAP_MAX_`` would (docs/speed.md, section 9: 7-20 % of a step, peak RSS +19 %), after returning what is
free at that moment. Without glibc it does nothing and says so."""

from __future__ import annotations

import ctypes
import ctypes.util
import platform


M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
M_MMAP_MAX = -4
MMAP_THRESHOLD_BYTES = 32 * 2**20  # glibc's maximum on 64-bit (HEAP_MAX_SIZE / 2)
TRIM_THRESHOLD_BYTES = 2**30


def _glibc():
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return None
    return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")


def return_freed_memory() -> bool:
    """glibc's ``malloc_trim(0)``: the free pages of the heap go back to the system. False without glibc, or when
    none could be returned."""
    libc = _glibc()
    return libc is not None and libc.malloc_trim(0) == 1


def retain_freed_memory() -> str:
    """Apply the settings above where the C library is glibc; returns what was done, for the log."""
    libc = _glibc()
    if libc is None:
        return f"unchanged ({platform.system()} {platform.libc_ver()[0] or 'without glibc'})"
    return_freed_memory()  # what is free now goes back first (the initialisation's encoding: 1.7 -> 0.9 GiB)
    mmap_ok = libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES) == 1
    trim_ok = libc.mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES) == 1
    no_mmap_ok = libc.mallopt(M_MMAP_MAX, 0) == 1
    if not (mmap_ok and trim_ok and no_mmap_ok):
        return f"glibc refused mallopt (mmap threshold: {mmap_ok}, trim threshold: {trim_ok}, no mmap: {no_mmap_ok})"
    return (
        f"glibc keeps freed memory (mmap threshold {MMAP_THRESHOLD_BYTES // 2**20} MiB, "
        f"trim threshold {TRIM_THRESHOLD_BYTES // 2**20} MiB, larger blocks from the heap too)"
    )
