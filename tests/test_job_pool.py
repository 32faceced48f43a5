"""The job pool (bioptimus_hf/utils/job_pool.py): how a device's cores, RAM and GPU memory become slots and
threads, each GPU's admission by memory (estimates, measured peaks, out-of-memory), jobs spread over every (faked)
GPU, and jobs run in spawned workers: results in order, one line per failure while the others finish, a dead
worker, a retry alone after running out of memory, the threads each worker gets, and an interruption that leaves
no job finished."""

import logging
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from bioptimus_hf.utils import job_pool
from bioptimus_hf.utils.errors import BadInput
from bioptimus_hf.utils.hardware import FAKE_GPUS_ENV, GpuMemory, visible_gpus
from bioptimus_hf.utils.job_pool import (
    CUDA_CONTEXT_BYTES,
    GIB,
    WORKER_PROCESS_BYTES,
    Admission,
    DevicePlan,
    Job,
    one_line,
    parse_jobs,
    plan_device,
    run_jobs,
)
from helpers import jobs as fake
from helpers import python_path


ROOT = Path(__file__).resolve().parents[1]
CPU2 = DevicePlan("cpu", slots=2, threads_per_job=1)


@pytest.fixture(autouse=True)
def no_thread_cap(monkeypatch):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)


def test_jobs_flag_is_auto_or_a_whole_number():
    assert parse_jobs("auto") is None and parse_jobs("AUTO") is None
    assert parse_jobs("3") == 3 and parse_jobs(1) == 1
    for bad in ("0", "-2", "1.5", "many"):
        with pytest.raises(ValueError, match=rf"^--jobs {bad}: give auto or a whole number of at least 1$"):
            parse_jobs(bad)


def test_cpu_plan_divides_the_cores_and_respects_ram_and_the_thread_cap(monkeypatch):
    big = 64 * GIB
    assert plan_device(None, 10, device="cpu", cores=4, ram_bytes=big) == DevicePlan("cpu", 4, 1)
    assert plan_device(None, 2, device="cpu", cores=8, ram_bytes=big) == DevicePlan("cpu", 2, 4)  # fewer jobs
    assert plan_device(3, 10, device="cpu", cores=8, ram_bytes=big) == DevicePlan("cpu", 3, 2)
    assert plan_device(1, 10, device="cpu", cores=8) == DevicePlan("cpu", 1, 8)
    # RAM: 80 % of 10 GiB holds two jobs of 3 GiB with a worker's own footprint each, not three
    per_job = 3 * GIB
    assert int(0.8 * 10 * GIB) // (per_job + WORKER_PROCESS_BYTES) == 2
    assert plan_device(None, 10, per_job, device="cpu", cores=4, ram_bytes=10 * GIB) == DevicePlan("cpu", 2, 2)
    assert plan_device(4, 10, per_job, device="cpu", cores=4, ram_bytes=10 * GIB).slots == 4  # forced
    assert plan_device(None, 10, 100 * GIB, device="cpu", cores=4, ram_bytes=10 * GIB).slots == 1
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # a run told to use one thread per process
    assert plan_device(None, 2, device="cpu", cores=8, ram_bytes=big) == DevicePlan("cpu", 2, 1)


def test_gpu_plan_budgets_each_devices_free_memory_less_a_reserve():
    plan = plan_device(None, 40, device="cuda", cores=16, gpus=[GpuMemory("0", 70 * GIB, 80 * GIB)])
    assert plan == DevicePlan("cuda", 16, 1, (66 * GIB,), CUDA_CONTEXT_BYTES, ("0",))  # reserve: 5 % of 80 GiB
    small = plan_device(4, 40, device="cuda", cores=16, gpus=[GpuMemory("0", 10 * GIB, 12 * GIB)])
    assert small == DevicePlan("cuda", 4, 4, (9 * GIB,), CUDA_CONTEXT_BYTES, ("0",))  # reserve: at least 1 GiB
    two = plan_device(
        None,
        40,
        device="cuda",
        cores=16,
        gpus=[GpuMemory("2", 70 * GIB, 80 * GIB), GpuMemory("5", 10 * GIB, 12 * GIB)],
    )
    assert (two.memory_budgets, two.gpus, two.memory_budget_bytes) == ((66 * GIB, 9 * GIB), ("2", "5"), 75 * GIB)


