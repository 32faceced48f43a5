"""The curriculum: the masked-language-model task of each phase of a BIOptimus run, and how long each lasts.

:class:`CurriculumPhase` is one task; :class:`Curriculum` the ordered phases with their ``phase_steps``, read from
``"bioptimus"`` (the paper's Table 4) or a json/yaml file, resolved against ``max_steps`` into a
:class:`PhaseSchedule` (what a checkpoint stores, so that a resume with other settings is noticed). A lexical
warm-up (:mod:`.lexical_warmup`) comes first, on the first phase's masking, writing no release; the phases share
the remaining steps.
"""

from __future__ import annotations

import bisect
import itertools
import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Sequence

from ..releases.naming import normalise_version


MASKING_UNITS = ("token", "word")


@dataclass(frozen=True)
class CurriculumPhase:
    """One masked-language-model task of the curriculum.

    Args:
        version: release name written at the end of the phase (``"0.1"`` -> ``releases/v0.1``).
        masking_unit: ``"token"`` masks single sub-tokens, ``"word"`` masks whole words.
        masking_rate: token budget per sequence, a fraction in (0, 1) of its maskable tokens.
        corruption: BERT's 80% [MASK] / 10% random / 10% kept rule (``True``), or every selected token [MASK]."""

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
        normalise_version(self.version)  # it names a release directory, a branch and a tag

    @property
    def whole_word(self) -> bool:
        return self.masking_unit == "word"

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "CurriculumPhase":
        known = {"version", "masking_unit", "masking_rate", "corruption"}
        if not isinstance(data, dict):
            raise ValueError(f"a phase must be a mapping of {sorted(known)}, got {data!r}")
        unknown = set(data) - known - {"steps"}
        if unknown:
            raise ValueError(f"unknown phase field(s) {sorted(unknown)}; expected {sorted(known)} (and 'steps')")
        if "version" not in data:
            raise ValueError(f"phase {data} has no 'version'")
        values = {k: v for k, v in data.items() if k in known}
        values["version"] = str(values["version"])
        return cls(**values)


def as_phases(phases: Sequence[CurriculumPhase | dict], source: str) -> tuple[CurriculumPhase, ...]:
    """``phases`` (objects or mappings) as a curriculum's phases: at least one, versions unique (ValueError naming
    ``source``)."""
    phases = tuple(CurriculumPhase.from_dict(p) if isinstance(p, dict) else p for p in phases)
    versions = [p.version for p in phases]
    if not phases:
        raise ValueError(f"{source}: a curriculum needs at least one phase")
    if len(set(versions)) != len(versions):
        raise ValueError(f"{source}: phase versions must be unique, got {versions}")
    return phases


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
    """Turn per-phase step counts or fractions of the run into integer step counts: integers are counts, values in
    (0, 1) fractions of ``max_steps``, allocated by largest remainder (fractions summing to 1 add up to
    ``max_steps``)."""
    if not phase_steps:
        raise ValueError("phase_steps is empty: every phase needs a number of steps")
    bad = [s for s in phase_steps if isinstance(s, bool) or not isinstance(s, (int, float)) or not s > 0]
    if bad:  # (NaN is not > 0)
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


def resolve_lexical_warmup_steps(warmup_steps: float | int | None, max_steps: int) -> int:
    """The lexical warm-up's steps for a run of ``max_steps``: a count (``int``, or a whole float >= 1) or a
    fraction of the run (a float in (0, 1), rounded to the nearest step); 0 or None: no warm-up. Raises
    ValueError naming ``--lexical_warmup_steps``."""
    if warmup_steps is None or warmup_steps == 0:
        return 0
    if isinstance(warmup_steps, bool) or not isinstance(warmup_steps, (int, float)) or not warmup_steps > 0:
        raise ValueError(
            f"--lexical_warmup_steps {warmup_steps!r}: expected a number of steps or a fraction of "
            "--max_steps in (0, 1)"
        )
    if isinstance(warmup_steps, float) and warmup_steps < 1.0:
        steps = math.floor(warmup_steps * max_steps + 0.5)
        if steps < 1:
            raise ValueError(
                f"--lexical_warmup_steps {warmup_steps:g} of --max_steps {max_steps} is no step at all; "
                "give a larger fraction or a number of steps"
            )
        return steps
    if not float(warmup_steps).is_integer():
        raise ValueError(
            f"--lexical_warmup_steps {warmup_steps!r}: a number of steps must be whole (or give a "
            "fraction of --max_steps in (0, 1))"
        )
    return int(warmup_steps)


