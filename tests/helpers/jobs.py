"""Job functions for tests/test_job_pool.py: module-level, so that a spawned worker imports them by name."""

import os
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
