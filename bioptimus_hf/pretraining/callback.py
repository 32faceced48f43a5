"""PhaseScheduleCallback: walks a Trainer run through the curriculum phases and writes a release per phase."""

from __future__ import annotations

import logging
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from transformers import Trainer, TrainerCallback
from transformers.trainer_callback import ExportableState

from ..releases.naming import release_dir_name
from ..releases.record import PHASE_FILE, ReleaseInfo, RunFacts
from ..releases.writer import write_release
from ..utils.distributed import rank_and_world, wait_for_everyone
from .collator import CurriculumDataCollator, MaskingStatistics
from .phases import BIOPTIMUS_PHASE_FRACTIONS, Curriculum, PhaseSchedule


logger = logging.getLogger(__name__)


# The pending release's "phase index" when it is the end of the lexical warm-up (PhaseReleases.lexical_warmup_release).
WARMUP_RELEASE = -1
# The key of the curriculum's metrics that every log carries once they are added (PhaseScheduleCallback.add_metrics).
CURRICULUM_PHASE_KEY = "curriculum_phase"


# Why a rank may not see a release the main process wrote.
SHARED_FILESYSTEM = " written by the main process: is output_dir on a filesystem shared by all nodes?"


class ScheduleMismatchError(RuntimeError):
    """A run resumed with a curriculum schedule other than the one its checkpoint was trained under."""


@dataclass
class PhaseReleases:
    """What :class:`PhaseScheduleCallback` releases at each phase end.

    ``write``: False writes nothing. ``directory``: default ``<output_dir>/releases``. ``run_info``: the records'
    model and data facts (:class:`~bioptimus_hf.releases.record.RunFacts`). ``on_release``: callables given each
    release directory (failures logged). ``lexical_warmup_release``: a version for the model after the warm-up."""

    write: bool = True
    directory: str | os.PathLike | None = None
    run_info: Mapping[str, Any] = field(default_factory=dict)
    on_release: Sequence[Callable[[Path], None]] = ()
    lexical_warmup_release: str | None = None