def phase_boundaries(counts: Sequence[int], start: int = 0) -> list[int]:
    """Global step at which each phase ends (cumulative sums of ``counts``, from ``start``: the warm-up's end)."""
    return list(itertools.accumulate(counts, initial=start))[1:]


def phase_index_at(global_step: int, ends: Sequence[int]) -> int:
    """Phase that trains the optimizer step following ``global_step`` completed steps (the last one after the end)."""
    return min(bisect.bisect_right(ends, global_step), len(ends) - 1)


@dataclass(frozen=True)
class PhaseSchedule:
    """A curriculum resolved for one run: the phases, steps per phase and the run's ``max_steps``; the phases
    start after ``lexical_warmup_steps`` steps of lexical warm-up (0: none), which mask as the first phase."""

    phases: tuple[CurriculumPhase, ...]
    step_counts: tuple[int, ...]
    max_steps: int
    lexical_warmup_steps: int = 0

    @property
    def versions(self) -> tuple[str, ...]:
        return tuple(p.version for p in self.phases)

    @property
    def ends(self) -> list[int]:
        return phase_boundaries(self.step_counts, start=self.lexical_warmup_steps)

    def in_lexical_warmup(self, global_step: int) -> bool:
        """Whether the optimizer step following ``global_step`` completed steps is a lexical warm-up step."""
        return global_step < self.lexical_warmup_steps

    def phase_at(self, global_step: int) -> int:
        return phase_index_at(global_step, self.ends)

    def start_of(self, index: int) -> int:
        return self.ends[index] - self.step_counts[index]

    def to_dict(self) -> dict[str, Any]:
        return {
            "phases": [p.to_dict() for p in self.phases],
            "step_counts": list(self.step_counts),
            "max_steps": self.max_steps,
            "lexical_warmup_steps": self.lexical_warmup_steps,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "PhaseSchedule":
        phases = tuple(CurriculumPhase.from_dict(p) for p in data["phases"])
        counts = tuple(int(n) for n in data["step_counts"])
        return cls(phases, counts, int(data["max_steps"]), int(data["lexical_warmup_steps"]))

    def describe(self) -> str:
        phases = ", ".join(f"v{v}={n} steps" for v, n in zip(self.versions, self.step_counts))
        if self.lexical_warmup_steps:
            phases = f"lexical warm-up={self.lexical_warmup_steps} steps (v{self.versions[0]} masking), {phases}"
        return f"{phases} (max_steps={self.max_steps})"


@dataclass
class Curriculum:
    """The phases of a run and their step allocation (counts, or fractions of the steps after the lexical
    warm-up), and the warm-up's steps (a count or a fraction of ``max_steps``; 0: none)."""

    phases: tuple[CurriculumPhase, ...] = BIOPTIMUS_CURRICULUM
    phase_steps: tuple[float | int, ...] = BIOPTIMUS_PHASE_FRACTIONS
    source: str = field(default="bioptimus", compare=False)
    lexical_warmup_steps: float | int = 0

    def __post_init__(self):
        self.phases = as_phases(self.phases, self.source)
        self.phase_steps = tuple(_as_step_value(s) for s in self.phase_steps)
        self.lexical_warmup_steps = self.lexical_warmup_steps or 0
        if len(self.phase_steps) != len(self.phases):
            raise ValueError(
                f"{self.source}: phase_steps has {len(self.phase_steps)} values for {len(self.phases)} curriculum phases "
                f"({list(self.versions)})"
            )

    @property
    def versions(self) -> tuple[str, ...]:
        return tuple(p.version for p in self.phases)

    @classmethod
    def from_spec(
        cls,
        spec: str = "bioptimus",
        phase_steps: Sequence[float | int] | None = None,
        lexical_warmup_steps: float | int | None = None,
    ) -> "Curriculum":
        """``"bioptimus"`` (the paper's Table 4) or a json/yaml file: a list of phases, or a mapping with
        ``phases`` (each ``{version, masking_unit, masking_rate, corruption[, steps]}``). ``phase_steps``
        overrides the steps of the file (which otherwise default to 10/20/30/40% of the run);
        ``lexical_warmup_steps`` puts a lexical warm-up before the phases."""
        if spec == "bioptimus":
            phases, file_steps = BIOPTIMUS_CURRICULUM, None
        else:
            phases, file_steps = _read_curriculum_file(Path(spec))
        default = (
            BIOPTIMUS_PHASE_FRACTIONS
            if len(phases) == len(BIOPTIMUS_PHASE_FRACTIONS)
            else [1.0 / len(phases)] * len(phases)
        )
        steps = phase_steps or file_steps or default
        return cls(tuple(phases), tuple(steps), source=spec, lexical_warmup_steps=lexical_warmup_steps or 0)

    def only(self, version: str) -> "Curriculum":
        """This curriculum reduced to its phase ``version`` (``"0.1"`` or ``"v0.1"``), trained for the whole run."""
        key = str(version)[1:] if str(version)[:1] in ("v", "V") else str(version)
        for phase in self.phases:
            if phase.version == key:
                source = f"{self.source} (phase v{key} only)"
                return Curriculum((phase,), (1,), source=source, lexical_warmup_steps=self.lexical_warmup_steps)
        raise ValueError(f"--single_phase {version}: no such phase in {self.source} (phases: {list(self.versions)})")

    def resolve(self, max_steps: int) -> PhaseSchedule:
        """Step counts for a run of ``max_steps``: the lexical warm-up's, then every phase's; every phase must get
        steps and all must end by ``max_steps``."""
        warmup = resolve_lexical_warmup_steps(self.lexical_warmup_steps, max_steps)
        curriculum_steps = max_steps - warmup
        if warmup and curriculum_steps < len(self.phases):
            raise ValueError(
                f"--lexical_warmup_steps {self.lexical_warmup_steps:g} is {warmup} steps of a run of --max_steps "
                f"{max_steps}: that leaves {max(curriculum_steps, 0)} steps for the {len(self.phases)} curriculum "
                "phase(s) after it, which need at least one step each; lower --lexical_warmup_steps (e.g. a fraction "
                "of the run such as 0.1) or raise --max_steps"
            )
        counts = resolve_phase_steps(list(self.phase_steps), curriculum_steps)
        total = sum(counts)
        if total > curriculum_steps:
            after_warmup = f" minus the {warmup} steps of --lexical_warmup_steps" if warmup else ""
            raise ValueError(
                f"phase_steps {list(self.phase_steps)} add up to {total} steps but the run has max_steps={max_steps}"
                f"{after_warmup}: phases past step {max_steps} would never run and their releases would be missing; "
                "raise --max_steps or lower --phase_steps"
            )
        if total < curriculum_steps:
            # The last phase trains on to the end of the run (its release is written at max_steps).
            counts[-1] += curriculum_steps - total
        return PhaseSchedule(self.phases, tuple(counts), max_steps, warmup)


def _as_step_value(value: Any) -> float | int:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"phase_steps value {value!r} is not a number")
    return int(value) if float(value).is_integer() and value >= 1 else float(value)


def _read_curriculum_file(path: Path) -> tuple[list[CurriculumPhase], list | None]:
    if not path.is_file():
        raise ValueError(f"--curriculum {path}: neither 'bioptimus' nor an existing json/yaml file")
    import yaml

    try:
        text = path.read_text(encoding="utf-8")
        data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except Exception as error:  # yaml/json/unicode errors: name the file
        raise ValueError(f"--curriculum {path}: cannot parse ({error})") from None
    entries = data.get("phases") if isinstance(data, dict) else data
    if not isinstance(entries, list) or not entries:
        raise ValueError(f"--curriculum {path}: expected a non-empty list of phases (or a mapping with 'phases')")
    phases = []
    for number, entry in enumerate(entries, start=1):
        try:
            phases.append(CurriculumPhase.from_dict(entry))
        except (TypeError, ValueError) as error:
            raise ValueError(f"--curriculum {path}: phase {number}: {error}") from None
    steps = [entry["steps"] for entry in entries if "steps" in entry]
    if steps and len(steps) != len(entries):
        raise ValueError(f"--curriculum {path}: give 'steps' for every phase or for none")
    return phases, (steps or None)
