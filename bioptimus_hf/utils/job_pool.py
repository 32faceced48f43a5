"""Independent jobs run side by side on one device, as far as its cores and memory allow, under one progress bar.

A job (:class:`Job`) is a picklable description handed to a module-level function: ``job.function(job.argument)``.
:func:`plan_device` decides how many run at once and with how many torch threads each; :func:`run_jobs` runs them:

- **One at a time** (``slots == 1``): in this process, in order, as a plain loop would.
- **Side by side**: in worker processes started with multiprocessing's ``spawn`` context (safe with CUDA and torch's
  thread pools), each running one job at a time and taking the next when it is free. A worker's stdout and stderr
  go to the job's ``log_path``; it ignores Ctrl-C (the main process stops every worker on an interrupt).
- **CPU**: ``slots`` jobs at once, each with ``threads_per_job`` torch threads (the cores divided among the slots,
  never more than ``OMP_NUM_THREADS`` where it is set): N jobs never oversubscribe the cores. ``auto`` runs as many
  jobs as there are cores, fewer where the available RAM (``/proc/meminfo``'s ``MemAvailable``, 80 % of it) does
  not hold that many jobs' estimates plus a worker's own footprint (:data:`WORKER_PROCESS_BYTES`).
- **GPU** (one device, the first visible): a job is admitted while the memory the running jobs are expected to
  hold, plus the new one's, fits the budget: the device's free memory when the pool starts
  (``torch.cuda.mem_get_info``) less a reserve (:data:`GPU_RESERVE_FRACTION` of the total, at least 1 GiB). Each
  worker counts :data:`CUDA_CONTEXT_BYTES` for its CUDA context; each job its estimate: ``Job.memory_bytes`` until a
  job with the same ``memory_key`` has finished, then the highest peak measured among those
  (``torch.cuda.max_memory_reserved``) plus 10 %. A job that still fails with CUDA's out-of-memory error is retried
  once, later, alone (nothing else admitted while it runs), and its key's estimate is doubled; a job too big for the
  budget runs alone at once. ``auto`` allows as many workers as there are cores.
- **Failures**: a failing job is reported in one line (its name and the error; the traceback is in its log) and the
  others finish; :class:`PoolReport` lists every outcome. A worker that dies (a signal, ``os._exit``) fails its job;
  a worker killed by SIGKILL (the kernel's out-of-memory killer) is treated as out of memory and retried alone.

The progress bar counts finished jobs (:mod:`bioptimus_hf.utils.progress`'s rules: the main process only, not with
``progress=False`` nor with Hugging Face's progress bars off).
"""

from __future__ import annotations

import logging
import os
import pickle
import signal
import sys
import time
import traceback
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any


logger = logging.getLogger(__name__)

GIB = 2**30
# What one worker process holds beyond its job: Python, torch and transformers imported (CPU plans).
WORKER_PROCESS_BYTES = 1 * GIB
# What one worker's CUDA context, kernels and library workspaces hold on the device (GPU plans).
CUDA_CONTEXT_BYTES = 1 * GIB
# The device memory never planned for: this fraction of the total, and at least 1 GiB.
GPU_RESERVE_FRACTION = 0.05
# Headroom over a measured peak before it stands for its key's jobs.
MEASURED_HEADROOM = 1.1
JOBS_HELP = (
    "How many fine-tunes run at once on this device: auto (CPU: one per core, each on its share of the cores, "
    "fewer where the RAM is short; GPU: as many as its free memory holds, judged from each job's estimate and then "
    "the measured peaks), or a number (the most at once; on a GPU memory still decides). 1 runs them one after "
    "another in this process."
)


@dataclass(frozen=True)
class Job:
    """One unit of work: ``function(argument)`` (both picklable: a module-level function, a dataclass)."""

    name: str  # how the report and the log lines name it, e.g. "GAD seed 2"
    function: Callable[[Any], Any]
    argument: Any
    memory_bytes: int = 0  # expected peak memory on the device (GPU) or in RAM (CPU); 0: unknown
    memory_key: str | None = None  # jobs with the same key share measured peaks
    log_path: str | None = None  # a worker's stdout and stderr for this job (appended)