class PhaseScheduleCallback(TrainerCallback, ExportableState):
    """Switch the collator's phase between optimizer steps and release a model at each phase end.

    One Trainer run with one learning-rate schedule spans all phases, as in the paper. The Trainer must mask the
    collator's batches (:class:`~.bioptimus_trainer.BioptimusTrainer` or :class:`~.collator.CurriculumMaskingMixin`).

    Args:
        collator: the run's :class:`CurriculumDataCollator` (its ``phases`` define the curriculum).
        phase_steps: steps per phase, as counts or fractions of the steps after the warm-up (default 0.1/0.2/0.3/0.4).
        schedule: the run's :class:`~.phases.PhaseSchedule`, resolved before (then ``phase_steps`` and
            ``lexical_warmup_steps`` are ignored). Default: resolved when training starts.
        lexical_warmup_steps: steps (or a fraction) of a lexical warm-up before the first phase (no release).
        evaluate_at_phase_end: store each phase end's held-out MLM loss in its release (needs an eval dataset).
        allow_schedule_change: accept resuming under another schedule (else :class:`ScheduleMismatchError`).
        releases: what is released (:class:`PhaseReleases`; default: every phase end, into ``<output_dir>/releases``).

    The phase follows from ``state.global_step``, so a resumed run continues in its phase; only the main process
    writes releases. :func:`add_callback_first` puts this callback ahead of a Trainer's reporters."""

    def __init__(
        self,
        collator: CurriculumDataCollator,
        phase_steps: Sequence[float | int] = BIOPTIMUS_PHASE_FRACTIONS,
        *,
        schedule: PhaseSchedule | None = None,
        lexical_warmup_steps: float | int = 0,
        evaluate_at_phase_end: bool = True,
        allow_schedule_change: bool = False,
        releases: PhaseReleases | None = None,
    ):
        self.collator = collator
        self.planned_schedule = schedule
        self.curriculum = Curriculum(
            collator.phases,
            tuple(schedule.step_counts if schedule is not None else phase_steps),
            source="phase_steps",
            lexical_warmup_steps=schedule.lexical_warmup_steps if schedule is not None else lexical_warmup_steps,
        )
        self.evaluate_at_phase_end = evaluate_at_phase_end
        self.allow_schedule_change = allow_schedule_change
        self.releases = releases or PhaseReleases()
        self.schedule: PhaseSchedule | None = None
        self.schedule_changes: list[dict[str, Any]] = []
        self.phase_history: list[tuple[int, str]] = []
        self.run_facts: RunFacts | None = None
        self._pending_release: int | None = None

    def resolve(self, max_steps: int) -> PhaseSchedule:
        """The schedule of a run of ``max_steps``: the one given, else the curriculum resolved (ValueError when it
        cannot run, or when the schedule given was resolved for another ``max_steps``)."""
        if self.planned_schedule is None:
            return self.curriculum.resolve(max_steps)
        if self.planned_schedule.max_steps != max_steps:
            raise ValueError(
                f"the curriculum schedule was resolved for max_steps={self.planned_schedule.max_steps}, "
                f"but the Trainer runs {max_steps} steps"
            )
        return self.planned_schedule

    # ------------------------------------------------------------------ Trainer events
    def on_train_begin(self, args, state, control, **kwargs):
        if kwargs.get("train_dataloader") is not None and self.collator.masking_trainer is None:
            raise TypeError(
                "PhaseScheduleCallback: this Trainer does not mask the CurriculumDataCollator's batches; use "
                "BioptimusTrainer or a Trainer with the mixin: class MyTrainer(CurriculumMaskingMixin, Trainer)"
            )
        self.schedule = self.resolve(state.max_steps)
        self._restore(state)
        self._activate(self.schedule.phase_at(state.global_step), state.global_step)
        self.run_facts = RunFacts.from_training_arguments(args, **self.releases.run_info)

    def on_epoch_begin(self, args, state, control, **kwargs):
        # The keyed masking stream's epoch. A resumed run restores state.epoch (e.g. 2.35) before this call: its
        # integer part is the epoch being resumed.
        self.collator.set_epoch(math.floor(state.epoch + 1e-9) if state.epoch else 0)

    def on_step_end(self, args, state, control, **kwargs):
        if self.releases.lexical_warmup_release and state.global_step == self.schedule.lexical_warmup_steps > 0:
            self._pending_release = WARMUP_RELEASE
        elif state.global_step in self.schedule.ends:
            self._pending_release = self.schedule.ends.index(state.global_step)
        else:
            return
        control.should_save = True
        if self.evaluate_at_phase_end:
            control.should_evaluate = True  # the release is written after the evaluation, with its loss
        else:
            self._finish_phase(args, state, kwargs, metrics=None)

    def on_evaluate(self, args, state, control, metrics=None, **kwargs):
        if self._pending_release is not None:
            self._finish_phase(args, state, kwargs, metrics=metrics)

    def on_train_end(self, args, state, control, **kwargs):
        if self._pending_release is not None:
            self._finish_phase(args, state, kwargs, metrics=None)

    def on_log(self, args, state, control, logs=None, **kwargs):
        extra = self.add_metrics(logs)
        # The Trainer stored a copy of `logs` in the history before calling callbacks.
        if extra and state.log_history and state.log_history[-1].get("step") == state.global_step:
            state.log_history[-1].update(extra)

    def add_metrics(self, logs: dict[str, Any] | None) -> dict[str, Any]:
        """Add the curriculum's metrics to ``logs`` (the phase, its masking, the realised masked fraction of
        training logs) and return them; nothing before training starts, or when ``logs`` already has them (added
        by :meth:`BioptimusTrainer.log <.bioptimus_trainer.BioptimusTrainer.log>`)."""
        if logs is None or self.schedule is None or CURRICULUM_PHASE_KEY in logs:
            return {}
        phase = self.collator.active_phase
        extra = {
            CURRICULUM_PHASE_KEY: self.collator.phase_index + 1,
            "masking_rate": phase.masking_rate,
            "whole_word_masking": int(phase.whole_word),
            "corruption": int(phase.corruption),
        }
        # Evaluation batches are not training statistics.
        if not any(key.startswith("eval_") for key in logs):
            realised = self.collator.stats.pop_window_fraction()
            if realised is not None:
                extra["realised_masked_fraction"] = round(realised, 5)
            if getattr(self.collator, "static_masked_positions", False):
                # Batches of this phase so far whose labelled positions did not fit the static bucket.
                extra["masked_positions_overflows"] = self.collator.stats.overflows[self.collator.phase_index]
        logs.update(extra)
        return extra

    # ------------------------------------------------------------------ state for checkpoints
    def state(self) -> dict:
        return {
            "args": {},
            "attributes": {
                **self.collator.stats.state_dict(),
                "phase_history": [list(x) for x in self.phase_history],
                "schedule": self.schedule.to_dict() if self.schedule is not None else None,
                "schedule_changes": list(self.schedule_changes),
                "masking_stream": self.collator.masking_stream,
            },
        }

    @classmethod
    def stored_attributes(cls, state: Any) -> dict | None:
        """This callback's attributes in a ``TrainerState`` (None when absent)."""
        stored = (getattr(state, "stateful_callbacks", None) or {}).get(cls.__name__)
        if isinstance(stored, list):
            stored = stored[0] if stored else None
        return (stored or {}).get("attributes")

    def _restore(self, state) -> None:
        attributes = self.stored_attributes(state)
        if not attributes or state.global_step == 0:
            return
        self.schedule_changes = list(attributes.get("schedule_changes", []))
        stored = attributes.get("schedule")
        if stored is not None:
            previous = PhaseSchedule.from_dict(stored)
            change = describe_schedule_change(previous, self.schedule)
            if change and not self.allow_schedule_change:
                raise schedule_mismatch(f"the checkpoint at step {state.global_step}", change)
            if change:
                self._record_change(state.global_step, change)
        stream, current = attributes.get("masking_stream", self.collator.masking_stream), self.collator.masking_stream
        if stream != current:
            self._record_change(
                state.global_step,
                f"masking stream {stream} -> {current} (--masking_stream {stream} keeps the checkpoint's)",
            )
        self.collator.stats.load_state_dict(attributes)
        self.phase_history = [tuple(x) for x in attributes.get("phase_history", [])]

    def _record_change(self, step: int, description: str) -> None:
        self.schedule_changes.append({"step": step, "description": description})
        logger.warning("curriculum: at step %d: %s", step, description)

    # ------------------------------------------------------------------ phases and releases
    def _activate(self, index: int, global_step: int) -> None:
        self.collator.set_phase(index)
        self.collator.stats.pop_window_fraction()  # the logged fraction never mixes two phases
        phase = self.collator.phases[index]
        if not self.phase_history or self.phase_history[-1][1] != phase.version:
            self.phase_history.append((global_step, phase.version))
        logger.info(
            "curriculum: phase v%s active from global step %d (unit=%s, rate=%.2f, corruption=%s)",
            phase.version,
            global_step,
            phase.masking_unit,
            phase.masking_rate,
            phase.corruption,
        )

    def _finish_phase(self, args, state, kwargs, metrics) -> None:
        finished = self._pending_release
        self._pending_release = None
        if self.releases.write:
            totals = self.collator.stats.summed_over_ranks()  # every rank, before only the main one writes
            if state.is_world_process_zero:
                self._write_release(args, state, kwargs, finished, metrics, totals)
            self._wait_for_release(args, finished)
        if finished != WARMUP_RELEASE and finished + 1 < len(self.collator.phases):
            self._activate(finished + 1, state.global_step)  # (the warm-up already masks as the first phase)

    def release_info(
        self, index: int, global_step: int, metrics: Mapping[str, Any] | None, totals: MaskingStatistics | None = None
    ) -> ReleaseInfo:
        """The record of the release of phase ``index`` at ``global_step``; its realised masked fraction from
        ``totals`` (the statistics summed over ranks, :meth:`MaskingStatistics.summed_over_ranks`), else from this
        process's own counts. ``index`` :data:`WARMUP_RELEASE`: the release of the lexical warm-up's end (no phase;
        the first phase's masking, whose statistics hold only the warm-up's batches by then)."""
        warmup = index == WARMUP_RELEASE
        phase = self.collator.phases[0 if warmup else index]
        stats = totals if totals is not None else self.collator.stats
        return ReleaseInfo(
            version=self.releases.lexical_warmup_release if warmup else phase.version,
            phase_index=None if warmup else index,
            masking_unit=phase.masking_unit,
            masking_rate=phase.masking_rate,
            corruption=phase.corruption,
            steps=self.schedule.lexical_warmup_steps if warmup else self.schedule.step_counts[index],
            start_step=0 if warmup else self.schedule.start_of(index),
            end_step=self.schedule.lexical_warmup_steps if warmup else self.schedule.ends[index],
            global_step=global_step,
            realised_masked_fraction=stats.fraction(0 if warmup else index),
            heldout_mlm_loss=(metrics or {}).get("eval_loss"),
            curriculum=[dict(p.to_dict(), steps=n) for p, n in zip(self.collator.phases, self.schedule.step_counts)],
            run=self.run_facts,
            schedule_changes=list(self.schedule_changes),
        )

    def _release_dir(self, args, index: int) -> Path:
        releases_dir = Path(self.releases.directory or Path(args.output_dir) / "releases")
        version = (
            self.releases.lexical_warmup_release if index == WARMUP_RELEASE else self.collator.phases[index].version
        )
        return releases_dir / release_dir_name(version)

    def _wait_for_release(self, args, index: int) -> None:
        """Every rank waits until the main process has written the release, then checks it can see it."""
        wait_for_everyone()
        rank, world = rank_and_world()
        if world == 1:
            return
        target = self._release_dir(args, index)
        if (target / PHASE_FILE).is_file():
            logger.info("curriculum: rank %d of %d sees release %s", rank, world, target)
        else:
            logger.warning("curriculum: rank %d of %d cannot see release %s%s", rank, world, target, SHARED_FILESYSTEM)

    def _write_release(self, args, state, kwargs, index, metrics, totals=None) -> None:
        info = self.release_info(index, state.global_step, metrics, totals)
        target = self._release_dir(args, index)
        write_release(target, kwargs["model"], kwargs.get("processing_class"), info, log_history=state.log_history)
        # At the default verbosity (warnings): a release is what a run is for.
        logger.warning("curriculum: wrote release %s (held-out MLM loss %s)", target, info.heldout_mlm_loss)
        for hook in self.releases.on_release:
            try:
                hook(target)
            except Exception as error:  # a publishing hook must never stop training
                logger.warning("release hook %r failed for %s: %s", hook, target, error)


