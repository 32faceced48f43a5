"""CurriculumDataCollator: one masked-LM data collator whose task is set by a curriculum phase.

Inputs
------
Each feature is a dict with ``input_ids`` and, for whole-word phases, ``word_ids``: one integer per
token naming the word it belongs to (``-1`` or ``None`` for special tokens). Word ids come from the
tokenizer at tokenization time (``BatchEncoding.word_ids()`` of a fast tokenizer), never from
"##" string tests, so WordPiece, BPE and SentencePiece tokenizers all work; consecutive tokens with
the same word id form one word. Optional keys: ``attention_mask``, ``special_tokens_mask`` (computed
from the tokenizer's special ids when absent). :func:`bioptimus_hf.pretraining.tokenization.tokenize_with_word_ids`
builds such features and :func:`~bioptimus_hf.pretraining.tokenization.group_texts` packs them into fixed-length
blocks, renumbering word ids so that words stay distinct across packed texts.

Phase switches and DataLoader prefetching
-----------------------------------------
The Trainer (through accelerate) collates at least one batch ahead of the one it trains on, and
DataLoader workers collate several more. A batch masked for the old phase would therefore reach the
model after a switch. Batches returned by this collator remember the phase they were masked for;
when accelerate moves a batch to the device (``BatchEncoding.to``, in the main process, at the moment
the batch is consumed) a batch whose phase is no longer the active one is re-masked for the active
phase. Workers read the active phase from shared memory, so only the few batches prefetched across a
switch are re-masked. Realised masking statistics are counted in the main process when a batch is consumed
(moved to the device; a caller without accelerate calls ``batch.to(device)`` or :meth:`finalize` itself), in a
:class:`MaskingStatistics` that the schedule callback snapshots, restores and checkpoints; batches collated ahead
are not counted yet, so a checkpoint's statistics are those of the batches trained on.

Masking randomness: a stream keyed by the batch
-----------------------------------------------
By default (``masking_stream="keyed"``) each batch's masks are drawn from a generator seeded by the batch
itself: the base seed, the phase, the epoch and a digest of its unmasked token ids. Which process masks a batch,
and when, then no longer matters: the masks do not depend on the number of DataLoader workers or on how far they
prefetched, a batch re-masked after a phase switch gets what a worker would have drawn for the new phase, and a run
resumed from a checkpoint masks every remaining batch as the unbroken run did (the data order comes back with the
checkpoint, so the same batches come back). The epoch is in the key so that a batch repeated by an unshuffled
sampler is masked anew each epoch; the Trainer's epoch reaches the collator through :meth:`set_epoch` (the phase
callback calls it), in shared memory as the phase is, and a batch collated ahead across an epoch boundary is
re-masked when it is consumed, as across a phase switch. Identical batches in one epoch and phase get identical
masks. ``masking_stream="sequential"`` keeps the stream of releases made before (one generator per distributed
rank and DataLoader worker, drawn in collation order, restarting from its seed when a run resumes).

Static shapes for compiled training
-----------------------------------
With ``static_masked_positions=True`` each batch also carries ``masked_positions``: the flat indices of its
labelled positions, padded with ``-1`` to a length fixed by the phase and the batch shape (the *bucket*,
:mod:`bioptimus_hf.pretraining.static_shapes`), which a masked-only model
(:mod:`bioptimus_hf.pretraining.masked_lm`) gathers with. The collator is where the phase and the labels are
both known on the host, so nothing on the device waits for a count and ``torch.compile`` sees one shape per
phase. A batch with more labelled positions than the bucket gets a larger fixed size (never truncated) and is
counted in ``MaskingStatistics.overflows``.
"""

from __future__ import annotations

import hashlib
import logging
import os
import uuid
import weakref
from typing import Any, Sequence

import numpy as np
import torch
from transformers import BatchEncoding

