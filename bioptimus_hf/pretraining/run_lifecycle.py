"""A training run's life around ``trainer.train()`` (``bioptimus pretrain``, ``bioptimus distill``): its schedule and
corpus checked before any model (:func:`resolve_run_schedule`), its output directory (:func:`open_output_dir`: one
owner at a time by ``flock``, resume from the last complete checkpoint, never overwrite a run by accident; a
half-written checkpoint is renamed ``checkpoint-N.incomplete``) and its end (:func:`finish_run`)."""

from __future__ import annotations

import errno
import fcntl
import json
import logging
import os
import re
import socket
import sys
import weakref
import zipfile
from pathlib import Path
from typing import Any

from ..utils.secrets import redact_argv, redact_text
from .phases import PhaseSchedule


logger = logging.getLogger(__name__)

LOCK_FILE = ".bioptimus-run.lock"
TRAINER_STATE = "trainer_state.json"
_CHECKPOINT = re.compile(r"^checkpoint-(\d+)$")
# Files a run may leave in output_dir that do not make it "a finished run".
_IGNORED_ENTRIES = {LOCK_FILE}


class OutputDirBusyError(RuntimeError):
    """Another process holds the output directory."""


class OutputDirLock:
    """Exclusive lock of an output directory for the life of this process (or until :meth:`release`)."""

    def __init__(self, output_dir: str | os.PathLike):
        self.path = Path(output_dir) / LOCK_FILE
        self._handle = None

    def acquire(self) -> "OutputDirLock":
        self.path.parent.mkdir(parents=True, exist_ok=True)
        while True:
            handle = open(self.path, "a+", encoding="utf-8")
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                handle.seek(0)
                holder = redact_text(handle.read().strip()) or "another process"
                handle.close()
                raise OutputDirBusyError(
                    f"output directory {self.path.parent} is in use by {holder}; two runs writing into one "
                    "directory would corrupt each other's checkpoints and releases. Wait for it to finish, stop it, "
                    "or use another --output_dir"
                ) from None
            if self._is_current(handle):
                break
            handle.close()  # locked a file that its holder removed as it let go: lock the one now at the path
        handle.seek(0)
        handle.truncate()
        # The process's whole command line, the interpreter by its name only.
        command = " ".join(redact_argv([os.path.basename(sys.orig_argv[0]), *sys.orig_argv[1:]]))[:300]
        handle.write(f"process {os.getpid()} on {socket.gethostname()} ({command})\n")
        handle.flush()
        self._handle = handle
        return self

    def check(self) -> None:
        """Raise ``FileNotFoundError`` naming the directory if it was removed (or replaced) since it was locked:
        the Trainer would make it again and write on, a run with holes."""
        try:
            held = os.path.samestat(os.stat(self.path), os.fstat(self._handle.fileno()))
        except FileNotFoundError:
            held = False
        if not held:
            raise FileNotFoundError(errno.ENOENT, "removed while the run wrote into it", str(self.path.parent))

    def watch(self) -> Any:
        """A ``TrainerCallback`` that :meth:`check` s the directory after each checkpoint and at the end."""
        from transformers import TrainerCallback

        lock = weakref.ref(self)  # the watch keeps no run's lock held after its run

        class WatchOutputDir(TrainerCallback):
            def on_save(self, args, state, control, **kwargs):
                if (held := lock()) is not None:
                    held.check()

            on_train_end = on_save

        return WatchOutputDir()

    def _is_current(self, handle) -> bool:
        try:
            return os.stat(self.path).st_ino == os.fstat(handle.fileno()).st_ino
        except FileNotFoundError:
            return False

    def release(self) -> None:
        """Remove the lock file, then unlock: removed while locked, no other run can hold it at that moment."""
        if self._handle is not None:
            self.path.unlink(missing_ok=True)
            fcntl.flock(self._handle.fileno(), fcntl.LOCK_UN)
            self._handle.close()
            self._handle = None

    def __enter__(self):
        return self if self._handle is not None else self.acquire()

    def __exit__(self, *exc):
        self.release()


def checkpoint_step(checkpoint: str | os.PathLike) -> int:
    """The global step a complete checkpoint was saved at."""
    return int(json.loads((Path(checkpoint) / TRAINER_STATE).read_text(encoding="utf-8"))["global_step"])


