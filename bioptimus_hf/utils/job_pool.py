"""Independent jobs side by side on this machine's devices, as far as cores and memory allow, under one progress
bar (``bioptimus blurb --jobs``). :func:`plan_device` decides how many run at once and with how many threads;
:func:`run_jobs` runs them in ``spawn`` workers, each pinned to one device, a job out of memory beside others once
more alone. A failure is one line (its traceback in its log) and the others finish; however the main process
stops, it terminates every worker."""

from __future__ import annotations

import contextlib
import gc
import logging
import os
import pickle
import signal
import sys
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .allocator import return_freed_memory
from .errors import BadInput
from .hardware import GpuMemory, default_device, visible_gpus


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
# How long a stopped worker has to end before it is killed (within the 5 s a Ctrl-C ends a command in).
STOP_SECONDS = 3.0
JOBS_HELP = (
    "How many fine-tunes run at once: auto (CPU: one per core, each on its share of the cores, fewer where the RAM "
    "is short; GPUs: spread over every visible one, as many as each one's free memory holds, judged from each "
    "job's estimate and then the measured peaks), or a number (the most at once; on GPUs memory still decides). "
    "1 runs them one after another in this process."
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
    slots: int  # the most jobs at once, on all devices together
    threads_per_job: int  # torch threads of each worker (a plan of one slot leaves this process's alone)
    memory_budgets: tuple[int, ...] = ()  # GPU: per device, what its jobs and their workers may hold together
    context_bytes: int = 0  # GPU: what each worker holds besides its job
    gpus: tuple[str, ...] = ()  # GPU: each device as CUDA_VISIBLE_DEVICES names it, in memory_budgets' order

    @property
    def memory_budget_bytes(self) -> int | None:
        """GPU: the budgets of every device together; None where none was measured."""
        return sum(self.memory_budgets) if self.memory_budgets else None


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
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def available_ram_bytes() -> int | None:
    """``MemAvailable`` of ``/proc/meminfo``; None where there is none (not Linux)."""
    with contextlib.suppress(OSError):
        with open("/proc/meminfo", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    return None


def gpu_budget(gpu: GpuMemory) -> int:
    """What the pool plans for on one device: its free memory less the reserve (:data:`GPU_RESERVE_FRACTION`)."""
    return max(0, gpu.free_bytes - max(GIB, int(GPU_RESERVE_FRACTION * gpu.total_bytes)))


def plan_device(
    requested: int | None,
    num_jobs: int,
    job_memory_bytes: int = 0,
    *,
    device: str | None = None,
    cores: int | None = None,
    ram_bytes: int | None = None,
    gpus: Sequence[GpuMemory] | None = None,
) -> DevicePlan:
    """How ``num_jobs`` jobs share this machine: ``requested`` slots (None: ``auto``), ``job_memory_bytes`` the
    largest job's estimate (RAM on a CPU); ``device``, ``cores``, ``ram_bytes`` and ``gpus`` default to this
    machine's."""
    device = device or default_device().type
    cores = cores or available_cores()
    slots = min(requested or cores, max(1, num_jobs))
    gpus = list((visible_gpus() if slots > 1 and gpus is None else gpus) or ()) if device == "cuda" else []
    if device != "cuda" and requested is None and slots > 1:
        ram_bytes = ram_bytes if ram_bytes is not None else available_ram_bytes()
        if ram_bytes is not None:
            slots = max(1, min(slots, int(0.8 * ram_bytes) // (job_memory_bytes + WORKER_PROCESS_BYTES)))
    threads = max(1, cores // slots)
    cap = os.environ.get("OMP_NUM_THREADS", "")
    threads = min(threads, int(cap)) if cap.isdigit() and int(cap) > 0 else threads
    if device != "cuda":
        return DevicePlan("cpu", slots, threads)
    budgets, names = tuple(gpu_budget(gpu) for gpu in gpus), tuple(gpu.name for gpu in gpus)
    return DevicePlan("cuda", slots, threads, budgets, CUDA_CONTEXT_BYTES, names)


class Admission:
    """Whether a job fits on a device beside the jobs running there (each GPU's memory; a CPU has no budget)."""

    def __init__(self, plan: DevicePlan):
        self.plan = plan
        self.measured: dict[str | None, int] = {}  # memory_key -> estimate from measured peaks or an OOM

    def estimate(self, job: Job) -> int:
        return self.measured.get(job.memory_key, job.memory_bytes) if job.memory_key is not None else job.memory_bytes

    def room(self, job: Job, running: Sequence[Job], workers: int, new_worker: bool, device: int = 0) -> int | None:
        """The bytes ``device`` would have left with ``job`` started beside ``running`` (its jobs; ``workers``: its
        live workers; ``new_worker``: one is started for ``job``); None where the device has no budget."""
        if not self.plan.memory_budgets:
            return None
        held = (workers + new_worker) * self.plan.context_bytes + sum(self.estimate(other) for other in running)
        return self.plan.memory_budgets[device] - held - self.estimate(job)

    def admits(self, job: Job, running: Sequence[Job], workers: int, new_worker: bool, device: int = 0) -> bool:
        """Whether ``job`` may start on ``device`` beside ``running`` (:meth:`room`); an empty device takes any."""
        room = self.room(job, running, workers, new_worker, device)
        return not running or room is None or room >= 0

    def record_peak(self, job: Job, peak_bytes: int | None) -> None:
        if job.memory_key is not None and peak_bytes:
            estimate = int(MEASURED_HEADROOM * peak_bytes)
            self.measured[job.memory_key] = max(self.measured.get(job.memory_key, 0), estimate)

    def record_out_of_memory(self, job: Job) -> None:
        if job.memory_key is not None:
            self.measured[job.memory_key] = 2 * max(self.estimate(job), 1)


def one_line(error: BaseException) -> str:
    """An exception as one line: ``Type: message`` (the message alone of a ``BadInput`` or a ``SystemExit``: it is
    already a sentence)."""
    if isinstance(error, BadInput):
        text = str(error)
    elif isinstance(error, SystemExit):
        text = str(error.code).removeprefix("error: ")
    else:
        text = f"{type(error).__name__}: {error}"
    return " ".join(text.split())[:500]


def is_out_of_memory(error: BaseException) -> bool:
    """CUDA's out-of-memory error (``torch.OutOfMemoryError``, or its message inside another error)."""
    text = str(error)
    return type(error).__name__ == "OutOfMemoryError" or "CUDA out of memory" in text or "CUBLAS_STATUS_ALLOC" in text


def run_jobs(
    jobs: Sequence[Job],
    plan: DevicePlan,
    *,
    progress: bool = True,
    description: str = "jobs",
    on_done: Callable[[JobOutcome], None] | None = None,
) -> PoolReport:
    """Run ``jobs`` (in this order, as slots and memory free up) on ``plan``'s devices; every outcome comes back, in
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
        with logging_redirect_tqdm() if not bar.disable else contextlib.nullcontext():
            if plan.slots <= 1 or len(jobs) <= 1:
                report.max_concurrent = min(1, len(jobs))
                for job in jobs:
                    finish(_run_here(job))
            else:
                _WorkerPool(jobs, plan, finish, report).run()
    finally:
        bar.close()
    order = {id(job): i for i, job in enumerate(jobs)}
    report.outcomes.sort(key=lambda outcome: order[id(outcome.job)])
    return report


def _run_here(job: Job) -> JobOutcome:
    start = time.perf_counter()
    try:
        result, error = job.function(job.argument), None
    except (Exception, SystemExit) as caught:  # noqa: BLE001 - reported in one line; the others still run
        if not isinstance(caught, (BadInput, SystemExit)):  # their message is the whole story
            logger.error("%s: the traceback", job.name, exc_info=True)
        result, error = None, one_line(caught)
    return JobOutcome(job, result, error, ran_alone=True, seconds=time.perf_counter() - start)


# ------------------------------------------------------------------------------------------ side by side
@dataclass(eq=False)  # each worker is itself (hashable, compared by identity)
class _Worker:
    process: Any
    conn: Any
    device: int = 0  # the index of its device in the plan (0 on a CPU)
    job: int | None = None  # the index of the job it runs
    started: float = 0.0
    exclusive: bool = False  # a retry that runs alone: nothing else starts on its device while it runs
    shared: bool = False  # another job ran beside this one on its device


class _WorkerPool:
    """``jobs`` in spawned workers, each pinned to one device of ``plan``: pending jobs start in order as slots and
    each device's memory allow (:meth:`admit`), each end is recorded (:meth:`ended`) until none runs; however it
    ends (done, an error here, Ctrl-C), every worker is gone at the end."""

    def __init__(self, jobs: Sequence[Job], plan: DevicePlan, finish: Callable[[JobOutcome], None], report):
        import multiprocessing

        self.payloads = [_payload(job) for job in jobs]  # refused before anything runs
        self.jobs, self.plan, self.finish, self.report = jobs, plan, finish, report
        self.context = multiprocessing.get_context("spawn")
        self.admission = Admission(plan)
        self.devices: tuple[str | None, ...] = plan.gpus if plan.device == "cuda" and plan.gpus else (None,)
        self.pending: deque[int] = deque(range(len(jobs)))
        self.attempts = [0] * len(jobs)
        self.retry_alone: set[int] = set()
        self.workers: list[_Worker] = []
        self.log_level = logging.getLogger().getEffectiveLevel()

    def run(self) -> None:
        from multiprocessing.connection import wait

        try:
            self.admit()
            while self.running():
                handles = {h: w for w in self.running() for h in (w.conn, w.process.sentinel)}
                for worker in dict.fromkeys(handles[h] for h in wait(list(handles))):  # each worker once
                    self.ended(worker, *self.reply_of(worker))
                if not self.pending:
                    for worker in self.idle():
                        self.stop(worker)  # what they hold goes back to the jobs still running
                self.admit()
        finally:
            workers, self.workers = self.workers, []
            with _interrupts_deferred():  # a second Ctrl-C waits until every worker is gone
                _stop_processes(workers)

    def running(self, device: int | None = None) -> list[_Worker]:
        return [w for w in self.workers if w.job is not None and device in (None, w.device)]

    def idle(self, device: int | None = None) -> list[_Worker]:
        return [w for w in self.workers if w.job is None and device in (None, w.device)]

    def admit(self) -> None:
        """Start pending jobs in order while the first one has a device: nothing passes it (the caller's order,
        the longest first); it starts when a device frees up enough memory."""
        while self.pending and len(self.running()) < self.plan.slots:
            device = self.place(self.pending[0])
            if device is None:
                return
            self.start_job(self.pending.popleft(), device)

    def place(self, index: int) -> int | None:
        """The device job ``index`` starts on now: of those where it fits, the one left with the most memory (the
        fewest jobs, without a budget); a retry alone waits for an empty device. None: none has room."""
        job, exclusive, choices = self.jobs[index], index in self.retry_alone, []
        for device in range(len(self.devices)):
            busy, idle = self.running(device), self.idle(device)
            if any(worker.exclusive for worker in busy) or (exclusive and busy):
                continue
            running, workers = [self.jobs[worker.job] for worker in busy], len(busy) + len(idle)
            if exclusive or self.admission.admits(job, running, workers, not idle, device):
                room = self.admission.room(job, running, workers, not idle, device)
                choices.append((room if room is not None else 0, -len(busy), -device))
        return -max(choices)[2] if choices else None

    def start_job(self, index: int, device: int) -> None:
        busy, message = self.running(device), (self.payloads[index], self.jobs[index].log_path)
        worker = self.idle(device)[0] if self.idle(device) else self.start_worker(device)
        try:
            worker.conn.send(message)
        except (OSError, ValueError):  # an idle worker that died: a fresh one
            self.stop(worker)
            worker = self.start_worker(device)
            worker.conn.send(message)
        worker.job, worker.started = index, time.perf_counter()
        worker.exclusive, worker.shared = index in self.retry_alone, bool(busy)
        for other in busy:
            other.shared = True
        self.attempts[index] += 1
        self.report.max_concurrent = max(self.report.max_concurrent, len(self.running()))

    def start_worker(self, device: int) -> _Worker:
        _start_resource_tracker()
        parent, child = self.context.Pipe()
        arguments = (child, self.plan.threads_per_job, self.log_level, self.plan.device, self.devices[device])
        process = self.context.Process(target=_worker_main, args=arguments, daemon=False)
        # the worker inherits Ctrl-C blocked, so that it never sees a terminal's, not even while its interpreter
        # starts (this process stops it); and it is recorded whole
        with _interrupts_deferred():
            unblocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
            try:
                process.start()
            finally:
                signal.pthread_sigmask(signal.SIG_SETMASK, unblocked)
            worker = _Worker(process, parent, device)
            self.workers.append(worker)
        child.close()
        return worker

    def reply_of(self, worker: _Worker) -> tuple:
        """(result, error, out of memory, peak, seconds) as the worker sent it, or made here for a dead worker."""
        if worker.conn.poll():
            with contextlib.suppress(EOFError, OSError):
                return worker.conn.recv()
        worker.process.join(timeout=5)
        code = worker.process.exitcode
        killed = code == -signal.SIGKILL  # the kernel's out-of-memory killer
        why = "killed (out of memory?)" if killed else f"exit code {code}"
        return None, f"its worker process died: {why}", killed, None, time.perf_counter() - worker.started

    def ended(self, worker: _Worker, result, error: str | None, out_of_memory: bool, peak, seconds: float) -> None:
        """Record a job's end: its outcome, or a retry alone when it ran out of memory beside other jobs."""
        index, alone, job = worker.job, not worker.shared, self.jobs[worker.job]
        worker.job, worker.exclusive, worker.shared = None, False, False
        if error is None:
            self.admission.record_peak(job, peak)
            return self.finish(JobOutcome(job, result, None, self.attempts[index], alone, peak, seconds))
        self.stop(worker)  # a fresh process for what comes next
        if out_of_memory and not alone and index not in self.retry_alone:
            self.admission.record_out_of_memory(job)
            self.retry_alone.add(index)
            self.pending.append(index)
            logger.warning("%s ran out of memory beside other jobs: it runs again later, alone", job.name)
            return None
        return self.finish(JobOutcome(job, None, error, self.attempts[index], alone, peak, seconds))

    def stop(self, worker: _Worker) -> None:
        """Stop one idle (or dead) worker and forget it."""
        _stop_processes([worker])
        self.workers.remove(worker)


def _payload(job: Job) -> bytes:
    try:
        return pickle.dumps(job)
    except (pickle.PicklingError, TypeError, AttributeError) as error:
        raise ValueError(f"{job.name}: the job cannot be sent to a worker process: {one_line(error)}") from None


@contextlib.contextmanager
def _interrupts_deferred():
    """Ctrl-C and SIGTERM only noted inside (where Python handles them: in the main thread), so that what the block
    does is never cut in half; the first one noted is raised again as the block ends."""
    noted, previous = [], {}
    if threading.current_thread() is threading.main_thread():
        for number in (signal.SIGINT, signal.SIGTERM):
            if callable(signal.getsignal(number)):  # a Python handler (KeyboardInterrupt's, the dispatcher's)
                previous[number] = signal.signal(number, lambda signum, frame: noted.append(signum))
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
        if noted:
            signal.raise_signal(noted[0])


# multiprocessing's resource tracker reports the semaphores of a worker killed mid-job (one that outlived
# STOP_SECONDS) when this process ends, as it removes them: a warning after the run's last line. It takes this
# process's -W options when it starts.
_QUIET_TRACKER = "ignore:resource_tracker:UserWarning"


def _start_resource_tracker() -> None:
    """multiprocessing's resource tracker, started before any worker (starting it unblocks SIGINT in this thread),
    told to remove a killed worker's semaphores without a warning."""
    from multiprocessing import resource_tracker

    if _QUIET_TRACKER not in sys.warnoptions:
        sys.warnoptions.append(_QUIET_TRACKER)
    resource_tracker.ensure_running()


def _stop_processes(workers: Sequence[_Worker]) -> None:
    """An idle worker is told to stop, a running one terminated (SIGTERM: it unwinds at once, its job's own
    workers with it); whichever is still alive after :data:`STOP_SECONDS` is killed."""
    for worker in workers:
        if worker.job is None:
            with contextlib.suppress(OSError, ValueError):
                worker.conn.send(None)
        elif worker.process.is_alive():
            worker.process.terminate()
    deadline = time.monotonic() + STOP_SECONDS
    for worker in workers:
        worker.process.join(timeout=max(0.0, deadline - time.monotonic()))
        if worker.process.is_alive():
            worker.process.kill()
            worker.process.join()
        worker.conn.close()


# ------------------------------------------------------------------------------------------ in a worker
class _Stopped(SystemExit):
    """SIGTERM in a worker: the main process stops it. A SystemExit, so the process ends quietly with its code."""


def _stopped(signum, frame):
    raise _Stopped(128 + signal.SIGTERM)


def _worker_main(conn, threads: int, log_level: int, device: str, visible_device: str | None) -> None:
    """A worker: on SIGTERM its job unwinds (its ``finally`` blocks, its DataLoader's workers); either way it then ends
    at once, without the seconds an interpreter with torch loaded takes to tear down: it has nothing left to write."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the main process, which stops the workers
    signal.signal(signal.SIGTERM, _stopped)
    code = 0
    try:
        _serve(conn, threads, log_level, device, visible_device)
    except _Stopped as stopped:
        import multiprocessing

        for child in multiprocessing.active_children():
            child.terminate()
        code = stopped.code
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _serve(conn, threads: int, log_level: int, device: str, visible_device: str | None) -> None:
    if visible_device is not None:
        os.environ["CUDA_VISIBLE_DEVICES"] = visible_device  # its one device: the Trainer must not spread over several
    logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", level=log_level)
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):  # torch, once a job imports it, starts this many threads
        os.environ[name] = str(threads)
    terminal = os.dup(1), os.dup(2)
    while (message := _receive(conn)) is not None:  # None: told to stop, or the main process went
        reply = _run_job(*message, threads, device, terminal)
        try:
            conn.send(reply)
        except (pickle.PicklingError, TypeError, AttributeError) as error:  # an unpicklable result
            conn.send((None, f"result not picklable: {one_line(error)}", False, reply[3], reply[4]))


def _receive(conn):
    try:
        return conn.recv()
    except EOFError:
        return None


def _run_job(payload: bytes, log_path: str | None, threads: int, device: str, terminal: tuple[int, int]) -> tuple:
    """One job in this worker, its output in ``log_path``: (result, error, out of memory, peak, seconds)."""
    sys.stdout.flush()
    sys.stderr.flush()
    log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644) if log_path else None
    for target in (1, 2) if log is not None else ():
        os.dup2(log, target)
    _reset_cuda(device)
    if "torch" in sys.modules:  # as the last job left it: a job may set its own
        sys.modules["torch"].set_num_threads(threads)
    start = time.perf_counter()
    try:
        job = pickle.loads(payload)
        reply = (job.function(job.argument), None, False)
    except _Stopped:
        raise
    except BaseException as error:  # noqa: BLE001 - every failure is the job's, reported, and the worker goes on
        traceback.print_exc()
        reply = (None, one_line(error), is_out_of_memory(error))
    peak = _reset_cuda(device)
    job = None
    gc.collect()
    return_freed_memory()  # what the job freed goes back before this worker's next job
    sys.stdout.flush()
    sys.stderr.flush()
    if log is not None:
        os.dup2(terminal[0], 1)
        os.dup2(terminal[1], 2)
        os.close(log)
    return (*reply, peak, time.perf_counter() - start)


def _reset_cuda(device: str) -> int | None:
    """The highest memory CUDA reserved since the last reset (None off CUDA), then its cache and peak reset."""
    if device != "cuda" or "torch" not in sys.modules or not sys.modules["torch"].cuda.is_initialized():
        return None
    import torch

    peak = int(torch.cuda.max_memory_reserved())
    gc.collect()
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    return peak
