"""Tasks in worker processes that a Ctrl-C stops at once (:func:`run_tasks`, for ``bioptimus prepare-corpus``).

Each ``spawn`` worker takes one task at a time over its pipe and ignores SIGINT (blocked while it starts), so a
Ctrl-C reaches the main process alone; whatever ends the main process's wait (an interrupt, a task's error, a worker
that died), every worker is terminated before the exception goes on.
"""

from __future__ import annotations

import signal
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any


_STOP_GRACE_SECONDS = 1.0  # after SIGTERM, before SIGKILL
_EXIT_SECONDS = 30.0  # for a worker told to stop after its last task (its results are in)


def _worker(connection) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the main process's: it stops the workers
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    while True:
        try:
            message = connection.recv()
        except (EOFError, OSError):
            return
        if message is None:
            return
        index, function, arguments = message
        try:
            reply = (index, True, function(*arguments))
        except Exception as error:  # noqa: BLE001 - the main process raises it
            reply = (index, False, error)
        try:
            connection.send(reply)
        except Exception as error:  # noqa: BLE001 - an unpicklable result or exception
            connection.send((index, False, RuntimeError(f"{type(error).__name__}: {error}")))


def _start(context, count: int) -> list[tuple[Any, Any]]:
    """``count`` workers, each (process, connection); SIGINT is blocked while they start (they inherit the mask,
    so none sees a Ctrl-C before it ignores it) and delivered here afterwards."""
    from multiprocessing import resource_tracker

    resource_tracker.ensure_running()  # first: starting it unblocks SIGINT here, and the workers would inherit that
    workers = []
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        for _ in range(count):
            mine, theirs = context.Pipe()
            process = context.Process(target=_worker, args=(theirs,), daemon=True)
            process.start()
            theirs.close()
            workers.append((process, mine))
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
    return workers


def _stop(workers: list[tuple[Any, Any]], at_once: bool) -> None:
    for process, connection in workers:
        if at_once and process.is_alive():
            process.terminate()
        elif not at_once:
            try:
                connection.send(None)
            except OSError:
                pass
    for process, connection in workers:
        process.join(_STOP_GRACE_SECONDS if at_once else _EXIT_SECONDS)
        if process.is_alive():
            process.kill()
            process.join()
        connection.close()


def run_tasks(function: Callable, tasks: Sequence[tuple], workers: int, on_done: Callable[[int, Any], None]) -> list:
    """``function(*task)`` for each task in ``workers`` processes (in this one for one worker or task); results in
    task order. ``on_done(i, result)`` is called here as each ends. A task's exception is raised here (the other
    workers stopped)."""
    import multiprocessing
    from multiprocessing.connection import wait

    results: list = [None] * len(tasks)
    if workers <= 1 or len(tasks) <= 1:
        for index, task in enumerate(tasks):
            results[index] = function(*task)
            on_done(index, results[index])
        return results
    pool = _start(multiprocessing.get_context("spawn"), min(workers, len(tasks)))
    pending, busy = deque(range(len(tasks))), {}
    finished = False
    try:
        for process, connection in pool:
            if pending:
                index = pending.popleft()
                connection.send((index, function, tasks[index]))
                busy[connection] = (process, index)
        while busy:
            sentinels = {process.sentinel: connection for connection, (process, _) in busy.items()}
            for ready in wait([*busy, *sentinels]):
                connection = sentinels.get(ready, ready)
                if connection not in busy:
                    continue
                process, index = busy.pop(connection)
                if ready in sentinels and not connection.poll():
                    raise RuntimeError(f"a worker process ended (exit code {process.exitcode}) during task {index}")
                index, ok, value = connection.recv()
                if not ok:
                    raise value
                results[index] = value
                on_done(index, value)
                if pending:
                    following = pending.popleft()
                    connection.send((following, function, tasks[following]))
                    busy[connection] = (process, following)
        finished = True
    finally:
        _stop(pool, at_once=not finished)
    return results