def why_incomplete(checkpoint: Path) -> str | None:
    """Why ``checkpoint`` cannot be resumed from (None if it can): no readable ``trainer_state.json``, or a weights
    or state file cut short (a crash or a full disk while saving), found from its header or zip directory."""
    from safetensors import safe_open

    try:
        state = json.loads((checkpoint / TRAINER_STATE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        state = None
    if not (isinstance(state, dict) and "global_step" in state):
        return f"no readable {TRAINER_STATE}"
    for path in sorted(checkpoint.iterdir()):
        try:
            if path.suffix == ".safetensors":
                with safe_open(path, "pt"):
                    pass
            elif path.suffix in (".pt", ".pth", ".bin"):  # torch.save's zip archives
                zipfile.ZipFile(path).close()
        except Exception as error:  # noqa: BLE001 - whatever the reader says, the file cannot be loaded
            return f"{path.name} cannot be read: {(str(error) or type(error).__name__).splitlines()[0]}"
    return None


def last_complete_checkpoint(output_dir: str | os.PathLike, set_aside_incomplete: bool = True) -> Path | None:
    """The newest complete ``checkpoint-N`` in ``output_dir`` (None if none), incomplete newer ones set aside (the
    module docstring)."""
    output_dir = Path(output_dir)
    if not output_dir.is_dir():
        return None
    checkpoints = sorted(
        (p for p in output_dir.iterdir() if p.is_dir() and _CHECKPOINT.match(p.name)),
        key=lambda p: int(_CHECKPOINT.match(p.name).group(1)),
        reverse=True,
    )
    for checkpoint in checkpoints:
        if (why := why_incomplete(checkpoint)) is None:
            return checkpoint
        if set_aside_incomplete:
            aside = checkpoint.with_name(checkpoint.name + ".incomplete")
            suffix = 1
            while aside.exists():
                suffix += 1
                aside = checkpoint.with_name(f"{checkpoint.name}.incomplete{suffix}")
            checkpoint.rename(aside)
            logger.warning(
                "%s is incomplete: %s (the run was probably killed, or the disk full, while saving it); set aside as "
                "%s, resuming from an earlier checkpoint",
                checkpoint,
                why,
                aside.name,
            )
    return None


def prepare_output_dir(training_args: Any) -> tuple[Path | None, OutputDirLock | None]:
    """Lock ``output_dir`` (main process) and find the checkpoint to resume from: ``(checkpoint or None, lock or
    None)``. Raises :class:`OutputDirBusyError` when another run holds the directory and ``FileExistsError`` when it
    holds a run without checkpoints (unless ``--overwrite_output_dir``). ``--resume_from_checkpoint`` is used as
    given."""
    output_dir = Path(training_args.output_dir)
    lock = OutputDirLock(output_dir).acquire() if training_args.process_index == 0 else None
    if lock is not None:
        from ..releases.writer import recover_interrupted_replacements

        recover_interrupted_replacements(output_dir / "releases")  # a release replacement killed mid-way
    if training_args.resume_from_checkpoint:
        checkpoint = Path(training_args.resume_from_checkpoint)
        if why := why_incomplete(checkpoint):
            raise FileNotFoundError(f"--resume_from_checkpoint {checkpoint}: incomplete, {why}")
        return checkpoint, lock
    checkpoint = last_complete_checkpoint(output_dir, set_aside_incomplete=training_args.process_index == 0)
    if checkpoint is not None:
        return checkpoint, lock
    leftovers = [p.name for p in output_dir.iterdir() if p.name not in _IGNORED_ENTRIES] if output_dir.is_dir() else []
    if leftovers and not training_args.overwrite_output_dir:
        if lock is not None:
            lock.release()
        raise FileExistsError(
            f"output directory {output_dir} is not empty ({', '.join(sorted(leftovers)[:5])}"
            f"{'...' if len(leftovers) > 5 else ''}) but holds no complete checkpoint to resume; use "
            "--overwrite_output_dir to write into it anyway (existing releases would be replaced)"
        )
    return None, lock


def stored_schedule(checkpoint: str | os.PathLike) -> PhaseSchedule | None:
    """The curriculum schedule a checkpoint was trained under (None for checkpoints that do not record one)."""
    from .callback import PhaseScheduleCallback

    state = json.loads((Path(checkpoint) / TRAINER_STATE).read_text(encoding="utf-8"))

    class _State:  # what stored_attributes reads from a TrainerState
        stateful_callbacks = state.get("stateful_callbacks")

    attributes = PhaseScheduleCallback.stored_attributes(_State) or {}
    return PhaseSchedule.from_dict(attributes["schedule"]) if attributes.get("schedule") else None


def check_resume_schedule(
    checkpoint: str | os.PathLike | None, schedule: PhaseSchedule, allow_change: bool
) -> str | None:
    """Refuse (``ScheduleMismatchError``) a resume whose schedule differs from the checkpoint's; returns the
    change that ``allow_change`` accepted, or None when there is none."""
    from .callback import describe_schedule_change, schedule_mismatch

    if checkpoint is None:
        return None
    previous = stored_schedule(checkpoint)
    if previous is None:
        return None
    change = describe_schedule_change(previous, schedule)
    if change and not allow_change:
        raise schedule_mismatch(str(checkpoint), change)
    return change


def resolve_run_schedule(args: Any) -> tuple[Any, PhaseSchedule, Any]:
    """Step 1 of a run: ``(curriculum, schedule, corpus report)`` of ``args`` (``TrainingArguments`` with the corpus
    and curriculum settings), everything that can be checked without a model, so that bad input fails in seconds.
    Raises ValueError/FileNotFoundError naming the flag or file."""
    from .bioptimus_config import build_curriculum
    from .data import check_pretraining_data

    if args.max_steps is None or args.max_steps <= 0:
        raise ValueError("--max_steps must be > 0: curriculum phases are scheduled in optimizer steps")
    curriculum = build_curriculum(args)
    return curriculum, curriculum.resolve(args.max_steps), check_pretraining_data(args)


def open_output_dir(args: Any, schedule: PhaseSchedule) -> tuple[Path | None, OutputDirLock | None]:
    """Step 2 of a run: lock ``output_dir`` and find the checkpoint to resume from, refusing a resume under another
    schedule (:func:`prepare_output_dir` + :func:`check_resume_schedule`, with ``args.overwrite_output_dir`` and
    ``args.allow_schedule_change``); the main process says which checkpoint and step a run resumes from."""
    checkpoint, lock = prepare_output_dir(args)
    try:
        check_resume_schedule(checkpoint, schedule, args.allow_schedule_change)
    except BaseException:
        if lock is not None:
            lock.release()
        raise
    step = checkpoint_step(checkpoint) if checkpoint is not None else 0
    if checkpoint is not None and step < schedule.max_steps and args.process_index == 0:
        # Shown at the default verbosity (warnings): the progress bar of a resumed run starts at 0 and jumps.
        logger.warning("resuming from %s at step %d of %d", checkpoint, step, schedule.max_steps)
    return checkpoint, lock


def finish_run(
    trainer: Any, collator: Any, train_result: Any, publisher: Any = None, publish_timeout: float = 600
) -> list[str]:
    """Save the final model, metrics and state; wait for pending publications; return the release names. Raises
    ``PublishFailed`` (its message the command that publishes them) if ``publisher`` left a release unpublished."""
    from ..releases.record import find_releases

    trainer.save_model()
    metrics = dict(train_result.metrics)
    totals = collator.stats.summed_over_ranks()  # every rank calls finish_run
    for index, phase in enumerate(collator.phases):
        fraction = totals.fraction(index)
        if fraction is not None:
            metrics[f"realised_masked_fraction_v{phase.version}"] = round(fraction, 5)
    trainer.log_metrics("train", metrics)
    trainer.save_metrics("train", metrics)
    trainer.save_state()
    if not trainer.is_world_process_zero():
        return []
    try:
        found = find_releases(trainer.args.output_dir)
    except FileNotFoundError:
        found = []
    kept = [p.name for p in Path(trainer.args.output_dir).glob("checkpoint-*") if _CHECKPOINT.match(p.name)]
    kept = ", ".join(sorted(kept, key=lambda name: int(name.split("-")[1]))) or "(none)"
    limit = trainer.args.save_total_limit
    removed = f" (older ones removed: --save_total_limit {limit})" if limit else ""
    load = f"; load one with AutoModelForMaskedLM.from_pretrained('{found[-1]}')" if found else ""
    releases = ", ".join(p.name for p in found) or "(none)"
    # At the default verbosity (warnings): what the run left, and how to use it.
    logger.warning(
        f"run finished: {trainer.args.output_dir} holds releases {releases} and checkpoints {kept}{removed}{load}"
    )
    if publisher is not None:
        publisher.check(timeout=publish_timeout)  # one not published: the run fails, with the command that does
    return [p.name for p in found]