def test_the_gpu_report_can_be_faked_and_names_devices_as_cuda_visible_devices_does(monkeypatch):
    monkeypatch.setenv(FAKE_GPUS_ENV, "10/12,20/24")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,5")
    assert visible_gpus() == [GpuMemory("3", 10 * GIB, 12 * GIB), GpuMemory("5", 20 * GIB, 24 * GIB)]
    plan = plan_device(None, 8, device="cuda", cores=8)  # the report the plan reads by default
    assert (plan.gpus, plan.memory_budgets) == (("3", "5"), (9 * GIB, 20 * GIB - int(0.05 * 24 * GIB)))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    assert [gpu.name for gpu in visible_gpus()] == ["0", "1"]
    monkeypatch.setenv(FAKE_GPUS_ENV, "ten")
    with pytest.raises(ValueError, match=rf"^{FAKE_GPUS_ENV}=ten: give free/total GiB per device"):
        visible_gpus()


def _job(name, memory, key="A"):
    return Job(name, fake.square, 1, memory_bytes=memory, memory_key=key)


def test_gpu_admission_counts_contexts_estimates_and_then_measured_peaks():
    admission = Admission(DevicePlan("cuda", 8, 1, memory_budgets=(16 * GIB,), context_bytes=GIB, gpus=("0",)))
    jobs = [_job(f"j{i}", 3 * GIB) for i in range(6)]
    running = []
    for job in jobs:  # each new worker brings its context: 4 jobs hold 4 × (1 + 3) = 16 GiB
        if not admission.admits(job, running, workers=len(running), new_worker=True):
            break
        running.append(job)
    assert len(running) == 4
    # a worker already started (idle) adds no context: still no room for a fifth 3-GiB job beside 4
    assert not admission.admits(jobs[4], running, workers=5, new_worker=False)
    # the first job peaked at 1 GiB: its key's jobs now count 1.1 GiB each
    admission.record_peak(jobs[0], 1 * GIB)
    assert admission.estimate(jobs[5]) == int(1.1 * GIB)
    assert admission.admits(jobs[4], running, workers=4, new_worker=True)  # 4 + 4 × 1.1 + 1 + 1.1 <= 16
    assert admission.estimate(_job("other", 3 * GIB, key="B")) == 3 * GIB  # another dataset: its own estimate
    admission.record_out_of_memory(jobs[1])
    assert admission.estimate(jobs[5]) == 2 * int(1.1 * GIB)
    # an empty device takes any job, even one beyond the budget (it runs alone rather than never)
    assert admission.admits(_job("huge", 100 * GIB, key="H"), [], workers=0, new_worker=True)
    assert not admission.admits(_job("huge", 100 * GIB, key="H"), running[:1], workers=1, new_worker=True)


def test_gpu_admission_is_per_device():
    plan = DevicePlan("cuda", 8, 1, memory_budgets=(16 * GIB, 4 * GIB), context_bytes=GIB, gpus=("0", "1"))
    admission = Admission(plan)
    running = [_job("r", 3 * GIB)]
    assert admission.admits(_job("j", 3 * GIB), running, workers=1, new_worker=True, device=0)  # 8 of 16 GiB
    assert not admission.admits(_job("j", 3 * GIB), running, workers=1, new_worker=True, device=1)  # 8 of 4 GiB
    assert admission.room(_job("j", 3 * GIB), running, 1, True, device=0) == 8 * GIB


def test_cpu_admission_has_no_memory_budget():  # the slots alone decide (the pool counts them)
    admission = Admission(CPU2)
    assert admission.admits(_job("a", 100 * GIB), [_job("b", 1)], workers=1, new_worker=True)
    assert admission.room(_job("a", 1), [_job("b", 1)], workers=1, new_worker=True) is None


def test_jobs_spread_over_every_faked_gpu_each_within_its_own_budget(tmp_path, monkeypatch):
    """Two faked GPUs of 9 GiB budget each (10 free, 1 reserved): a 3-GiB job with its worker's 1-GiB context fits
    twice on a device, not three times. The first four jobs each wait until four have started, so they end only if
    two ran on each device at once; the events show no device ever held a third."""
    monkeypatch.setenv(FAKE_GPUS_ENV, "10/12,10/12")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,7")
    plan = plan_device(6, 6, device="cuda", cores=6)
    assert plan.gpus == ("4", "7") and plan.slots == 6
    events = tmp_path / "events.txt"
    together = [Job(f"wave {i}", fake.on_device_with_others, (str(events), 4), 3 * GIB, "A") for i in range(4)]
    later = [Job(f"later {i}", fake.on_device_with_others, (str(events), 0), 3 * GIB, "A") for i in range(2)]
    report = run_jobs(together + later, plan, progress=False)
    assert not report.failures, [outcome.error for outcome in report.failures]
    assert sorted(outcome.result for outcome in report.outcomes[:4]) == ["4", "4", "7", "7"]
    assert report.max_concurrent == 4
    held, most = {"4": 0, "7": 0}, {"4": 0, "7": 0}
    for line in events.read_text().splitlines():
        what, device = line.split()
        held[device] += 1 if what == "start" else -1
        most[device] = max(most[device], held[device])
    assert most == {"4": 2, "7": 2}


