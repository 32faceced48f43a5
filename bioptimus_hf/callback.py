"""PhaseScheduleCallback: walks a Trainer run through the curriculum phases and writes releases."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Callable, Sequence

from transformers import TrainerCallback
from transformers.trainer_callback import ExportableState

from .collator import CurriculumDataCollator
from .phases import BIOPTIMUS_PHASE_FRACTIONS, phase_boundaries, phase_index_at, resolve_phase_steps
from .release import release_name, write_release

logger = logging.getLogger(__name__)


class PhaseScheduleCallback(TrainerCallback, ExportableState):
    """Switch the collator's phase at step boundaries and release a model at each phase end.

    One Trainer run with one learning-rate schedule spans all phases (the Trainer's own scheduler
    over ``max_steps``), so the rate keeps decaying across phases as in the paper.

    Args:
        collator: the run's :class:`CurriculumDataCollator` (its ``phases`` define the curriculum).
        phase_steps: steps per phase, as counts (``[100, 200, ...]``) or fractions of ``max_steps``
            (default ``(0.1, 0.2, 0.3, 0.4)``: later phases train longer).
        releases_dir: where releases go (default ``<output_dir>/releases``); ``None`` with
            ``write_releases=False`` disables them.
        evaluate_at_phase_end: run the Trainer's evaluation at each phase end (held-out MLM loss
            under that phase's masking, stored in the release). Needs an eval dataset.
        run_info: extra facts for ``bioptimus_phase.json`` (base model, init strategy, data...).
        on_release: callables given each release directory once written (e.g. a Hub publisher);
            they must not raise.

    The callback must run before the reporting callbacks to put its metrics in their logs: add it
    with ``trainer.callback_handler.callbacks.insert(0, callback)`` (``run_pretraining.py`` does).
    The phase is derived from ``state.global_step`` when training starts, so a run resumed with
    ``resume_from_checkpoint`` continues in the right phase; the LR follows from the restored
    scheduler. Every rank of a distributed run switches at the same global step.
    """

    def __init__(
        self,
        collator: CurriculumDataCollator,
        phase_steps: Sequence[float | int] = BIOPTIMUS_PHASE_FRACTIONS,
        releases_dir: str | os.PathLike | None = None,
        write_releases: bool = True,
        evaluate_at_phase_end: bool = True,
        run_info: dict | None = None,
        on_release: Sequence[Callable[[Path], None]] = (),
    ):
        if len(phase_steps) != len(collator.phases):
            raise ValueError(
                f"phase_steps has {len(phase_steps)} entries but the curriculum has {len(collator.phases)} phases "
                f"({[p.version for p in collator.phases]})"
            )
        self.collator = collator
        self.phase_steps = list(phase_steps)
        self.releases_dir = releases_dir
        self.write_releases = write_releases
        self.evaluate_at_phase_end = evaluate_at_phase_end
        self.run_info = dict(run_info or {})
        self.on_release = list(on_release)
        self.step_counts: list[int] | None = None
        self.phase_ends: list[int] | None = None
        self.phase_history: list[tuple[int, str]] = []
        self._pending_release: int | None = None
        self._stats_snapshot = None

    def validate(self, max_steps: int) -> list[int]:
        """Resolve and check the per-phase step counts for a run of ``max_steps`` (fails early)."""
        return resolve_phase_steps(self.phase_steps, max_steps)

    # ------------------------------------------------------------------ Trainer events
    def on_train_begin(self, args, state, control, **kwargs):
        self.step_counts = self.validate(state.max_steps)
        self.phase_ends = phase_boundaries(self.step_counts)
        if self.phase_ends[-1] != state.max_steps:
            logger.warning(
                "curriculum phases end at step %d but the run has max_steps=%d; the last phase continues to the end",
                self.phase_ends[-1],
                state.max_steps,
            )
        self._restore(state)
        index = phase_index_at(state.global_step, self.phase_ends)
        self._activate(index, state.global_step)
        self._run_facts = self._collect_run_facts(args)

    def on_step_end(self, args, state, control, **kwargs):
        if state.global_step not in self.phase_ends:
            return
        finished = self.phase_ends.index(state.global_step)
        self._pending_release = finished
        control.should_save = True
        if self.evaluate_at_phase_end:
            control.should_evaluate = True
            self._stats_snapshot = self._snapshot()
        else:
            self._finish_phase(args, state, kwargs, metrics=None)

    def on_evaluate(self, args, state, control, metrics=None, **kwargs):
        # Evaluation batches also pass through the collator; keep them out of the training statistics.
        if self._stats_snapshot is not None:
            self._restore_snapshot(self._stats_snapshot)
            self._stats_snapshot = None
        if self._pending_release is not None:
            self._finish_phase(args, state, kwargs, metrics=metrics)

    def on_train_end(self, args, state, control, **kwargs):
        if self._pending_release is not None:
            self._finish_phase(args, state, kwargs, metrics=None)

    def on_log(self, args, state, control, logs=None, **kwargs):
        if logs is None or self.phase_ends is None:
            return
        phase = self.collator.active_phase
        logs["curriculum_phase"] = self.collator.phase_index + 1
        logs["masking_rate"] = phase.masking_rate
        logs["whole_word_masking"] = int(phase.whole_word)
        logs["corruption"] = int(phase.corruption)
        if any(key.startswith("eval_") for key in logs):
            return  # evaluation batches are not training statistics
        realised = self.collator.pop_window_fraction()
        if realised is not None:
            logs["realised_masked_fraction"] = round(realised, 5)

    # ------------------------------------------------------------------ state for checkpoints
    def state(self) -> dict:
        return {
            "args": {},
            "attributes": {
                "masked_tokens": list(self.collator.masked_tokens),
                "maskable_tokens": list(self.collator.maskable_tokens),
                "phase_history": [list(x) for x in self.phase_history],
            },
        }

    def _restore(self, state) -> None:
        stored = (state.stateful_callbacks or {}).get(type(self).__name__)
        if isinstance(stored, list):
            stored = stored[0] if stored else None
        if not stored or state.global_step == 0:
            return
        attributes = stored.get("attributes", {})
        if len(attributes.get("masked_tokens", [])) == len(self.collator.phases):
            self.collator.masked_tokens = list(attributes["masked_tokens"])
            self.collator.maskable_tokens = list(attributes["maskable_tokens"])
        self.phase_history = [tuple(x) for x in attributes.get("phase_history", [])]

    def _snapshot(self):
        c = self.collator
        return (list(c.masked_tokens), list(c.maskable_tokens), c._window_masked, c._window_maskable)

    def _restore_snapshot(self, snapshot) -> None:
        c = self.collator
        c.masked_tokens, c.maskable_tokens = list(snapshot[0]), list(snapshot[1])
        c._window_masked, c._window_maskable = snapshot[2], snapshot[3]

    # ------------------------------------------------------------------ phases and releases
    def _activate(self, index: int, global_step: int) -> None:
        self.collator.set_phase(index)
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
        if self.write_releases and state.is_world_process_zero:
            self._write_release(args, state, kwargs, finished, metrics)
        if finished + 1 < len(self.collator.phases):
            self._activate(finished + 1, state.global_step)

    def _write_release(self, args, state, kwargs, index, metrics) -> None:
        phase = self.collator.phases[index]
        start = self.phase_ends[index] - self.step_counts[index]
        eval_loss = (metrics or {}).get("eval_loss")
        info = {
            "version": phase.version,
            "phase_index": index,
            "masking_unit": phase.masking_unit,
            "masking_rate": phase.masking_rate,
            "corruption": phase.corruption,
            "steps": self.step_counts[index],
            "start_step": start,
            "end_step": self.phase_ends[index],
            "global_step": state.global_step,
            "realised_masked_fraction": self.collator.realised_fraction(index),
            "heldout_mlm_loss": eval_loss,
            "curriculum": [
                dict(p.to_dict(), steps=n) for p, n in zip(self.collator.phases, self.step_counts)
            ],
            "run": {**self._run_facts, **self.run_info},
        }
        releases_dir = Path(self.releases_dir or Path(args.output_dir) / "releases")
        target = releases_dir / release_name(phase.version)
        write_release(target, kwargs["model"], kwargs.get("processing_class"), info)
        logger.info("curriculum: wrote release %s (held-out MLM loss %s)", target, eval_loss)
        for hook in self.on_release:
            try:
                hook(target)
            except Exception as error:  # a publishing hook must never stop training
                logger.warning("release hook %r failed for %s: %s", hook, target, error)

    @staticmethod
    def _collect_run_facts(args) -> dict:
        return {
            "learning_rate": args.learning_rate,
            "lr_scheduler_type": str(getattr(args.lr_scheduler_type, "value", args.lr_scheduler_type)),
            "warmup_steps": args.warmup_steps,
            "weight_decay": args.weight_decay,
            "optim": str(getattr(args.optim, "value", args.optim)),
            "per_device_train_batch_size": args.per_device_train_batch_size,
            "gradient_accumulation_steps": args.gradient_accumulation_steps,
            "world_size": args.world_size,
            "train_batch_size": args.per_device_train_batch_size * args.gradient_accumulation_steps * args.world_size,
            "max_steps": args.max_steps,
            "seed": args.seed,
        }
