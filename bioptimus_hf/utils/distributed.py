"""The few collectives the pipeline needs under ``torchrun`` / ``accelerate launch``: no-ops in one process, and over
``torch.distributed``'s process group only where one is already initialised (the ``TrainingArguments`` /
``accelerate`` state creates it; this module never does)."""

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
    """Per-key vectors and counts summed over all ranks. ``keys``: the same list on every rank (the union of the keys
    any rank may hold); a key no rank counted is absent from the result, as in a single process."""
    if rank_and_world()[1] == 1:
        return sums, counts
    order = sorted(keys)
    stacked = torch.zeros(len(order), width + 1, dtype=torch.float64)  # each key's sum, then its count
    for row, key in enumerate(order):
        if key in sums:
            stacked[row, :width], stacked[row, width] = sums[key].double(), counts[key]
    stacked = stacked.to(_collective_device())
    torch.distributed.all_reduce(stacked)
    stacked = stacked.cpu()
    kept = [(key, row) for row, key in enumerate(order) if stacked[row, width] > 0]
    return {key: stacked[row, :width].float() for key, row in kept}, Counter(
        {key: int(stacked[row, width]) for key, row in kept}
    )


def sum_numbers_across_ranks(values: Sequence[float]) -> list[float]:
    """``values`` summed element-wise over all ranks (float64, exact for counts below 2**53); every rank must
    call it with a list of the same length. In one process: the values as they are."""
    if rank_and_world()[1] == 1:
        return [float(v) for v in values]
    tensor = torch.tensor([float(v) for v in values], dtype=torch.float64, device=_collective_device())
    torch.distributed.all_reduce(tensor)
    return tensor.cpu().tolist()


def share_from_main(compute: Callable[[], Any]) -> Any:
    """``compute()`` run on rank 0 only, its (picklable) result returned on every rank; an exception on rank 0 is
    raised on every rank, so that no rank waits forever."""
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
    """End of a command (``bioptimus ner``, ``compare``...): every rank waits, then the process group is destroyed.

    A process exiting with a live gloo group can abort at shutdown (pytorch/pytorch#190489). The reducers of live
    ``DistributedDataParallel`` wrappers are released first, while the group is registered (freed later, a reducer's
    destructor can deadlock on the GIL with gloo's threads); then the group, through its Python object."""
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
