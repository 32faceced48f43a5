"""Curriculum phases: the masked-language-model task of each stage of a BIOptimus run."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Sequence

MASKING_UNITS = ("token", "word")


@dataclass(frozen=True)
class CurriculumPhase:
    """One masked-language-model task of the curriculum.

    Args:
        version: release name written at the end of the phase (``"0.1"`` -> ``releases/v0.1``).
        masking_unit: ``"token"`` masks single sub-tokens, ``"word"`` masks whole words.
        masking_rate: token budget per sequence, as a fraction of its maskable (non-special,
            non-padding) tokens; must be in (0, 1).
        corruption: ``True`` applies BERT's 80% [MASK] / 10% random / 10% kept rule to the selected
            tokens; ``False`` turns every selected token into [MASK].
    """

    version: str
    masking_unit: str = "token"
    masking_rate: float = 0.15
    corruption: bool = True

    def __post_init__(self):
        if self.masking_unit not in MASKING_UNITS:
            raise ValueError(
                f"phase v{self.version}: unknown masking unit {self.masking_unit!r}; expected one of {MASKING_UNITS}"
            )
        if not (isinstance(self.masking_rate, (int, float)) and 0.0 < float(self.masking_rate) < 1.0):
            raise ValueError(f"phase v{self.version}: masking rate {self.masking_rate!r} is outside (0, 1)")
        if not str(self.version):
            raise ValueError("a phase needs a non-empty version string")

    @property
    def whole_word(self) -> bool:
        return self.masking_unit == "word"

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "CurriculumPhase":
        known = {"version", "masking_unit", "masking_rate", "corruption"}
        unknown = set(data) - known - {"steps"}
        if unknown:
            raise ValueError(f"unknown phase field(s) {sorted(unknown)}; expected {sorted(known)} (and 'steps')")
        return cls(**{k: v for k, v in data.items() if k in known})


# The paper's Table 4: BIOptimus 0.1 -> 0.4.
BIOPTIMUS_CURRICULUM: tuple[CurriculumPhase, ...] = (
    CurriculumPhase("0.1", masking_unit="token", masking_rate=0.15, corruption=True),
    CurriculumPhase("0.2", masking_unit="word", masking_rate=0.15, corruption=True),
    CurriculumPhase("0.3", masking_unit="word", masking_rate=0.20, corruption=True),
    CurriculumPhase("0.4", masking_unit="word", masking_rate=0.20, corruption=False),
)

# Later phases get more steps (the paper trains each harder task longer); fractions of the run.
BIOPTIMUS_PHASE_FRACTIONS: tuple[float, ...] = (0.1, 0.2, 0.3, 0.4)


def resolve_phase_steps(phase_steps: Sequence[float | int], max_steps: int) -> list[int]:
    """Turn per-phase step counts or fractions of the run into integer step counts.

    Integers (``int`` or whole floats >= 1) are step counts; values in (0, 1) are fractions of
    ``max_steps``. Fractions are allocated with the largest-remainder rule so that, when every
    phase is a fraction summing to 1, the counts add up to ``max_steps`` exactly.
    """
    if not phase_steps:
        raise ValueError("phase_steps is empty: every phase needs a number of steps")
    if any((not isinstance(s, (int, float))) or isinstance(s, bool) or s <= 0 or math.isnan(s) for s in phase_steps):
        bad = [s for s in phase_steps if not isinstance(s, (int, float)) or isinstance(s, bool) or not s > 0]
        raise ValueError(f"phase_steps {list(phase_steps)}: each phase needs a positive number of steps (bad: {bad})")
    is_fraction = [isinstance(s, float) and s < 1.0 for s in phase_steps]
    if any(is_fraction) and not all(is_fraction):
        raise ValueError(f"phase_steps {list(phase_steps)} mixes step counts and fractions of the run; use one kind")
    if all(is_fraction):
        if max_steps is None or max_steps <= 0:
            raise ValueError("phase_steps are fractions of the run, so the run needs max_steps > 0")
        total = sum(phase_steps)
        if abs(total - 1.0) > 1e-6:
            raise ValueError(f"phase_steps fractions {list(phase_steps)} sum to {total:g}, not 1")
        raw = [f * max_steps for f in phase_steps]
        counts = [math.floor(r) for r in raw]
        order = sorted(range(len(raw)), key=lambda i: raw[i] - counts[i], reverse=True)
        for i in order[: max_steps - sum(counts)]:
            counts[i] += 1
    else:
        counts = [int(s) for s in phase_steps]
        if any(c != s for c, s in zip(counts, phase_steps)):
            raise ValueError(f"phase_steps {list(phase_steps)}: step counts must be whole numbers")
    empty = [i for i, c in enumerate(counts) if c <= 0]
    if empty:
        raise ValueError(
            f"phase(s) {empty} get no steps ({counts} of {max_steps}): raise max_steps or change phase_steps"
        )
    return counts


def phase_boundaries(counts: Sequence[int]) -> list[int]:
    """Global step at which each phase ends (cumulative sums of ``counts``)."""
    ends, total = [], 0
    for c in counts:
        total += c
        ends.append(total)
    return ends


def phase_index_at(global_step: int, ends: Sequence[int]) -> int:
    """Phase that trains the optimizer step following ``global_step`` completed steps."""
    for i, end in enumerate(ends):
        if global_step < end:
            return i
    return len(ends) - 1