from . import static_shapes
from .bioptimus_config import DEFAULT_MASKING_STREAM, MASKING_STREAMS, CurriculumArguments
from .phases import BIOPTIMUS_CURRICULUM, CurriculumPhase
from .tokenization import check_word_boundaries


logger = logging.getLogger(__name__)

_LIVE_COLLATORS: "weakref.WeakValueDictionary[str, CurriculumDataCollator]" = weakref.WeakValueDictionary()

# BERT's corruption rule for the selected tokens: 80% [MASK], 10% random token, 10% kept.
MASK_FRACTION = 0.8
RANDOM_FRACTION = 0.1


def _stream_seed(seed: int, rank: int, worker: int) -> int:
    """Independent, reproducible stream per (seed, distributed rank, DataLoader worker)."""
    return int(np.random.SeedSequence([seed, rank, worker]).generate_state(1, dtype=np.uint64)[0] >> 1)


def batch_key_seed(seed: int, phase_index: int, epoch: int, input_ids: torch.Tensor) -> int:
    """The seed of one batch's masking generator under the keyed stream: (seed, phase, epoch, token ids).

    The token ids enter through a 128-bit BLAKE2b digest of their int64 bytes and the batch's shape, so a batch
    keeps its key whatever process collates it."""
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
    """Realised masking per phase (masked / maskable tokens), and a window since the last log.

    Counted in the main process as batches reach the model. ``snapshot``/``restore`` let a caller keep
    evaluation batches out of the training figures; ``state_dict``/``load_state_dict`` carry the per-phase
    totals through checkpoints.
    """

    def __init__(self, num_phases: int):
        self.masked = [0] * num_phases
        self.maskable = [0] * num_phases
        # Batches whose labelled positions did not fit the phase's static bucket (see static_shapes).
        self.overflows = [0] * num_phases
        self.window_masked = 0
        self.window_maskable = 0
        self.window_id = 0

    def add(self, phase_index: int, masked: int, maskable: int, overflow: bool = False) -> int:
        """Count a batch; returns the window it was counted in."""
        self.masked[phase_index] += masked
        self.maskable[phase_index] += maskable
        self.overflows[phase_index] += int(overflow)
        self.window_masked += masked
        self.window_maskable += maskable
        return self.window_id

    def remove(self, phase_index: int, masked: int, maskable: int, window_id: int, overflow: bool = False) -> None:
        """Undo :meth:`add` (a batch re-masked for another phase)."""
        self.masked[phase_index] -= masked
        self.maskable[phase_index] -= maskable
        self.overflows[phase_index] -= int(overflow)
        if window_id == self.window_id:  # else the window it was counted in is already logged
            self.window_masked -= masked
            self.window_maskable -= maskable

    def fraction(self, phase_index: int) -> float | None:
        return self.masked[phase_index] / self.maskable[phase_index] if self.maskable[phase_index] else None

    def pop_window_fraction(self) -> float | None:
        value = self.window_masked / self.window_maskable if self.window_maskable else None
        self.window_masked = self.window_maskable = 0
        self.window_id += 1
        return value

    def snapshot(self) -> dict:
        return {
            "masked": list(self.masked),
            "maskable": list(self.maskable),
            "overflows": list(self.overflows),
            "window": (self.window_masked, self.window_maskable, self.window_id),
        }

    def restore(self, snapshot: dict) -> None:
        self.masked, self.maskable = list(snapshot["masked"]), list(snapshot["maskable"])
        self.overflows = list(snapshot.get("overflows", self.overflows))
        self.window_masked, self.window_maskable, self.window_id = snapshot["window"]

    def summed_over_ranks(self) -> "MaskingStatistics":
        """The per-phase totals of every process (a collective: under DDP every rank calls it at the same point).

        Each rank counts only the batches its own model replica saw; what a release reports as the run's realised
        masked fraction is the sum over ranks (in one process: a copy of these totals). The window is not summed.
        """
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
        """Restore per-phase totals; False (nothing changed) when they are for another number of phases."""
        masked, maskable = state.get("masked_tokens", []), state.get("maskable_tokens", [])
        if len(masked) != len(self.masked) or len(maskable) != len(self.maskable):
            return False
        self.masked, self.maskable = list(masked), list(maskable)
        overflows = state.get("masked_positions_overflows")  # absent from checkpoints written before it existed
        self.overflows = list(overflows) if overflows and len(overflows) == len(masked) else [0] * len(masked)
        return True