def test_workers_return_results_in_order_with_their_share_of_threads():
    jobs = [Job(f"square {i}", fake.square, i) for i in range(5)]
    jobs.append(Job("threads", fake.threads_and_pid, None))
    report = run_jobs(jobs, CPU2, progress=False)
    assert [outcome.result for outcome in report.outcomes[:5]] == [0, 1, 4, 9, 16]
    threads, pid = report.outcomes[5].result
    assert threads == 1 and pid != os.getpid()  # a worker process, one thread
    assert report.max_concurrent == 2 and not report.failures


def test_jobs_run_side_by_side(tmp_path):
    """ "waits" ends only when the file appears; "writes" creates it on its first attempt, which then runs out of
    memory beside "waits": both end only if they ran at once, and the retry comes after, alone."""
    marker = str(tmp_path / "marker")
    report = run_jobs(
        [Job("waits", fake.wait_for_file, marker), Job("writes", fake.out_of_memory_once, marker)],
        CPU2,
        progress=False,
    )
    waits, writes = report.outcomes
    assert (waits.result, waits.attempts, waits.ran_alone) == ("seen", 1, False)
    assert (writes.result, writes.attempts, writes.ran_alone) == ("fit", 2, True)
    assert report.max_concurrent == 2


def test_a_failing_job_is_one_line_and_the_others_finish(tmp_path, caplog):
    log = tmp_path / "fails.log"
    jobs = [
        Job("square 3", fake.square, 3),
        Job("GAD seed 2", fake.fail, "bad\nthing", log_path=str(log)),
        Job("dies", fake.die, 3),
        Job("square 4", fake.square, 4),
    ]
    with caplog.at_level(logging.ERROR, logger="bioptimus_hf.utils.job_pool"):
        report = run_jobs(jobs, CPU2, progress=False)
    assert [outcome.result for outcome in report.outcomes] == [9, None, None, 16]
    assert [outcome.job.name for outcome in report.failures] == ["GAD seed 2", "dies"]
    assert report.outcomes[1].error == "ValueError: bad thing"
    assert report.outcomes[2].error == "its worker process died: exit code 3"
    lines = [record.getMessage() for record in caplog.records]
    assert f"GAD seed 2 failed: ValueError: bad thing (log: {log})" in lines
    assert all("\n" not in line for line in lines)
    text = log.read_text()
    assert "about to fail: bad\nthing" in text and "Traceback" in text and "raise ValueError(message)" in text


def test_a_job_s_bad_input_is_its_message_alone():
    """A library run's refusal (BadInput) or a SystemExit's line is reported as its message, without a type."""
    assert (
        one_line(BadInput("--data_dir x: missing devel.tsv\n(see docs)"))
        == "--data_dir x: missing devel.tsv (see docs)"
    )
    assert one_line(SystemExit("error: --seeds: empty")) == "--seeds: empty"
    assert one_line(ValueError("a bug")) == "ValueError: a bug"


def test_out_of_memory_beside_others_is_retried_alone_then_reported(tmp_path):
    jobs = [
        Job("fits later", fake.out_of_memory_once, str(tmp_path / "marker")),
        Job("never fits", fake.always_out_of_memory, None),
        Job("square", fake.square, 5),
    ]
    report = run_jobs(jobs, CPU2, progress=False)
    fits, never, square = report.outcomes
    assert (fits.result, fits.attempts, fits.ran_alone) == ("fit", 2, True)
    assert (never.attempts, never.ran_alone) == (2, True)
    assert never.error.startswith("OutOfMemoryError: CUDA out of memory.")
    assert square.result == 25 and square.attempts == 1


def test_in_process_runs_one_after_another_and_collects_failures():
    jobs = [Job("a", fake.square, 2), Job("b", fake.fail, "no"), Job("c", _here, None)]
    report = run_jobs(jobs, DevicePlan("cpu", 1, 2), progress=False)
    assert [o.result for o in report.outcomes] == [4, None, "here"]  # in this process: any callable works
    assert report.outcomes[1].error == "ValueError: no" and report.max_concurrent == 1


