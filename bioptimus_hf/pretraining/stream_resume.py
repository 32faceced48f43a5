"""A streaming run resumed where its data stopped, not by reading again every batch it already trained on:
:class:`StreamResumeMixin` uses torchdata's ``StatefulDataLoader``, each checkpoint holding its ``state_dict()`` as
``data_state_<process>.json``. The batches after the resume are the unbroken run's, bit for bit, except with a
shuffle buffer (said in a warning and ``schedule_changes``); ``--streaming_resume replay`` resumes by the skip."""

from __future__ import annotations

import logging
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from ..utils.files import read_json, write_json_atomic


logger = logging.getLogger(__name__)

# How a streaming run resumes: from the loader's saved state (default), or by the Trainer's skip (re-reading).
STREAMING_RESUME = ("state", "replay")
DATA_STATE_NAME = "data_state_{process}.json"
DATA_STATE_FORMAT = 1


def data_state_path(checkpoint: str | Path, process_index: int) -> Path:
    return Path(checkpoint) / DATA_STATE_NAME.format(process=process_index)


def dataset_epochs(state: Any) -> set[int]:
    """The ``datasets`` epochs recorded anywhere in a loader's state (one per worker)."""
    found: set[int] = set()
    if isinstance(state, dict):
        if "examples_iterable" in state and isinstance(state.get("epoch"), int):
            found.add(state["epoch"])
        for value in state.values():
            found |= dataset_epochs(value)
    elif isinstance(state, list):
        for value in state:
            found |= dataset_epochs(value)
    return found


def accelerate_keeps_shard_states() -> bool:
    """Whether accelerate's per-process loader (``DataLoaderShard``) saves the state of the batches it yielded under
    several processes: from accelerate 1.13, which gives each process its own shards of a ``datasets`` stream and
    stopped taking the look-ahead of another loader kind off its counters."""
    from accelerate.data_loader import DataLoaderAdapter, DataLoaderShard

    return DataLoaderShard.adjust_state_dict_for_prefetch is not DataLoaderAdapter.adjust_state_dict_for_prefetch


@contextmanager
def _no_batch_skipping() -> Iterator[None]:
    """Within: the Trainer's ``skip_first_batches`` hands the loader back as it is (its state is already loaded).

    The Trainer calls the name it imported from accelerate; replacing it for the one ``_run_epoch`` call keeps every
    other step of its resume (counters, RNG restored after the first batches) as it is."""
    import transformers.trainer as trainer_module

    original = trainer_module.skip_first_batches
    trainer_module.skip_first_batches = lambda dataloader, num_batches=0: dataloader
    try:
        yield
    finally:
        trainer_module.skip_first_batches = original


class StreamResumeMixin:
    """Mixin for a ``Trainer`` subclass (``class T(StreamResumeMixin, Trainer)``): a streaming run's checkpoints hold
    its data loader's state, and a resumed run starts its stream there (module docstring). ``streaming_resume``:
    ``"state"`` or ``"replay"``; ``on_inexact_resume``: callables given ``(step, description)`` when a resume changes
    the data order."""

    def __init__(
        self, *args, streaming_resume: str = "state", shuffle_buffer_size: int = 0, on_inexact_resume=(), **kwargs
    ):
        if streaming_resume not in STREAMING_RESUME:
            raise ValueError(
                f"--streaming_resume must be one of {', '.join(STREAMING_RESUME)}, got {streaming_resume!r}"
            )
        self.streaming_resume = streaming_resume
        self.shuffle_buffer_size = shuffle_buffer_size
        self.on_inexact_resume = tuple(on_inexact_resume)
        super().__init__(*args, **kwargs)

    def _resumes_stream_from_state(self) -> bool:
        from datasets import IterableDataset

        if self.streaming_resume != "state" or not isinstance(self.train_dataset, IterableDataset):
            return False
        if self.args.world_size > 1 and not accelerate_keeps_shard_states():
            if not getattr(self, "_warned_old_accelerate", False):
                logger.warning(
                    "streaming resume: this accelerate counts a stateful loader wrongly across processes (fixed in "
                    "1.13): a resumed run skips the batches already trained, reading them again"
                )
                self._warned_old_accelerate = True
            return False
        return True

    def get_train_dataloader(self):
        if not self._resumes_stream_from_state():
            return super().get_train_dataloader()
        config = self.accelerator.dataloader_config
        previous = getattr(config, "use_stateful_dataloader", False)
        config.use_stateful_dataloader = True  # this loader only: evaluation keeps plain ones
        try:
            return super().get_train_dataloader()
        finally:
            config.use_stateful_dataloader = previous

    def _save_rng_state(self, output_dir: str) -> None:
        super()._save_rng_state(output_dir)
        from torchdata.stateful_dataloader import StatefulDataLoader

        loader = getattr(self.callback_handler, "train_dataloader", None)
        if self._resumes_stream_from_state() and isinstance(loader, StatefulDataLoader):
            write_json_atomic(
                data_state_path(output_dir, self.args.process_index),
                {"format": DATA_STATE_FORMAT, "global_step": self.state.global_step, "loader": loader.state_dict()},
                indent=None,
            )

    def _data_state(self, checkpoint: str, epoch: int) -> dict | None:
        """The loader state saved with ``checkpoint`` for this process, or None (then the Trainer skips) with why."""
        path = data_state_path(checkpoint, self.args.process_index)
        if not path.is_file():
            logger.warning(
                "streaming resume: %s has no %s (saved without the loader's state): the Trainer skips the batches "
                "already trained, reading them again",
                checkpoint,
                path.name,
            )
            return None
        saved = read_json(path)
        if saved.get("format") != DATA_STATE_FORMAT or saved.get("global_step") != self.state.global_step:
            logger.warning("streaming resume: %s is not this checkpoint's loader state: skipping instead", path)
            return None
        epochs = dataset_epochs(saved["loader"])
        if epochs - {epoch}:
            logger.warning(
                "streaming resume: the checkpoint is in pass %s over the stream, which transformers resumes in its "
                "first: skipping batches as it does",
                sorted(epochs),
            )
            return None
        return saved["loader"]

    def _run_epoch(self, *args, **kwargs):
        checkpoint = kwargs.get("resume_from_checkpoint")
        resuming = (
            not args
            and checkpoint is not None
            and kwargs["epoch"] == kwargs["epochs_trained"]
            and kwargs["steps_trained_in_current_epoch"] > 0
            and not self.args.ignore_data_skip
            and self._resumes_stream_from_state()
        )
        state = self._data_state(checkpoint, kwargs["epoch"]) if resuming else None
        if state is None:
            return super()._run_epoch(*args, **kwargs)
        kwargs["train_dataloader"].load_state_dict(state)
        logger.info(
            "streaming resume: the stream continues from the checkpoint's loader state (step %d), no batch read again",
            self.state.global_step,
        )
        if self.shuffle_buffer_size:
            change = (
                f"streaming resume at step {self.state.global_step}: the shuffle buffer "
                f"({self.shuffle_buffer_size} examples) was refilled from the stream; the examples it held are not "
                "trained on and the data order differs from an unbroken run's from here"
            )
            logger.warning(change)
            for record in self.on_inexact_resume:
                record(self.state.global_step, change)
        with _no_batch_skipping():
            return super()._run_epoch(*args, **kwargs)


def with_stream_resume(trainer_class: type) -> type:
    """``trainer_class`` with :class:`StreamResumeMixin` first among its bases (itself if it has it already)."""
    if issubclass(trainer_class, StreamResumeMixin):
        return trainer_class
    return type(trainer_class.__name__, (StreamResumeMixin, trainer_class), {"__module__": __name__})
