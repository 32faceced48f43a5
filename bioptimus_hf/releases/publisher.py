"""Publishing releases in the background while training: a hook for ``PhaseScheduleCallback(on_release=...)``.

A Hub failure (unreachable, no token, a conflict) never stops training: the release stays on disk and a
warning gives the exact command that publishes it later.
"""

from __future__ import annotations

import logging
import os
import queue
import shlex
import threading
from collections.abc import Mapping
from typing import Any

from .hub import DEFAULT_COMMIT_MESSAGE, MODES, VersionReport, publish_releases
from .release_config import ReleaseHub


logger = logging.getLogger(__name__)


def publish_command(
    release_dir: str | os.PathLike,
    repo_id: str,
    mode: str = "branches",
    private: bool | None = None,
    extra: Mapping[str, Any] | None = None,
) -> str:
    """The CLI command that publishes ``release_dir`` later (shown when publishing from training failed)."""
    parts = ["bioptimus", "publish", "--run_dir", str(release_dir), "--hub_model_id", repo_id, "--mode", mode]
    if private:
        parts.append("--hub_private_repo")
    for key, value in (extra or {}).items():
        if value is None or value is False:
            continue
        if value is True:
            parts.append(f"--{key}")
        elif isinstance(value, (list, tuple)):
            parts += [f"--{key}", *map(str, value)]
        else:
            parts += [f"--{key}", str(value)]
    return shlex.join(parts)


class ReleasePublisher:
    """Callable handed to the training loop: ``publisher(release_dir)`` returns at once.

    Releases are published one after another by a daemon thread. Any failure (Hub unreachable, no token,
    conflict...) is caught: the release stays on disk and a warning gives the exact command to publish it
    later. ``wait(timeout)`` lets the caller give pending uploads a bounded time at the end of training.
    """

    def __init__(
        self,
        repo_id: str,
        private: bool | None = None,
        mode: str = "branches",
        token: str | None = None,
        at_end: bool = False,
        **publish_kwargs: Any,
    ):
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        self.repo_id, self.private, self.mode = repo_id, private, mode
        # --hub_strategy end: releases are collected and published when `wait` is called, at the end of training
        self.at_end = at_end
        self._deferred: list[str] = []
        self._token = token  # kept private: never part of repr, logs or commands
        self._publish_kwargs = publish_kwargs
        self._queue: queue.Queue = queue.Queue()
        self.published: list[VersionReport] = []
        self.failed: list[tuple[str, str]] = []  # (release_dir, command to publish it later)
        self._thread = threading.Thread(target=self._work, name="bioptimus-hub-publisher", daemon=True)
        self._thread.start()

    def __repr__(self) -> str:
        return f"ReleasePublisher(repo_id={self.repo_id!r}, mode={self.mode!r}, private={self.private})"

    def command(self, release_dir: str | os.PathLike) -> str:
        extra = {
            k: self._publish_kwargs.get(k)
            for k in ("organization", "commit_message", "license", "datasets")
            if self._publish_kwargs.get(k) not in (None, DEFAULT_COMMIT_MESSAGE)
        }
        return publish_command(release_dir, self.repo_id, self.mode, self.private, extra)

    def __call__(self, release_dir: str | os.PathLike) -> None:
        if self.at_end:
            self._deferred.append(str(release_dir))
            return
        try:
            self._queue.put(str(release_dir))
        except Exception:  # pragma: no cover - a Queue.put without a bound cannot fail, but never raise here
            logger.warning(
                "could not schedule publication of %s; publish it later with: %s",
                release_dir,
                self.command(release_dir),
            )

    def _work(self) -> None:
        while True:
            release_dir = self._queue.get()
            try:
                self.published += publish_releases(
                    release_dir,
                    self.repo_id,
                    mode=self.mode,
                    private=self.private,
                    token=self._token,
                    **self._publish_kwargs,
                )
            except BaseException as error:  # noqa: BLE001 - publishing must never take training down
                command = self.command(release_dir)
                self.failed.append((release_dir, command))
                logger.warning(
                    "Publishing %s to the Hub failed (%s: %s). The release is kept on disk; publish it "
                    "later with:\n  %s",
                    release_dir,
                    type(error).__name__,
                    error,
                    command,
                )
            finally:
                self._queue.task_done()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait up to ``timeout`` seconds for queued publications (first queueing those kept for the end); True
        when none is left."""
        for release_dir in self._deferred:
            self._queue.put(release_dir)
        self._deferred.clear()
        done = threading.Event()

        def join() -> None:
            self._queue.join()
            done.set()

        threading.Thread(target=join, daemon=True).start()
        finished = done.wait(timeout)
        if not finished:
            logger.warning(
                "Hub publication still running after %ss; unfinished releases can be published "
                "later with `bioptimus publish --run_dir <release_dir> --hub_model_id %s`",
                timeout,
                self.repo_id,
            )
        return finished


def make_release_publisher(
    repo_id: str, private: bool | None = None, mode: str = "branches", token: str | None = None, **publish_kwargs: Any
) -> ReleasePublisher:
    """A ``Callable[[str | Path], None]`` that publishes each release in the background (see `ReleasePublisher`).

    ``publish_kwargs`` go to `publish_releases` (``organization``, ``commit_message``, ``license``,
    ``endpoint``, ``force``...).
    """
    return ReleasePublisher(repo_id, private=private, mode=mode, token=token, **publish_kwargs)


def start_release_publisher(hub: ReleaseHub | None, training_args: Any) -> ReleasePublisher | None:
    """The publisher of a training run's releases on its main process (None elsewhere, or without
    ``--push_to_hub``): each release as its phase ends, or all of them at the end with ``--hub_strategy end``."""
    if hub is None or training_args.process_index != 0:
        return None
    settings = hub.settings
    return make_release_publisher(
        settings.repo_id,
        private=settings.private,
        mode=hub.mode,
        token=settings.token,
        at_end=settings.strategy == "end",
    )