class CurriculumBatch(BatchEncoding):
    """A collated batch that can be re-masked in the main process if the phase changed meanwhile."""

    def __init__(self, data=None, *args, curriculum_state: dict | None = None, **kwargs):
        super().__init__(data, *args, **kwargs)
        self.curriculum_state = curriculum_state

    def __getstate__(self):
        state = super().__getstate__()
        state["curriculum_state"] = self.__dict__.get("curriculum_state")
        return state

    def __setstate__(self, state):
        super().__setstate__(state)
        self.curriculum_state = state.get("curriculum_state")

    def to(self, device, *, non_blocking: bool = False):
        state = self.__dict__.get("curriculum_state")
        if state is not None:
            collator = _LIVE_COLLATORS.get(state["collator_key"])
            if collator is not None:
                collator.finalize(self)
        moved = super().to(device, non_blocking=non_blocking)
        if "masked_positions" in moved:
            static_shapes.mark_static(moved)  # one compiled graph per bucket, never a dynamic-shape one
        return moved


class CurriculumDataCollator:
    """Masked-language-model collator for a curriculum of masking tasks.

    Args:
        tokenizer: the model's tokenizer; must define a mask token and a pad token.
        phases: the curriculum (default: the paper's four phases, :data:`BIOPTIMUS_CURRICULUM`).
        seed: base seed of the masking randomness.
        pad_to_multiple_of: pad batch length up to a multiple of this value.
        static_masked_positions: also emit ``masked_positions`` (labelled positions padded to the phase's
            fixed bucket) for a masked-only model under ``torch.compile`` (see the module docstring).
        masking_stream: ``"keyed"`` (default): each batch's masks are seeded by (seed, phase, epoch, its token
            ids), the same whichever process masks it and after a resume; ``"sequential"``: one stream per
            (distributed rank, DataLoader worker), as releases made before had (module docstring).

    The masking rate is a token budget as in BERT: each sequence gets ``round(rate * n)`` masked
    tokens (at least one), ``n`` being its maskable tokens (neither special nor padding). Token
    phases hit the budget exactly. Whole-word phases select whole words in random order and stop at
    the word that brings the count closest to the budget, so a sequence is within half a word of it
    and never has part of a word masked.
    """

    @classmethod
    def from_arguments(
        cls,
        arguments: CurriculumArguments,
        tokenizer,
        phases: Sequence[CurriculumPhase],
        seed: int,
        line_by_line=False,
    ) -> "CurriculumDataCollator":
        """The collator the curriculum flags describe, masking ``phases`` (a :class:`~.phases.Curriculum` or its
        phases) with ``--mask_seed``, else the run's ``seed``; padded lines are rounded up to a multiple of 8 for
        tensor cores. Refuses a tokenizer without a mask token (ValueError)."""
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
        phases = getattr(phases, "phases", phases)  # a Curriculum, or its phases
        phases = tuple(CurriculumPhase.from_dict(p) if isinstance(p, dict) else p for p in phases)
        if not phases:
            raise ValueError("CurriculumDataCollator needs at least one phase")
        versions = [p.version for p in phases]
        if len(set(versions)) != len(versions):
            raise ValueError(f"phase versions must be unique, got {versions}")
        if tokenizer.mask_token is None or tokenizer.mask_token_id is None:
            raise ValueError(
                f"tokenizer {type(tokenizer).__name__} ({getattr(tokenizer, 'name_or_path', '')}) has no mask token; "
                "masked-language modelling needs one (set tokenizer.mask_token or add it with add_special_tokens)"
            )
        if tokenizer.pad_token_id is None:
            raise ValueError(
                f"tokenizer {getattr(tokenizer, 'name_or_path', '')} has no pad token, needed to pad batches"
            )
        word_phases = [p.version for p in phases if p.masking_unit == "word"]
        if word_phases and getattr(tokenizer, "is_fast", False):
            names = ", ".join("v" + v for v in word_phases)
            check_word_boundaries(
                tokenizer,
                f"phase {names} masks whole words" if len(word_phases) == 1 else f"phases {names} mask whole words",
            )
        self.tokenizer = tokenizer
        self.phases = phases
        self.seed = int(seed)
        self.pad_to_multiple_of = pad_to_multiple_of
        self.static_masked_positions = bool(static_masked_positions)
        self.mask_token_id = int(tokenizer.mask_token_id)
        self.pad_token_id = int(tokenizer.pad_token_id)
        special = sorted({int(i) for i in tokenizer.all_special_ids})
        self.special_ids = torch.tensor(special, dtype=torch.long)
        vocab_size = len(tokenizer)
        keep = torch.ones(vocab_size, dtype=torch.bool)
        keep[self.special_ids[self.special_ids < vocab_size]] = False
        # Random replacements are drawn from real vocabulary entries only, never special tokens.
        self.replacement_ids = torch.nonzero(keep).flatten()
        # Active phase lives in shared memory so DataLoader workers (forked or spawned, persistent
        # or not) see switches made by the main process.
        self._active = torch.zeros(1, dtype=torch.long).share_memory_()
        self._epoch = torch.zeros(1, dtype=torch.long).share_memory_()  # the Trainer's epoch, likewise
        self.masking_stream = masking_stream
        self._key = uuid.uuid4().hex
        _LIVE_COLLATORS[self._key] = self
        self._generator: torch.Generator | None = None
        self._generator_owner: tuple | None = None
        # Realised masking statistics per phase, counted in the main process.
        self.stats = MaskingStatistics(len(phases))
        self.remasked_batches = 0

    # ------------------------------------------------------------------ phase selection
    @property
    def phase_index(self) -> int:
        return int(self._active[0])

    @property
    def active_phase(self) -> CurriculumPhase:
        return self.phases[self.phase_index]

    def set_phase(self, phase: int | str | CurriculumPhase) -> None:
        """Select the active phase by index, version string (``"0.2"`` or ``"v0.2"``) or object."""
        if isinstance(phase, CurriculumPhase):
            index = self.phases.index(phase)
        elif isinstance(phase, str):
            versions = [p.version for p in self.phases]
            key = phase[1:] if phase.startswith("v") else phase
            if key not in versions:
                raise ValueError(f"unknown phase version {phase!r}; this curriculum has {versions}")
            index = versions.index(key)
        else:
            index = int(phase)
            if not 0 <= index < len(self.phases):
                raise ValueError(f"phase index {index} out of range for {len(self.phases)} phases")
        self._active[0] = index

    @property
    def epoch(self) -> int:
        return int(self._epoch[0])

    def set_epoch(self, epoch: int) -> None:
        """The training epoch (0-based), part of each batch's key under the keyed stream (module docstring)."""
        if int(epoch) < 0:
            raise ValueError(f"epoch must be >= 0, got {epoch}")
        self._epoch[0] = int(epoch)

    # ------------------------------------------------------------------ randomness
    def _generator_for(self, input_ids: torch.Tensor, phase_index: int, epoch: int) -> torch.Generator:
        """The generator that masks a batch: its own (keyed) or the process's stream (sequential)."""
        if self.masking_stream == "keyed":
            return torch.Generator().manual_seed(batch_key_seed(self.seed, phase_index, epoch, input_ids))
        return self._rng()

    def _rng(self) -> torch.Generator:
        info = torch.utils.data.get_worker_info()
        owner = (os.getpid(), _distributed_rank(), 0 if info is None else info.id + 1)
        if self._generator is None or self._generator_owner != owner:
            self._generator = torch.Generator().manual_seed(_stream_seed(self.seed, owner[1], owner[2]))
            self._generator_owner = owner
        return self._generator

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_generator"] = None
        state["_generator_owner"] = None
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        _LIVE_COLLATORS.setdefault(self._key, self)

    # ------------------------------------------------------------------ collation
    def __call__(self, features: list[dict[str, Any]]) -> CurriculumBatch:
        input_ids, attention_mask, word_ids, maskable = self._pad(features)
        index, epoch = self.phase_index, self.epoch
        masked_inputs, labels = self.mask_tokens(
            input_ids, word_ids, maskable, self.phases[index], self._generator_for(input_ids, index, epoch)
        )
        data = {"input_ids": masked_inputs, "attention_mask": attention_mask, "labels": labels}
        if self.static_masked_positions:
            data["masked_positions"] = self.masked_positions(labels, self.phases[index])
        batch = CurriculumBatch(
            data,
            curriculum_state={
                "collator_key": self._key,
                "phase_index": index,
                "epoch": epoch,
                "input_ids": input_ids,
                "word_ids": word_ids,
                "maskable": maskable,
                "counted": False,
            },
        )
        # Counted when consumed (finalize), not here: a batch collated ahead of a checkpoint is trained on after
        # it, and counting it now would count it twice in a run resumed from that checkpoint.
        return batch

    def finalize(self, batch: CurriculumBatch) -> None:
        """Re-mask ``batch`` if it was masked for another phase than the active one (or, under the keyed stream,
        another epoch than the current one); count it."""
        state = batch.curriculum_state
        index, epoch = self.phase_index, self.epoch
        stale_epoch = self.masking_stream == "keyed" and state.get("epoch", epoch) != epoch
        if state["phase_index"] != index or stale_epoch:
            if state["counted"]:
                self._uncount(batch)
            masked_inputs, labels = self.mask_tokens(
                state["input_ids"],
                state["word_ids"],
                state["maskable"],
                self.phases[index],
                self._generator_for(state["input_ids"], index, epoch),
            )
            batch["input_ids"], batch["labels"] = masked_inputs, labels
            if "masked_positions" in batch:
                batch["masked_positions"] = self.masked_positions(labels, self.phases[index])
            state["phase_index"], state["epoch"] = index, epoch
            self.remasked_batches += 1
        if not state["counted"]:
            self._count(batch)

    def _count(self, batch: CurriculumBatch) -> None:
        state = batch.curriculum_state
        masked = int((batch["labels"] != -100).sum())
        maskable = int(state["maskable"].sum())
        overflow = "masked_positions" in batch and len(batch["masked_positions"]) > self.bucket_size(
            self.phases[state["phase_index"]], *batch["labels"].shape
        )
        if overflow and not self.stats.overflows[state["phase_index"]]:
            phase = self.phases[state["phase_index"]]
            logger.warning(
                "phase v%s: a batch has %d labelled positions, more than the static bucket of %d; gathered at %d "
                "positions instead (nothing dropped; under torch.compile one more compiled size). Counted in "
                "masked_positions_overflows.",
                phase.version,
                masked,
                self.bucket_size(phase, *batch["labels"].shape),
                len(batch["masked_positions"]),
            )
        window = self.stats.add(state["phase_index"], masked, maskable, overflow)
        state["counted"] = True
        state["counts"] = (masked, maskable, window, overflow)

    def _uncount(self, batch: CurriculumBatch) -> None:
        state = batch.curriculum_state
        masked, maskable, window, overflow = state["counts"]
        self.stats.remove(state["phase_index"], masked, maskable, window, overflow)
        state["counted"] = False

    # ------------------------------------------------------------------ static shapes
    @staticmethod
    def bucket_size(phase: CurriculumPhase, batch_size: int, seq_len: int) -> int:
        """The fixed length of ``masked_positions`` for ``phase`` and a ``batch_size x seq_len`` batch."""
        return static_shapes.masked_positions_bucket(phase.masking_rate, phase.whole_word, batch_size, seq_len)

    def masked_positions(self, labels: torch.Tensor, phase: CurriculumPhase) -> torch.Tensor:
        """The labelled positions of ``labels`` (flat, ascending), padded with -1 to the phase's bucket (or to
        the overflow size when more)."""
        return static_shapes.masked_positions(labels, self.bucket_size(phase, *labels.shape))

    def realised_fraction(self, phase_index: int | None = None) -> float | None:
        """Masked / maskable tokens over all batches of a phase (default: the active one)."""
        return self.stats.fraction(self.phase_index if phase_index is None else phase_index)

    def pop_window_fraction(self) -> float | None:
        """Realised masked fraction since the previous call (for periodic logging)."""
        return self.stats.pop_window_fraction()

    def _pad(self, features):
        if not features:
            raise ValueError("CurriculumDataCollator received an empty batch")
        if "input_ids" not in features[0]:
            raise ValueError(f"features need 'input_ids'; got keys {sorted(features[0])}")
        lengths = [len(f["input_ids"]) for f in features]
        width = max(lengths)
        if self.pad_to_multiple_of:
            width = -(-width // self.pad_to_multiple_of) * self.pad_to_multiple_of
        batch_size = len(features)
        has_words = "word_ids" in features[0]
        if all(n == width for n in lengths):
            # Packed blocks: one tensor conversion, no per-row padding work.
            input_ids = torch.as_tensor(np.asarray([f["input_ids"] for f in features], dtype=np.int64))
            attention_mask = (
                torch.as_tensor(np.asarray([f["attention_mask"] for f in features], dtype=np.int64))
                if "attention_mask" in features[0]
                else torch.ones(batch_size, width, dtype=torch.long)
            )
            word_ids = (
                torch.as_tensor(
                    np.asarray([[-1 if w is None else w for w in f["word_ids"]] for f in features], dtype=np.int64)
                )
                if has_words
                else None
            )
            special = (
                torch.as_tensor(np.asarray([f["special_tokens_mask"] for f in features], dtype=np.int64)).bool()
                if "special_tokens_mask" in features[0]
                else None
            )
        else:
            input_ids = torch.full((batch_size, width), self.pad_token_id, dtype=torch.long)
            attention_mask = torch.zeros(batch_size, width, dtype=torch.long)
            word_ids = torch.full((batch_size, width), -1, dtype=torch.long) if has_words else None
            special = torch.ones(batch_size, width, dtype=torch.bool) if "special_tokens_mask" in features[0] else None
            for row, (f, n) in enumerate(zip(features, lengths)):
                input_ids[row, :n] = torch.as_tensor(f["input_ids"], dtype=torch.long)
                if "attention_mask" in f:
                    attention_mask[row, :n] = torch.as_tensor(f["attention_mask"], dtype=torch.long)
                else:
                    attention_mask[row, :n] = 1
                if has_words:
                    word_ids[row, :n] = torch.as_tensor(
                        [-1 if w is None else w for w in f["word_ids"]], dtype=torch.long
                    )
                if special is not None:
                    special[row, :n] = torch.as_tensor(f["special_tokens_mask"], dtype=torch.bool)
        if special is None:
            special = torch.isin(input_ids, self.special_ids)
        maskable = attention_mask.bool() & ~special & ~torch.isin(input_ids, self.special_ids)
        if word_ids is not None:
            maskable &= word_ids >= 0
        return input_ids, attention_mask, word_ids, maskable

    # ------------------------------------------------------------------ masking
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
