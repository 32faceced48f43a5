"""Test helper, run under torchrun with gloo: rank 0 is slow to finish; each rank records when it entered and
left ``close_process_group`` and whether a process group was left behind."""

import json
import sys
import time
from pathlib import Path

import torch

from bioptimus_hf.utils.distributed import close_process_group


if __name__ == "__main__":  # torchrun entry point: output_dir
    output_dir = Path(sys.argv[1])
    torch.distributed.init_process_group("gloo")
    rank = torch.distributed.get_rank()
    if rank == 0:
        time.sleep(3.0)  # the main process writing releases while the replica is already done
    entered = time.time()
    close_process_group()
    left = time.time()
    (output_dir / f"rank{rank}.json").write_text(
        json.dumps({"entered": entered, "left": left, "still_initialized": torch.distributed.is_initialized()})
    )
