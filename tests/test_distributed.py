"""The collective helpers of `bioptimus_hf.utils.distributed`, with and without a process group."""

import json
import os
import sys
from pathlib import Path

import pytest
import torch

from bioptimus_hf.utils.distributed import close_process_group, rank_and_world
from helpers import corpus_lines, python_path, run_launcher


def test_close_process_group_without_a_group_does_nothing():
    assert not torch.distributed.is_initialized()
    close_process_group()
    assert rank_and_world() == (0, 1)


def test_close_process_group_waits_for_the_slowest_rank_then_destroys_the_group(tmp_path):
    """The replica reaches the end about 3 s before the main process; it leaves only once the main process
    arrives, and no rank exits with a live group (the cause of gloo's SIGABRT at interpreter shutdown)."""
    tests_dir = Path(__file__).parent
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=python_path(tests_dir, tests_dir.parent))
    command = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nproc_per_node",
        "2",
        "--master_port",
        "29537",
        str(tests_dir / "close_probe.py"),
        str(tmp_path),
    ]
    result = run_launcher(command, env, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "terminate called" not in result.stderr
    main, replica = (json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1))
    assert not main["still_initialized"] and not replica["still_initialized"]
    assert replica["entered"] < main["entered"] - 1.5  # the replica was first...
    assert replica["left"] >= main["entered"] - 0.05  # ...and waited for the main process at the barrier


def test_run_launcher_stops_hung_workers_when_it_times_out(tmp_path):
    """The tests' torchrun helper: a hang fails the test and leaves no worker behind (torchrun starts each
    worker in its own session, so killing the launcher alone orphaned them)."""
    import time

    script = tmp_path / "hang.py"
    script.write_text(
        "import os, sys, time\n"
        "open(os.path.join(sys.argv[1], 'pid' + os.environ['RANK']), 'w').write(str(os.getpid()))\n"
        "time.sleep(600)\n"
    )
    command = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nproc_per_node",
        "2",
        "--master_port",
        "29545",
        str(script),
        str(tmp_path),
    ]
    with pytest.raises(pytest.fail.Exception, match="did not finish within 10 s"):
        run_launcher(command, dict(os.environ), timeout=10)
    pids = [int((tmp_path / f"pid{rank}").read_text()) for rank in (0, 1)]
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(_alive(pid) for pid in pids):
        time.sleep(0.2)
    assert not any(_alive(pid) for pid in pids)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.skipif(torch.cuda.is_available(), reason="with a GPU the Trainer goes distributed without --use_cpu")
def test_a_cpu_launch_of_two_processes_without_use_cpu_is_refused_naming_the_flag(tmp_path, tiny_model_dir):
    """Without --use_cpu, TrainingArguments on a GPU-less machine sets up each torchrun process as a single
    process; both would train alone into one --output_dir. The script stops first and names the flag."""
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(corpus_lines(50)) + "\n")
    out = tmp_path / "out"
    root = Path(__file__).parents[1]
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=python_path(root))
    command = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nproc_per_node",
        "2",
        "--master_port",
        "29539",
        str(root / "run_pretraining.py"),
        "--model_name_or_path",
        str(tiny_model_dir),
        "--init_strategy",
        "continued",
        "--train_file",
        str(corpus),
        "--output_dir",
        str(out),
        "--max_steps",
        "2",
        "--report_to",
        "none",
    ]
    result = run_launcher(command, env, timeout=120)
    assert result.returncode != 0
    assert "launched as 2 processes (WORLD_SIZE=2)" in result.stderr + result.stdout
    assert "add --use_cpu true" in result.stderr + result.stdout
    assert not out.exists()  # refused before the output directory was locked


def _count_on_rank(rank, rendezvous, out_dir):
    from bioptimus_hf.pretraining.collator import MaskingStatistics

    torch.distributed.init_process_group("gloo", init_method=f"file://{rendezvous}", rank=rank, world_size=2)
    stats = MaskingStatistics(2)
    # Different counts per rank, as two replicas' batches have: rank 0 sees 30/200 then 5/40, rank 1 40/200.
    stats.add(0, 30 + 10 * rank, 200)
    if rank == 0:
        stats.add(1, 5, 40)
    total = stats.summed_over_ranks()
    (Path(out_dir) / f"rank{rank}.json").write_text(
        json.dumps(
            {
                "own": [stats.fraction(0), stats.fraction(1)],
                "total": [total.fraction(0), total.fraction(1)],
                "masked": total.masked,
                "maskable": total.maskable,
            }
        )
    )
    torch.distributed.destroy_process_group()


def test_masking_statistics_summed_over_two_ranks(tmp_path):
    """What a release reports as the realised masked fraction under DDP counts every rank's batches, not the
    main process's alone; a phase only one rank has counted still gets its fraction."""
    import torch.multiprocessing as mp

    mp.spawn(_count_on_rank, args=(str(tmp_path / "rendezvous"), str(tmp_path)), nprocs=2, join=True)
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1)]
    assert ranks[0]["own"] == [30 / 200, 5 / 40] and ranks[1]["own"] == [40 / 200, None]
    for rank in ranks:
        assert rank["masked"] == [70, 5] and rank["maskable"] == [400, 40]
        assert rank["total"] == [70 / 400, 5 / 40]


def _close_with_a_live_ddp_module(rank, rendezvous, out_dir):
    import weakref

    torch.distributed.init_process_group("gloo", init_method=f"file://{rendezvous}", rank=rank, world_size=2)
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 2))
    model(torch.randn(3, 4)).sum().backward()  # one all-reduce through the reducer
    reducer = weakref.ref(model.reducer)
    close_process_group()  # the model is still referenced here, as a Trainer's is at the end of main()
    (Path(out_dir) / f"rank{rank}.json").write_text(
        json.dumps(
            {
                "reducer_alive": reducer() is not None,
                "has_reducer": "reducer" in model.__dict__,
                "still_initialized": torch.distributed.is_initialized(),
            }
        )
    )


def test_close_process_group_releases_live_ddp_reducers_before_destroying_the_group(tmp_path):
    """A reducer freed after the group was destroyed joins gloo's worker threads while holding the GIL, which a
    worker may be waiting for: a deadlock at exit (one torchrun run of run_ner.py in six). close_process_group
    frees the reducers of wrappers still alive, while the group is registered."""
    import torch.multiprocessing as mp

    mp.spawn(_close_with_a_live_ddp_module, args=(str(tmp_path / "rendezvous"), str(tmp_path)), nprocs=2, join=True)
    for rank in (0, 1):
        state = json.loads((tmp_path / f"rank{rank}.json").read_text())
        assert state == {"reducer_alive": False, "has_reducer": False, "still_initialized": False}


def test_masking_statistics_in_one_process_are_a_copy():
    from bioptimus_hf.pretraining.collator import MaskingStatistics

    stats = MaskingStatistics(2)
    stats.add(1, 3, 20)
    total = stats.summed_over_ranks()
    stats.add(1, 3, 20)  # the copy does not follow later counts
    assert total is not stats and (total.masked, total.maskable) == ([0, 3], [0, 20])
