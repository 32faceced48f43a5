"""The few collective operations the pipeline needs under ``torchrun`` / ``accelerate launch``.

Everything here is a no-op in a single process, and uses ``torch.distributed``'s process group only when one
is already initialised (the ``TrainingArguments`` / ``accelerate`` state creates it; this module never does):

* :func:`rank_and_world` — this process's rank and the number of processes;
* :func:`is_main_process` — whether this is rank 0, also before the launcher's process group exists;
* :func:`shard` — this rank's share of a list (round robin, so length-sorted work stays balanced);
* :func:`sum_across_ranks` — per-key vector sums and counts summed over ranks (one ``all_reduce`` each);
* :func:`sum_numbers_across_ranks` — a short list of counts summed over ranks (one ``all_reduce``);
* :func:`share_from_main` — a picklable value computed on rank 0 only, given to every rank;
* :func:`wait_for_everyone` — a barrier;
* :func:`close_process_group` — the last call of a script: every rank waits, then the group is destroyed.
"""

from __future__ import annotations

import os
from collections import Counter
from typing import Any, Callable, Sequence, TypeVar

import torch


T = TypeVar("T")


def _group_ready() -> bool:
    return torch.distributed.is_available() and torch.distributed.is_initialized()


def rank_and_world() -> tuple[int, int]:
    """(rank, world size); (0, 1) without an initialised process group."""
    if _group_ready():
        return torch.distributed.get_rank(), torch.distributed.get_world_size()
    return 0, 1


def is_main_process() -> bool:
    """Whether this process is the main one (rank 0): by the process group when one is initialised, else by the
    ``RANK`` (or ``LOCAL_RANK``) that torchrun and ``accelerate launch`` give each process before it exists;
    True in a single process."""
    if _group_ready():
        return torch.distributed.get_rank() == 0
    return int(os.environ.get("RANK") or os.environ.get("LOCAL_RANK") or 0) == 0


def _collective_device() -> torch.device:
    # NCCL reduces CUDA tensors only; gloo reduces CPU tensors.
    if _group_ready() and torch.distributed.get_backend() == "nccl":
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def shard(items: Sequence[T]) -> list[T]:
    """This rank's items: ``items[rank::world]``. Every item goes to exactly one rank."""
    rank, world = rank_and_world()
    return list(items[rank::world])


def sum_across_ranks(
    sums: dict[int, torch.Tensor], counts: Counter, keys: Sequence[int], width: int
) -> tuple[dict[int, torch.Tensor], Counter]:
    """Sum per-key vectors and counts over all ranks.

    ``keys`` must be the same list on every rank (the union of the keys any rank may hold); a key no
    rank counted is absent from the result, as in a single process.
    """
    if rank_and_world()[1] == 1:
        return sums, counts
    device = _collective_device()
    order = sorted(keys)
    stacked = torch.zeros(len(order), width, dtype=torch.float64)
    tally = torch.zeros(len(order), dtype=torch.float64)
    for row, key in enumerate(order):
        if key in sums:
            stacked[row] = sums[key].double()
            tally[row] = counts[key]
    stacked, tally = stacked.to(device), tally.to(device)
    torch.distributed.all_reduce(stacked)
    torch.distributed.all_reduce(tally)
    stacked, tally = stacked.cpu().float(), tally.cpu()
    total_sums, total_counts = {}, Counter()
    for row, key in enumerate(order):
        if tally[row] > 0:
            total_sums[key] = stacked[row]
            total_counts[key] = int(tally[row])
    return total_sums, total_counts


def sum_numbers_across_ranks(values: Sequence[float]) -> list[float]:
    """``values`` summed element-wise over all ranks (float64, exact for counts below 2**53); every rank must
    call it with a list of the same length. In one process: the values as they are."""
    if rank_and_world()[1] == 1:
        return [float(v) for v in values]
    tensor = torch.tensor([float(v) for v in values], dtype=torch.float64, device=_collective_device())
    torch.distributed.all_reduce(tensor)
    return tensor.cpu().tolist()


def share_from_main(compute: Callable[[], Any]) -> Any:
    """Run ``compute`` on rank 0 only and return its (picklable) result on every rank.

    An exception on rank 0 is re-raised on every rank, so no rank waits forever for a result.
    """
    rank, world = rank_and_world()
    if world == 1:
        return compute()
    box: list[Any] = [None]
    if rank == 0:
        try:
            box[0] = ("ok", compute())
        except Exception as error:  # shared, then raised everywhere
            box[0] = ("error", error)
    torch.distributed.broadcast_object_list(box, src=0, device=_collective_device())
    status, value = box[0]
    if status == "error":
        raise value
    return value


def wait_for_everyone() -> None:
    """A barrier across all ranks (nothing without a process group)."""
    if rank_and_world()[1] > 1:
        torch.distributed.barrier()


def close_process_group() -> None:
    """End of a script: wait for every rank, then destroy the process group (nothing without one).

    A process that exits with a live gloo group can abort during interpreter shutdown ("terminate called
    without an active exception", SIGABRT; pytorch/pytorch#190489): gloo's worker threads still hold
    work that needs the interpreter. The rank that finishes first (a replica skips the main process's
    writes) is the one that hits it, and the launcher then reports the whole run as failed. Neither the
    Trainer nor ``accelerate`` destroys the group, so each ``run_*.py`` calls this as its last step.

    Destroying the group is not enough on its own: the Trainer's ``DistributedDataParallel`` wrapper keeps
    it alive through its C++ reducer, and when the Trainer is freed later the reducer's destructor (which
    holds the GIL) ends gloo's worker threads by joining them, while a worker may be waiting for the GIL to
    free the tensors of the last collective. That deadlock hung one ``torchrun`` run of ``run_ner.py`` in six
    on this machine. So the reducers of live wrappers are released first, while the group is still
    registered; the group itself is then freed through its Python object, whose destructor lets go of the GIL.
    """
    if not _group_ready():
        return
    wait_for_everyone()
    _release_ddp_reducers()
    torch.distributed.destroy_process_group()


def _release_ddp_reducers() -> None:
    """Drop the reducer (and the logger that holds it) of every live ``DistributedDataParallel`` module.
    The wrappers cannot train afterwards: call at the very end only."""
    import gc

    from torch.nn.parallel import DistributedDataParallel

    gc.collect()  # wrappers only a reference cycle keeps alive go now, while the group is still registered
    for candidate in gc.get_objects():
        if isinstance(candidate, DistributedDataParallel):
            candidate.__dict__.pop("logger", None)  # the logger holds the reducer too
            candidate.__dict__.pop("reducer", None)