@dataclass
class JobOutcome:
    job: Job
    result: Any = None
    error: str | None = None  # one line: the exception's type and message
    attempts: int = 1
    ran_alone: bool = False  # no other job ran while it did (its last attempt)
    peak_memory_bytes: int | None = None  # GPU: the highest memory reserved (its last attempt)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass
class PoolReport:
    outcomes: list[JobOutcome] = field(default_factory=list)
    max_concurrent: int = 0  # the most jobs that ran at once

    @property
    def failures(self) -> list[JobOutcome]:
        return [outcome for outcome in self.outcomes if not outcome.ok]


class JobsFailed(RuntimeError):
    """Some jobs failed (each already reported in its own line); the others finished."""


@dataclass(frozen=True)
class DevicePlan:
    device: str  # "cpu" or "cuda"
    slots: int  # the most jobs at once
    threads_per_job: int  # torch threads of each worker (a plan of one slot leaves this process's alone)
    memory_budget_bytes: int | None = None  # GPU: what the jobs and their workers may hold together
    context_bytes: int = 0  # GPU: what each worker holds besides its job


def parse_jobs(value: str | int) -> int | None:
    """``auto`` -> None, a whole number >= 1 -> itself; else a one-line error naming ``--jobs``."""
    text = str(value).strip().lower()
    if text == "auto":
        return None
    if text.isdigit() and int(text) >= 1:
        return int(text)
    raise ValueError(f"--jobs {value}: give auto or a whole number of at least 1")


