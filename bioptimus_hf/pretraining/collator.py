"""The curriculum's batches: padded by :class:`CurriculumDataCollator`, masked once by :meth:`~CurriculumDataCollator.mask`
in the main process when the Trainer takes them (:class:`CurriculumMaskingMixin`), under the phase active at that
step (so ``num_items_in_batch`` counts its labels). docs/curriculum.md gives the masking rules and the two streams."""

from __future__ import annotations

import hashlib
import logging
import os
from typing import Any, Mapping, Sequence

import numpy as np
import torch

from . import static_shapes
from .bioptimus_config import DEFAULT_MASKING_STREAM, MASKING_STREAMS
from .phases import BIOPTIMUS_CURRICULUM, CurriculumPhase, as_phases
from .tokenization import check_word_boundaries


logger = logging.getLogger(__name__)

# BERT's corruption rule for the selected tokens: 80% [MASK], 10% random token, 10% kept.
MASK_FRACTION = 0.8
RANDOM_FRACTION = 0.1
# The keys of a collated batch that masking reads and the model never sees.
WORD_IDS, MASKABLE = "word_ids", "maskable"


def batch_key_seed(seed: int, phase_index: int, epoch: int, input_ids: torch.Tensor) -> int:
    """The seed of one batch's masking generator under the keyed stream: (seed, phase, epoch, token ids).

    The token ids enter through a 128-bit BLAKE2b digest of their int64 bytes and the batch's shape."""
    ids = np.ascontiguousarray(input_ids.numpy(), dtype=np.int64)
    digest = hashlib.blake2b(ids.tobytes(), digest_size=16, person=b"bioptimus-mask").digest()
    words = np.frombuffer(digest, dtype=np.uint32).tolist()
    entropy = [int(seed), int(phase_index), int(epoch), *ids.shape, *words]
    return int(np.random.SeedSequence(entropy).generate_state(1, dtype=np.uint64)[0] >> 1)


def _distributed_rank() -> int:
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        return torch.distributed.get_rank()
    return int(os.environ.get("RANK", 0))


class MaskingStatistics:
    """Realised masking per phase (masked / maskable tokens, batches over their static bucket) and a window since the
    last log; counted when a training batch is masked, carried through checkpoints by the phase callback."""

    def __init__(self, num_phases: int):
        self.masked = [0] * num_phases
        self.maskable = [0] * num_phases
        self.overflows = [0] * num_phases
        self.window_masked = self.window_maskable = 0

    def add(self, phase_index: int, masked: int, maskable: int, overflow: bool = False) -> None:
        self.masked[phase_index] += masked
        self.maskable[phase_index] += maskable
        self.overflows[phase_index] += int(overflow)
        self.window_masked += masked
        self.window_maskable += maskable

    def fraction(self, phase_index: int) -> float | None:
        return self.masked[phase_index] / self.maskable[phase_index] if self.maskable[phase_index] else None

    def pop_window_fraction(self) -> float | None:
        value = self.window_masked / self.window_maskable if self.window_maskable else None
        self.window_masked = self.window_maskable = 0
        return value

    def summed_over_ranks(self) -> "MaskingStatistics":
        """The per-phase totals of every process (a collective: under DDP every rank calls it at the same point);
        each rank counts the batches its own replica trained on. The window is not summed."""
        from ..utils.distributed import sum_numbers_across_ranks

        summed = sum_numbers_across_ranks(self.masked + self.maskable)
        total = MaskingStatistics(len(self.masked))
        total.masked = [int(v) for v in summed[: len(self.masked)]]
        total.maskable = [int(v) for v in summed[len(self.masked) :]]
        return total

    def state_dict(self) -> dict:
        return {
            "masked_tokens": list(self.masked),
            "maskable_tokens": list(self.maskable),
            "masked_positions_overflows": list(self.overflows),
        }

    def load_state_dict(self, state: dict) -> bool:
        """Restore the per-phase totals; False (nothing changed) when they are for another number of phases."""
        totals = [
            list(state.get(key, [])) for key in ("masked_tokens", "maskable_tokens", "masked_positions_overflows")
        ]
        if any(len(values) != len(self.masked) for values in totals):
            return False
        self.masked, self.maskable, self.overflows = totals
        return True


