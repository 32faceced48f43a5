"""Publishing releases in the background while training: a hook for ``PhaseReleases(on_release=...)``.

A Hub failure (unreachable, no token, a conflict) never stops training: the release stays on disk and a warning
gives the ``bioptimus publish`` command that publishes it later; at the end, the run fails (:class:`PublishFailed`)
with that command in its last lines.
"""

from __future__ import annotations

import logging
import os
import queue
import shlex
import threading
from dataclasses import fields, replace
from typing import Any

from ..utils.errors import RunFailed
from .hub import VersionReport, publish_releases
from .publish_config import PublishArguments
from .release_config import ReleaseHub


logger = logging.getLogger(__name__)


def publish_command(args: PublishArguments) -> str:
    """The ``bioptimus publish`` command line of ``args``: every flag that differs from its default, never the token."""
    parts = ["bioptimus", "publish"]
    for f in fields(args):
        value = getattr(args, f.name)
        if f.name == "hub_token" or value is None or value == f.default:
            continue
        values = value if isinstance(value, list) else [str(value).lower() if isinstance(value, bool) else value]
        parts += [f"--{f.name}", *map(str, values)]
    return shlex.join(parts)


class PublishFailed(RunFailed):
    """A run's releases are written but some were not published: the message says which, why, and how to."""


class ReleasePublisher:
    """``publisher(release_dir)`` returns at once; a daemon thread publishes the releases one after another, with
    ``args`` (its ``run_dir`` set to each release's).

    Any failure is caught: the release stays on disk and a warning gives the command that publishes it later
    (``failed``). With ``at_end`` (``--hub_strategy end``) releases wait for `wait`, which gives pending publications
    a bounded time at the end of training.
    """

    def __init__(self, args: PublishArguments, at_end: bool = False):
        self.args, self.at_end = args, at_end  # repr(args) leaves the token out
        self.published: list[VersionReport] = []
        self.failed: list[tuple[str, str]] = []  # (release_dir, the command that publishes it later)
        self.reasons: list[str] = []  # why each failed, its first line
        self._deferred: list[str] = []
        self._queue: queue.Queue = queue.Queue()
        threading.Thread(target=self._work, name="bioptimus-hub-publisher", daemon=True).start()

    def __repr__(self) -> str:
        return f"ReleasePublisher({self.args!r}, at_end={self.at_end})"

    def __call__(self, release_dir: str | os.PathLike) -> None:
        (self._deferred.append if self.at_end else self._queue.put)(str(release_dir))

    def _work(self) -> None:
        while True:
            args = replace(self.args, run_dir=self._queue.get())
            try:
                self.published += publish_releases(args)
            except BaseException as error:  # noqa: BLE001 - publishing must never take training down
                failure = f"{type(error).__name__}: {error}".strip().splitlines()[0]
                self.failed.append((args.run_dir, publish_command(args)))
                self.reasons.append(failure)
                logger.warning(
                    f"Publishing {args.run_dir} to the Hub failed ({failure}). The release is kept on disk; publish it "
                    f"later with:\n  {self.failed[-1][1]}"
                )
            finally:
                self._queue.task_done()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait up to ``timeout`` seconds for queued publications (first queueing those kept for the end); True when
        none is left."""
        for release_dir in self._deferred:
            self._queue.put(release_dir)
        self._deferred.clear()
        done = threading.Event()
        threading.Thread(target=lambda: (self._queue.join(), done.set()), daemon=True).start()
        if done.wait(timeout):
            return True
        logger.warning(
            "Hub publication still running after %ss; what it leaves unpublished is published later by `%s`",
            timeout,
            publish_command(self.args),
        )
        return False

    def check(self, timeout: float | None = None) -> None:
        """:meth:`wait`, then raise :class:`PublishFailed` if a release was not published: which, the first reason,
        and, last, the one command that publishes what is missing (publishing is idempotent)."""
        done = self.wait(timeout)
        if done and not self.failed:
            return
        names = ", ".join(os.path.basename(run_dir) for run_dir, _ in self.failed) or "some releases"
        why = f" ({self.reasons[0]})" if self.reasons else f" (still publishing after {timeout}s)"
        kept = os.path.join(self.args.run_dir, "releases")
        raise PublishFailed(
            f"--push_to_hub: {names} not published{why}; the releases are kept in {kept}. Publish "
            f"them, with the same token, by running:\n  {publish_command(self.args)}"
        )


def start_release_publisher(hub: ReleaseHub | None, training_args: Any) -> ReleasePublisher | None:
    """The publisher of a training run's releases on its main process (None elsewhere, or without ``--push_to_hub``):
    each release as its phase ends, or all of them at the end with ``--hub_strategy end``."""
    if hub is None or training_args.process_index != 0:
        return None
    settings = hub.settings
    args = PublishArguments(
        run_dir=str(training_args.output_dir),
        hub_model_id=settings.repo_id,
        mode=hub.mode,
        hub_private_repo=settings.private,
        hub_token=settings.token,
    )
    return ReleasePublisher(args, at_end=settings.strategy == "end")