def add_callback_first(trainer: Trainer, callback: TrainerCallback) -> None:
    """Add ``callback`` to ``trainer`` ahead of every callback it has (``report_to``'s reporters included), so that
    what its ``on_log`` adds to the logs reaches them: every callback is popped and added back after it, in order,
    with the Trainer's own ``pop_callback``/``add_callback``. Callbacks added later come after it."""
    others = [c for c in trainer.callback_handler.callbacks if c is not callback]
    for other in [callback, *others]:
        trainer.pop_callback(other)
    for other in [callback, *others]:
        trainer.add_callback(other)


def schedule_mismatch(where: str, change: str) -> ScheduleMismatchError:
    return ScheduleMismatchError(
        f"{where} was trained under another curriculum schedule ({change}); resuming would re-enter or skip phases "
        "and write releases describing masking that never ran. Resume with the original "
        "--max_steps/--curriculum/--phase_steps/--lexical_warmup_steps, pass --allow_schedule_change to continue "
        "under the new schedule from this step (the releases record the change), or give a new --output_dir to "
        "start afresh."
    )


def describe_schedule_change(previous: PhaseSchedule, current: PhaseSchedule) -> str | None:
    """A sentence saying how two schedules differ, or None when they are the same."""
    differences = []
    if previous.versions != current.versions:
        differences.append(f"phases {list(previous.versions)} -> {list(current.versions)}")
    elif previous.phases != current.phases:
        changed = [p.version for p, q in zip(previous.phases, current.phases) if p != q]
        differences.append(f"masking of phase(s) {changed} changed")
    if previous.lexical_warmup_steps != current.lexical_warmup_steps:
        differences.append(f"lexical warm-up steps {previous.lexical_warmup_steps} -> {current.lexical_warmup_steps}")
    if previous.step_counts != current.step_counts:
        differences.append(f"steps per phase {list(previous.step_counts)} -> {list(current.step_counts)}")
    if previous.max_steps != current.max_steps:
        differences.append(f"max_steps {previous.max_steps} -> {current.max_steps}")
    return "; ".join(differences) or None