class CurriculumDataCollator:
    """Pads masked-LM features for a curriculum of masking tasks; :meth:`mask` masks a padded batch (module docstring).

    Args:
        tokenizer: the model's tokenizer; it must define a mask token and a pad token.
        phases: the curriculum (a :class:`~.phases.Curriculum` or its phases; default the paper's four).
        seed: base seed of the masking randomness.
        pad_to_multiple_of: pad the batch length up to a multiple of this value.
        static_masked_positions: masked batches also carry ``masked_positions`` (:mod:`.static_shapes`).
        masking_stream: ``"keyed"`` (each batch's masks seeded by the seed, phase, epoch and its token ids) or
            ``"sequential"`` (one generator per rank, in the order batches are masked).

    A feature holds ``input_ids`` and, for whole-word phases, ``word_ids`` (``-1`` or ``None`` on special tokens)."""

    @classmethod
    def from_arguments(
        cls, arguments: Any, tokenizer, phases: Sequence[CurriculumPhase], seed: int, line_by_line=False
    ) -> "CurriculumDataCollator":
        """The collator the curriculum flags (``mask_seed``, ``masking_stream``) describe, masking ``phases`` with
        ``--mask_seed``, else the run's ``seed``; padded lines are rounded up to a multiple of 8 for tensor cores."""
        return cls(
            tokenizer,
            phases=phases,
            seed=seed if arguments.mask_seed is None else arguments.mask_seed,
            pad_to_multiple_of=8 if line_by_line else None,
            masking_stream=arguments.masking_stream,
        )

    def __init__(
        self,
        tokenizer,
        phases: Sequence[CurriculumPhase] = BIOPTIMUS_CURRICULUM,
        seed: int = 42,
        pad_to_multiple_of: int | None = None,
        static_masked_positions: bool = False,
        masking_stream: str = DEFAULT_MASKING_STREAM,
    ):
        if masking_stream not in MASKING_STREAMS:
            raise ValueError(f"masking_stream must be one of {', '.join(MASKING_STREAMS)}; got {masking_stream!r}")
        self.phases = as_phases(getattr(phases, "phases", phases), "CurriculumDataCollator")  # or a Curriculum
        if tokenizer.mask_token is None or tokenizer.mask_token_id is None:
            raise ValueError(
                f"tokenizer {type(tokenizer).__name__} ({getattr(tokenizer, 'name_or_path', '')}) has no mask token; "
                "masked-language modelling needs one (set tokenizer.mask_token or add it with add_special_tokens)"
            )
        if tokenizer.pad_token_id is None:
            raise ValueError(f"tokenizer {getattr(tokenizer, 'name_or_path', '')} has no pad token, needed to pad")
        word_phases = ["v" + p.version for p in self.phases if p.whole_word]
        if word_phases and getattr(tokenizer, "is_fast", False):
            names = ", ".join(word_phases)
            why = f"phase {names} masks whole words" if len(word_phases) == 1 else f"phases {names} mask whole words"
            check_word_boundaries(tokenizer, why)
        self.seed = int(seed)
        self.pad_to_multiple_of = pad_to_multiple_of
        self.static_masked_positions = bool(static_masked_positions)
        self.masking_stream = masking_stream
        self.mask_token_id = int(tokenizer.mask_token_id)
        self.pad_token_id = int(tokenizer.pad_token_id)
        self.special_ids = torch.tensor(sorted({int(i) for i in tokenizer.all_special_ids}), dtype=torch.long)
        keep = torch.ones(len(tokenizer), dtype=torch.bool)
        keep[self.special_ids[self.special_ids < len(tokenizer)]] = False
        # Random replacements are drawn from real vocabulary entries only, never special tokens.
        self.replacement_ids = torch.nonzero(keep).flatten()
        self.phase_index = 0
        self.epoch = 0
        self.stats = MaskingStatistics(len(self.phases))
        # The trainer class that masks this collator's batches (set by CurriculumMaskingMixin; the callback checks).
        self.masking_trainer: str | None = None
        self._generator: torch.Generator | None = None  # the sequential stream's, made on first use

    @property
    def active_phase(self) -> CurriculumPhase:
        return self.phases[self.phase_index]

    def set_phase(self, phase: int | str | CurriculumPhase) -> None:
        """Select the active phase by index, version string (``"0.2"`` or ``"v0.2"``) or object."""
        versions = [p.version for p in self.phases]
        if isinstance(phase, CurriculumPhase):
            index = self.phases.index(phase)
        elif isinstance(phase, str):
            key = phase[1:] if phase.startswith("v") else phase
            if key not in versions:
                raise ValueError(f"unknown phase version {phase!r}; this curriculum has {versions}")
            index = versions.index(key)
        else:
            index = int(phase)
            if not 0 <= index < len(self.phases):
                raise ValueError(f"phase index {index} out of range for {len(self.phases)} phases")
        self.phase_index = index

    def set_epoch(self, epoch: int) -> None:
        """The training epoch (0-based), part of each batch's key under the keyed stream (the phase callback sets it,
        so that a batch repeated in another epoch gets other masks)."""
        if int(epoch) < 0:
            raise ValueError(f"epoch must be >= 0, got {epoch}")
        self.epoch = int(epoch)

    # ------------------------------------------------------------------ collation and masking
    def __call__(self, features: list[dict[str, Any]]) -> dict[str, torch.Tensor]:
        """The padded, unmasked batch: ``input_ids``, ``attention_mask``, ``maskable`` and (given) ``word_ids``."""
        if not features:
            raise ValueError("CurriculumDataCollator received an empty batch")
        if "input_ids" not in features[0]:
            raise ValueError(f"features need 'input_ids'; got keys {sorted(features[0])}")
        width = max(len(f["input_ids"]) for f in features)
        if self.pad_to_multiple_of:
            width = -(-width // self.pad_to_multiple_of) * self.pad_to_multiple_of
        columns = {
            "input_ids": ("input_ids", self.pad_token_id),
            "attention_mask": ("attention_mask", 0),
            WORD_IDS: ("word_ids", -1),
            "special": ("special_tokens_mask", 1),
        }
        batch = {name: _padded(features, key, width, value) for name, (key, value) in columns.items()}
        input_ids, special = batch["input_ids"], batch.pop("special")
        if batch["attention_mask"] is None:
            lengths = torch.tensor([len(f["input_ids"]) for f in features])
            batch["attention_mask"] = (torch.arange(width) < lengths.unsqueeze(1)).long()
        maskable = batch["attention_mask"].bool() & ~torch.isin(input_ids, self.special_ids)
        if special is not None:
            maskable &= ~special.bool()
        if batch[WORD_IDS] is None:
            del batch[WORD_IDS]
        else:
            maskable &= batch[WORD_IDS] >= 0
        batch[MASKABLE] = maskable
        return batch

    def mask(self, batch: Mapping[str, torch.Tensor], count: bool = True) -> dict[str, torch.Tensor]:
        """``batch`` (this collator's, on the host) masked under the active phase and epoch: corrupted ``input_ids``,
        ``attention_mask``, ``labels`` (-100 where not selected) and, with static shapes, ``masked_positions``.
        ``count``: add it to :attr:`stats` (a training batch; evaluation batches are not counted)."""
        phase, input_ids, maskable = self.active_phase, batch["input_ids"], batch[MASKABLE]
        if self.masking_stream == "keyed":
            generator = torch.Generator().manual_seed(
                batch_key_seed(self.seed, self.phase_index, self.epoch, input_ids)
            )
        else:
            if self._generator is None:
                entropy = np.random.SeedSequence([self.seed, _distributed_rank()])
                self._generator = torch.Generator().manual_seed(int(entropy.generate_state(1, np.uint64)[0] >> 1))
            generator = self._generator
        inputs, labels = self.mask_tokens(input_ids, batch.get(WORD_IDS), maskable, phase, generator)
        masked = {"input_ids": inputs, "attention_mask": batch["attention_mask"], "labels": labels}
        if self.static_masked_positions:
            masked["masked_positions"] = self.masked_positions(labels, phase)
        if count:
            self._count(masked, int(maskable.sum()))
        return masked

    def _count(self, batch: dict[str, torch.Tensor], maskable: int) -> None:
        masked = int((batch["labels"] != -100).sum())
        bucket = self.bucket_size(self.active_phase, *batch["labels"].shape)
        overflow = "masked_positions" in batch and len(batch["masked_positions"]) > bucket
        if overflow and not self.stats.overflows[self.phase_index]:
            logger.warning(
                "phase v%s: a batch has %d labelled positions, more than the static bucket of %d; gathered at %d "
                "positions instead (nothing dropped; under torch.compile one more compiled size). Counted in "
                "masked_positions_overflows.",
                self.active_phase.version,
                masked,
                bucket,
                len(batch["masked_positions"]),
            )
        self.stats.add(self.phase_index, masked, maskable, overflow)

    @staticmethod
    def bucket_size(phase: CurriculumPhase, batch_size: int, seq_len: int) -> int:
        """The fixed length of ``masked_positions`` for ``phase`` and a ``batch_size x seq_len`` batch."""
        return static_shapes.masked_positions_bucket(phase.masking_rate, phase.whole_word, batch_size, seq_len)

    def masked_positions(self, labels: torch.Tensor, phase: CurriculumPhase) -> torch.Tensor:
        """The labelled positions of ``labels`` (flat, ascending), padded with -1 to the phase's bucket (or to the
        overflow size when more)."""
        return static_shapes.masked_positions(labels, self.bucket_size(phase, *labels.shape))

    def mask_tokens(
        self,
        input_ids: torch.Tensor,
        word_ids: torch.Tensor | None,
        maskable: torch.Tensor,
        phase: CurriculumPhase,
        generator: torch.Generator,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Return (corrupted input ids, labels) for one phase; labels are -100 where not selected."""
        n_maskable = maskable.sum(dim=1)
        budget = torch.round(n_maskable.double() * phase.masking_rate).long()
        budget = torch.where(n_maskable > 0, budget.clamp(min=1), torch.zeros_like(budget))
        if phase.whole_word:
            if word_ids is None:
                raise ValueError(
                    f"phase v{phase.version} masks whole words but the features have no 'word_ids'; tokenize with "
                    "bioptimus_hf.pretraining.tokenization.tokenize_with_word_ids (or keep BatchEncoding.word_ids()) "
                    "so word boundaries come from the tokenizer"
                )
            selected = self._select_words(word_ids, maskable, budget, generator)
        else:
            selected = self._select_tokens(maskable, budget, generator)

        labels = torch.where(selected, input_ids, torch.full_like(input_ids, -100))
        inputs = input_ids.clone()
        if phase.corruption:
            draw = torch.rand(input_ids.shape, generator=generator)
            to_mask = selected & (draw < MASK_FRACTION)
            to_random = selected & (draw >= MASK_FRACTION) & (draw < MASK_FRACTION + RANDOM_FRACTION)
            n_random = int(to_random.sum())
            if n_random:
                picks = torch.randint(len(self.replacement_ids), (n_random,), generator=generator)
                inputs[to_random] = self.replacement_ids[picks]
        else:
            to_mask = selected
        inputs[to_mask] = self.mask_token_id
        return inputs, labels

    @staticmethod
    def _select_tokens(maskable, budget, generator):
        # Exactly `budget` positions per row, uniformly among maskable ones: rank random scores.
        scores = torch.rand(maskable.shape, generator=generator)
        scores.masked_fill_(~maskable, 2.0)
        ranks = scores.argsort(dim=1).argsort(dim=1)
        return ranks < budget.unsqueeze(1)

    @staticmethod
    def _select_words(word_ids, maskable, budget, generator):
        batch_size, width = maskable.shape
        prev_word = torch.cat([torch.full((batch_size, 1), -2, dtype=word_ids.dtype), word_ids[:, :-1]], dim=1)
        prev_maskable = torch.cat([torch.zeros(batch_size, 1, dtype=torch.bool), maskable[:, :-1]], dim=1)
        starts = maskable & ((word_ids != prev_word) | ~prev_maskable)
        word_index = (starts.long().cumsum(dim=1) - 1).clamp(min=0)
        n_words = starts.sum(dim=1)
        max_words = max(int(n_words.max()), 1)
        lengths = torch.zeros(batch_size, max_words, dtype=torch.long)
        lengths.scatter_add_(1, word_index, maskable.long())
        # Random word order; words beyond a row's count sort last.
        priority = torch.rand(batch_size, max_words, generator=generator)
        priority.masked_fill_(torch.arange(max_words).unsqueeze(0) >= n_words.unsqueeze(1), 2.0)
        order = priority.argsort(dim=1)
        sorted_lengths = lengths.gather(1, order)
        before = sorted_lengths.cumsum(dim=1) - sorted_lengths
        # Take words while the running total stays nearest to the budget: a word is taken when at
        # least half of it fits. `before + len/2` grows along the order, so this is a prefix.
        take = (2 * before + sorted_lengths <= 2 * budget.unsqueeze(1)) & (sorted_lengths > 0)
        take[:, 0] |= (budget > 0) & (sorted_lengths[:, 0] > 0)
        chosen_words = torch.zeros(batch_size, max_words, dtype=torch.bool).scatter(1, order, take)
        return chosen_words.gather(1, word_index) & maskable


def _padded(features: list[dict[str, Any]], key: str, width: int, pad: int) -> torch.Tensor | None:
    """Column ``key`` of ``features`` as a ``len(features) x width`` int64 tensor padded with ``pad`` (None: absent);
    packed blocks of one length take a single conversion."""
    if key not in features[0]:
        return None
    rows = [[-1 if v is None else v for v in f[key]] if key == "word_ids" else f[key] for f in features]
    if all(len(row) == width for row in rows):
        return torch.as_tensor(np.asarray(rows, dtype=np.int64))
    padded = np.full((len(rows), width), pad, dtype=np.int64)
    for index, row in enumerate(rows):
        padded[index, : len(row)] = row
    return torch.from_numpy(padded)


class CurriculumMaskingMixin:
    """Mixin for a ``Trainer`` whose ``data_collator`` is a :class:`CurriculumDataCollator`
    (``class MyTrainer(CurriculumMaskingMixin, Trainer)``): each batch is masked in the main process when the Trainer
    takes it, then moved to the device (module docstring). Batches of another collator pass through unchanged."""

    def get_train_dataloader(self):
        # Training batches stay on the host until masked: masking reads their ids and counts their labels there,
        # with no wait for the device. A loader that dispatches batches from one process needs accelerate's device
        # placement, and keeps it (its batches come back to the host to be masked).
        accelerator, placement = self.accelerator, self.accelerator.device_placement
        if isinstance(self.data_collator, CurriculumDataCollator):
            self.data_collator.masking_trainer = type(self).__name__
            dispatch = accelerator.dataloader_config.dispatch_batches
            if dispatch is None:
                dispatch = isinstance(self.train_dataset, torch.utils.data.IterableDataset)
            accelerator.device_placement = placement and bool(dispatch)
        try:
            return super().get_train_dataloader()
        finally:
            accelerator.device_placement = placement

    def get_batch_samples(self, epoch_iterator, num_batches: int, device):
        masked = (self.masked_batch(batch, device, count=True) for batch in epoch_iterator)
        return super().get_batch_samples(masked, num_batches, device)

    def prediction_step(self, model, inputs, prediction_loss_only: bool, ignore_keys=None):
        inputs = self.masked_batch(inputs)
        return super().prediction_step(model, inputs, prediction_loss_only, ignore_keys=ignore_keys)

    def masked_batch(self, batch: Mapping[str, Any], device=None, count: bool = False) -> Mapping[str, Any]:
        """``batch`` masked by the collator (:meth:`CurriculumDataCollator.mask`, counted if ``count``) and moved to
        ``device`` (default: the run's), marked static for ``torch.compile`` when it has ``masked_positions``."""
        if not isinstance(self.data_collator, CurriculumDataCollator) or MASKABLE not in batch:
            return batch
        masked = self.data_collator.mask({key: value.cpu() for key, value in batch.items()}, count=count)
        moved = {key: value.to(device or self.args.device) for key, value in masked.items()}
        if "masked_positions" in moved:
            static_shapes.mark_static(moved)  # one compiled graph per bucket, never a dynamic-shape one
        return moved
