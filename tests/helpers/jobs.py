"""Job functions for tests/test_job_pool.py: module-level, so that a spawned worker imports them by name."""

import os
import signal
import time
from pathlib import Path


def square(value):
    return value * value


def threads_and_pid(_):
    import torch

    return torch.get_num_threads(), os.getpid()


def fail(message):
    print(f"about to fail: {message}")
    raise ValueError(message)


def die(code):
    os._exit(code)


class OutOfMemoryError(RuntimeError):
    """Stands for ``torch.OutOfMemoryError`` (the pool knows it by its name), without importing torch here."""


def out_of_memory_once(marker):
    """CUDA's out-of-memory error the first time (``marker`` does not exist yet), then a result."""
    path = Path(marker)
    if not path.exists():
        path.write_text("tried")
        raise OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB (a test)")
    return "fit"


def always_out_of_memory(_):
    raise OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB (a test)")


def slow_then_mark(marker):
    """Writes ``marker`` after 60 s: a job an interruption must stop before it ends."""
    Path(marker).with_suffix(".started").write_text("started")
    time.sleep(60)
    Path(marker).write_text("finished")
    return "finished"


def wait_for_file(path):
    """Returns once ``path`` exists (another job, running beside this one, writes it)."""
    for _ in range(600):
        if Path(path).exists():
            return "seen"
        time.sleep(0.1)
    raise TimeoutError(f"{path} never appeared")


def on_device_with_others(argument):
    """Appends ``start <device>`` to the events file, waits until ``others`` jobs have started (each on its device,
    ``CUDA_VISIBLE_DEVICES``), appends ``end <device>``; returns the device."""
    events, others = argument
    device = os.environ.get("CUDA_VISIBLE_DEVICES", "")
    with open(events, "a") as handle:
        handle.write(f"start {device}\n")
    for _ in range(600):
        if Path(events).read_text().count("start") >= others:
            break
        time.sleep(0.1)
    else:
        raise TimeoutError(f"{others} jobs never ran at once")
    with open(events, "a") as handle:
        handle.write(f"end {device}\n")
    return device


def ignore_sigterm_then_mark(marker):
    """Ignores SIGTERM (a job that swallows the pool's stop) and writes its pid to ``marker``; then sleeps."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    Path(marker).write_text(str(os.getpid()))
    time.sleep(60)  # well past the pool's STOP_SECONDS
    return "finished"


def signal_state(_):
    """Whether SIGINT is blocked in this process (``/proc/self/status``) and its handler ignores it."""
    blocked = next(line for line in Path("/proc/self/status").read_text().splitlines() if line.startswith("SigBlk:"))
    return bool(int(blocked.split()[1], 16) & (1 << (signal.SIGINT - 1))), signal.getsignal(
        signal.SIGINT
    ) == signal.SIG_IGN


def hold_a_semaphore_ignoring_sigterm(marker):
    """Creates a semaphore (registered with multiprocessing's resource tracker), ignores SIGTERM and writes its pid to
    ``marker``; then sleeps until the pool kills it, the semaphore still registered."""
    import multiprocessing

    held = multiprocessing.get_context("spawn").Semaphore()
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    Path(marker).write_text(str(os.getpid()))
    time.sleep(60)  # well past the pool's STOP_SECONDS
    return held is not None