def available_cores() -> int:
    """The cores this process may run on (taskset/cgroups affinity), not the machine's count."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def available_ram_bytes(meminfo: str = "/proc/meminfo") -> int | None:
    """``MemAvailable`` of ``/proc/meminfo``; None where there is none (not Linux)."""
    try:
        with open(meminfo, encoding="ascii") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def _thread_cap() -> int | None:
    requested = os.environ.get("OMP_NUM_THREADS", "")
    return int(requested) if requested.isdigit() and int(requested) > 0 else None


def plan_device(
    requested: int | None,
    num_jobs: int,
    job_memory_bytes: int = 0,
    *,
    device: str | None = None,
    cores: int | None = None,
    ram_bytes: int | None = None,
    gpu_memory: tuple[int, int] | None = None,
) -> DevicePlan:
    """How ``num_jobs`` jobs share this device: ``requested`` slots (None: ``auto``, see the module docstring).

    ``job_memory_bytes`` is the largest job's estimate (RAM on a CPU). ``device``, ``cores``, ``ram_bytes`` and
    ``gpu_memory`` (free, total bytes) default to this machine's."""
    if device is None:
        import torch

        device = "cuda" if torch.cuda.is_available() else "cpu"
    cores = cores or available_cores()
    num_jobs = max(1, num_jobs)
    if device == "cuda":
        slots = min(requested or cores, num_jobs)
        if slots > 1 and gpu_memory is None:
            import torch

            gpu_memory = torch.cuda.mem_get_info()
        budget = None
        if gpu_memory is not None:
            free, total = gpu_memory
            budget = max(0, free - max(GIB, int(GPU_RESERVE_FRACTION * total)))
        threads = max(1, cores // slots)
        return DevicePlan("cuda", slots, min(threads, _thread_cap() or threads), budget, CUDA_CONTEXT_BYTES)
    slots = min(requested or cores, num_jobs)
    if requested is None and slots > 1:
        ram_bytes = ram_bytes if ram_bytes is not None else available_ram_bytes()
        if ram_bytes is not None:
            slots = max(1, min(slots, int(0.8 * ram_bytes) // (job_memory_bytes + WORKER_PROCESS_BYTES)))
    threads = max(1, cores // slots)
    return DevicePlan("cpu", slots, min(threads, _thread_cap() or threads))


class Admission:
    """Which job may start now on a plan's device (the GPU's memory accounting; on a CPU, the slots alone)."""

    def __init__(self, plan: DevicePlan):
        self.plan = plan
        self.measured: dict[str | None, int] = {}  # memory_key -> estimate from measured peaks or an OOM

    def estimate(self, job: Job) -> int:
        return self.measured.get(job.memory_key, job.memory_bytes) if job.memory_key is not None else job.memory_bytes

    def admits(self, job: Job, running: Sequence[Job], workers: int, new_worker: bool) -> bool:
        """Whether ``job`` may start beside ``running`` (``workers`` live workers; ``new_worker``: one is started)."""
        if len(running) >= self.plan.slots:
            return False
        if not running:
            return True  # alone: always (too big for the budget, it runs alone rather than never)
        if self.plan.memory_budget_bytes is None:
            return True
        held = (workers + new_worker) * self.plan.context_bytes + sum(self.estimate(other) for other in running)
        return held + self.estimate(job) <= self.plan.memory_budget_bytes

    def record_peak(self, job: Job, peak_bytes: int | None) -> None:
        if job.memory_key is not None and peak_bytes:
            estimate = int(MEASURED_HEADROOM * peak_bytes)
            self.measured[job.memory_key] = max(self.measured.get(job.memory_key, 0), estimate)

    def record_out_of_memory(self, job: Job) -> None:
        if job.memory_key is not None:
            self.measured[job.memory_key] = 2 * max(self.estimate(job), 1)


def one_line(error: BaseException) -> str:
    """An exception as one line: ``Type: message`` (a ``SystemExit``'s message alone: it is already a sentence)."""
    if isinstance(error, SystemExit):
        text = str(error.code).removeprefix("error: ")
    else:
        text = f"{type(error).__name__}: {error}"
    return " ".join(text.split())[:500]


def is_out_of_memory(error: BaseException) -> bool:
    """CUDA's out-of-memory error (``torch.OutOfMemoryError``, or its message inside another error)."""
    if type(error).__name__ == "OutOfMemoryError":
        return True
    return "CUDA out of memory" in str(error) or "CUBLAS_STATUS_ALLOC_FAILED" in str(error)


def _device_peak(device: str) -> int | None:
    if device != "cuda":
        return None
    import torch

    return int(torch.cuda.max_memory_reserved()) if torch.cuda.is_initialized() else None


def _reset_device(device: str) -> None:
    if device != "cuda":
        return
    import gc

    import torch

    gc.collect()
    if torch.cuda.is_initialized():
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()


def _worker_main(conn, threads: int, log_level: int, device: str, visible_device: str | None) -> None:
    """A worker: run each job it is sent until told to stop (None) or the main process goes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the main process, which stops the workers
    if visible_device is not None:
        os.environ["CUDA_VISIBLE_DEVICES"] = visible_device  # one device: the Trainer must not spread over several
    logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", level=log_level)
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):  # torch, once a job imports it, starts this many threads
        os.environ[name] = str(threads)
    terminal = os.dup(1), os.dup(2)
    while True:
        try:
            message = conn.recv()
        except EOFError:
            return
        if message is None:
            return
        index, payload, log_path = message
        sys.stdout.flush()
        sys.stderr.flush()
        log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644) if log_path else None
        if log is not None:
            os.dup2(log, 1)
            os.dup2(log, 2)
        _reset_device(device)
        if "torch" in sys.modules:  # as the last job left it: a job may set its own
            sys.modules["torch"].set_num_threads(threads)
        start = time.perf_counter()
        try:
            job = pickle.loads(payload)
            result = job.function(job.argument)
            reply = ("done", index, result, None, False)
        except BaseException as error:  # noqa: BLE001 - every failure is the job's, reported, and the worker goes on
            traceback.print_exc()
            reply = ("failed", index, None, one_line(error), is_out_of_memory(error))
        peak = _device_peak(device)
        sys.stdout.flush()
        sys.stderr.flush()
        if log is not None:
            os.dup2(terminal[0], 1)
            os.dup2(terminal[1], 2)
            os.close(log)
        _reset_device(device)
        try:
            conn.send((*reply, peak, time.perf_counter() - start))
        except (pickle.PicklingError, TypeError, AttributeError) as error:  # an unpicklable result
            conn.send(("failed", index, None, f"result not picklable: {one_line(error)}", False, peak, 0.0))


@dataclass
class _Worker:
    process: Any
    conn: Any
    job_index: int | None = None
    started: float = 0.0
    exclusive: bool = False  # a retry that runs alone: nothing else starts while it runs
    shared: bool = False  # another job ran beside this one


def _visible_device() -> str:
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")[0].strip()
    return visible or "0"


def run_jobs(
    jobs: Sequence[Job],
    plan: DevicePlan,
    *,
    progress: bool = True,
    description: str = "jobs",
    on_done: Callable[[JobOutcome], None] | None = None,
) -> PoolReport:
    """Run ``jobs`` (in this order, as slots and memory free up) on ``plan``'s device; every outcome comes back, in
    the jobs' order. ``on_done(outcome)`` is called in this process as each job ends (after its last attempt)."""
    from tqdm.contrib.logging import logging_redirect_tqdm

    from .progress import progress_bar

    report = PoolReport()
    bar = progress_bar(total=len(jobs), enabled=progress, desc=description, unit="job")

    def finish(outcome: JobOutcome) -> None:
        report.outcomes.append(outcome)
        if outcome.ok:
            logger.info("%s: done in %.0f s", outcome.job.name, outcome.seconds)
        else:
            where = f" (log: {outcome.job.log_path})" if outcome.job.log_path and plan.slots > 1 else ""
            logger.error("%s failed: %s%s", outcome.job.name, outcome.error, where)
        if on_done is not None:
            on_done(outcome)
        bar.update(1)
        if report.failures:
            bar.set_postfix(failed=len(report.failures))

    try:
        with logging_redirect_tqdm() if not bar.disable else _nothing():
            if plan.slots <= 1 or len(jobs) <= 1:
                _run_in_process(jobs, finish)
                report.max_concurrent = min(1, len(jobs))
            else:
                _run_in_workers(jobs, plan, finish, report)
    finally:
        bar.close()
    order = {id(job): i for i, job in enumerate(jobs)}
    report.outcomes.sort(key=lambda outcome: order[id(outcome.job)])
    return report


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _run_in_process(jobs: Sequence[Job], finish: Callable[[JobOutcome], None]) -> None:
    for job in jobs:
        start = time.perf_counter()
        try:
            result, error = job.function(job.argument), None
        except (Exception, SystemExit) as caught:  # noqa: BLE001 - reported in one line; the others still run
            if not isinstance(caught, SystemExit):  # a SystemExit's message is the whole story
                logger.error("%s: the traceback", job.name, exc_info=True)
            result, error = None, one_line(caught)
        finish(JobOutcome(job, result, error, ran_alone=True, seconds=time.perf_counter() - start))


def _run_in_workers(
    jobs: Sequence[Job], plan: DevicePlan, finish: Callable[[JobOutcome], None], report: PoolReport
) -> None:
    import multiprocessing
    from multiprocessing.connection import wait

    context = multiprocessing.get_context("spawn")
    payloads = []
    for job in jobs:
        try:
            payloads.append(pickle.dumps(job))
        except (pickle.PicklingError, TypeError, AttributeError) as error:
            raise ValueError(f"{job.name}: the job cannot be sent to a worker process: {one_line(error)}") from None
    admission = Admission(plan)
    pending: deque[int] = deque(range(len(jobs)))
    attempts = [0] * len(jobs)
    retry_alone: set[int] = set()
    workers: list[_Worker] = []
    visible = _visible_device() if plan.device == "cuda" else None
    level = logging.getLogger().getEffectiveLevel()

    def running() -> list[_Worker]:
        return [worker for worker in workers if worker.job_index is not None]

    def idle() -> list[_Worker]:
        return [worker for worker in workers if worker.job_index is None]

    def start_worker() -> _Worker:
        parent, child = context.Pipe()
        process = context.Process(
            target=_worker_main, args=(child, plan.threads_per_job, level, plan.device, visible), daemon=False
        )
        process.start()
        child.close()
        worker = _Worker(process, parent)
        workers.append(worker)
        return worker

    def stop_worker(worker: _Worker) -> None:
        try:
            worker.conn.send(None)
        except (OSError, ValueError):
            pass
        worker.process.join(timeout=30)
        if worker.process.is_alive():
            worker.process.terminate()
            worker.process.join()
        worker.conn.close()
        workers.remove(worker)

    def admit() -> None:
        while pending:
            busy = running()
            if any(worker.exclusive for worker in busy):
                return
            index = pending[0]
            exclusive = index in retry_alone
            if exclusive and busy:
                return  # it waits for the device to empty; nothing passes it
            if not exclusive and not admission.admits(
                jobs[index], [jobs[w.job_index] for w in busy], len(workers), not idle()
            ):
                return  # in order (the caller's: the longest first); it starts when memory frees up
            pending.popleft()
            worker = idle()[0] if idle() else start_worker()
            try:
                worker.conn.send((index, payloads[index], jobs[index].log_path))
            except (OSError, ValueError):  # an idle worker that died: a fresh one
                stop_worker(worker)
                worker = start_worker()
                worker.conn.send((index, payloads[index], jobs[index].log_path))
            worker.job_index, worker.started = index, time.perf_counter()
            worker.exclusive, worker.shared = exclusive, bool(busy)
            for other in busy:
                other.shared = True
            attempts[index] += 1
            report.max_concurrent = max(report.max_concurrent, len(running()))

    def ended(worker: _Worker, result, error, out_of_memory: bool, peak, seconds: float) -> None:
        index, alone = worker.job_index, not worker.shared
        worker.job_index, worker.exclusive, worker.shared = None, False, False
        job = jobs[index]
        if error is None:
            admission.record_peak(job, peak)
            finish(JobOutcome(job, result, None, attempts[index], alone, peak, seconds))
            return
        stop_worker(worker)  # a fresh process for what comes next
        if out_of_memory and not alone and index not in retry_alone:
            admission.record_out_of_memory(job)
            retry_alone.add(index)
            pending.append(index)
            logger.warning("%s ran out of memory beside other jobs: it runs again later, alone", job.name)
            return
        finish(JobOutcome(job, None, error, attempts[index], alone, peak, seconds))

    try:
        admit()
        while running():
            handles = {}
            for worker in running():
                handles[worker.conn] = worker
                handles[worker.process.sentinel] = worker
            for handle in wait(list(handles)):
                worker = handles[handle]
                if worker not in workers or worker.job_index is None:
                    continue  # seen through its other handle
                message = None
                if worker.conn.poll():
                    try:
                        message = worker.conn.recv()
                    except (EOFError, OSError):
                        message = None
                if message is not None:
                    status, _, result, error, out_of_memory, peak, seconds = message
                    ended(worker, result, error if status == "failed" else None, out_of_memory, peak, seconds)
                    continue
                worker.process.join(timeout=5)
                code = worker.process.exitcode
                killed = code == -signal.SIGKILL
                why = "killed (out of memory?)" if killed else f"exit code {code}"
                ended(
                    worker, None, f"its worker process died: {why}", killed, None, time.perf_counter() - worker.started
                )
            if not pending:
                for worker in idle():
                    stop_worker(worker)  # what they hold goes back to the jobs still running
            admit()
    finally:
        for worker in list(workers):
            if worker.job_index is not None and worker.process.is_alive():
                worker.process.terminate()  # interrupted: the job writes nothing more
            stop_worker(worker)