def _here(_):
    return "here"


def test_a_job_a_worker_cannot_receive_is_refused_before_anything_runs():
    with pytest.raises(ValueError, match=r"^lambda job: the job cannot be sent to a worker process: "):
        run_jobs([Job("square", fake.square, 1), Job("lambda job", lambda x: x, 1)], CPU2, progress=False)


def test_an_interruption_stops_the_workers_before_their_jobs_end(tmp_path):
    marker = tmp_path / "slow"

    def interrupt(outcome):
        raise KeyboardInterrupt

    jobs = [Job("slow", fake.slow_then_mark, str(marker)), Job("quick", fake.wait_for_file, str(marker) + ".started")]
    with pytest.raises(KeyboardInterrupt):
        run_jobs(jobs, CPU2, progress=False, on_done=interrupt)
    assert marker.with_suffix(".started").exists() and not marker.exists()  # the slow job was stopped mid-way


def test_workers_never_see_a_terminals_ctrl_c():
    """SIGINT is blocked in every worker from its start (its interpreter's start-up included) and ignored."""
    report = run_jobs([Job(f"w{i}", fake.signal_state, None) for i in range(2)], CPU2, progress=False)
    assert [outcome.result for outcome in report.outcomes] == [(True, True), (True, True)]


def test_an_interruption_ends_every_worker_even_one_that_ignores_sigterm(tmp_path):
    marker = tmp_path / "stubborn"

    def interrupt(outcome):
        raise KeyboardInterrupt

    jobs = [Job("stubborn", fake.ignore_sigterm_then_mark, str(marker)), Job("quick", fake.wait_for_file, str(marker))]
    with pytest.raises(KeyboardInterrupt):
        run_jobs(jobs, CPU2, progress=False, on_done=interrupt)
    pid = int(marker.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # killed after STOP_SECONDS, and reaped


def test_a_killed_worker_s_semaphore_adds_no_line_after_the_last(tmp_path):
    """A worker killed mid-job (it ignored SIGTERM) leaves its semaphore to multiprocessing's resource tracker, which
    removes it once the main process has ended: quietly, so that the run's own line stays the last."""
    marker = str(tmp_path / "stubborn")
    script = "\n".join(
        [
            "import sys",
            "from bioptimus_hf.utils.job_pool import DevicePlan, Job, run_jobs",
            "from helpers import jobs as fake",
            "def interrupt(outcome):",
            "    raise KeyboardInterrupt",
            f"jobs = [Job('stubborn', fake.hold_a_semaphore_ignoring_sigterm, {marker!r}),",
            f"        Job('quick', fake.wait_for_file, {marker!r})]",
            "try:",
            "    run_jobs(jobs, DevicePlan('cpu', slots=2, threads_per_job=1), progress=False, on_done=interrupt)",
            "except KeyboardInterrupt:",
            "    print('the last line', file=sys.stderr)",
        ]
    )
    env = {**os.environ, "PYTHONPATH": python_path(ROOT, ROOT / "tests")}
    result = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stderr.strip().splitlines()[-1] == "the last line", result.stderr[-3000:]


def test_a_second_interruption_waits_until_every_worker_is_gone(tmp_path, monkeypatch):
    """Ctrl-C again while the workers are being stopped: it is raised once they are all gone, not half-way."""
    marker = tmp_path / "stubborn"
    stop = job_pool._stop_processes

    def interrupted_again(workers):
        os.kill(os.getpid(), signal.SIGINT)  # handled at once, here, unless deferred
        stop(workers)

    monkeypatch.setattr(job_pool, "_stop_processes", interrupted_again)

    def interrupt(outcome):
        raise KeyboardInterrupt

    jobs = [Job("stubborn", fake.ignore_sigterm_then_mark, str(marker)), Job("quick", fake.wait_for_file, str(marker))]
    with pytest.raises(KeyboardInterrupt):
        run_jobs(jobs, CPU2, progress=False, on_done=interrupt)
    with pytest.raises(ProcessLookupError):
        os.kill(int(marker.read_text()), 0)


def test_the_bar_counts_finished_jobs(capsys):
    run_jobs([Job(f"s{i}", fake.square, i) for i in range(3)], CPU2, description="tests")
    err = capsys.readouterr().err
    assert "tests: 100%" in err and "3/3" in err
