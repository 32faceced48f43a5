"""The collective helpers of `bioptimus_hf.utils.distributed`, with and without a process group."""

import json
import os
import subprocess
import sys
from pathlib import Path

import torch

from bioptimus_hf.utils.distributed import close_process_group, rank_and_world


def test_close_process_group_without_a_group_does_nothing():
    assert not torch.distributed.is_initialized()
    close_process_group()
    assert rank_and_world() == (0, 1)


def test_close_process_group_waits_for_the_slowest_rank_then_destroys_the_group(tmp_path):
    """The replica reaches the end about 3 s before the main process; it leaves only once the main process
    arrives, and no rank exits with a live group (the cause of gloo's SIGABRT at interpreter shutdown)."""
    tests_dir = Path(__file__).parent
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=os.pathsep.join([str(tests_dir), str(tests_dir.parent)]))
    command = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port", "29537",
               str(tests_dir / "close_probe.py"), str(tmp_path)]
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "terminate called" not in result.stderr
    main, replica = (json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1))
    assert not main["still_initialized"] and not replica["still_initialized"]
    assert replica["entered"] < main["entered"] - 1.5  # the replica was first...
    assert replica["left"] >= main["entered"] - 0.05  # ...and waited for the main process at the barrier
