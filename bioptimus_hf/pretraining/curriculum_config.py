"""Arguments of the curriculum (``run_pretraining.py``, and any script that trains through phases), and of the
lexical warm-up before it (``run_pretraining.py``; :mod:`.lexical_warmup`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from .phases import Curriculum


# Where each batch's masking randomness comes from (the collator's docstring says how each works); the first is the
# default.
MASKING_STREAMS = ("keyed", "sequential")
DEFAULT_MASKING_STREAM = MASKING_STREAMS[0]


ALL_PHASES = "all"  # --single_phase all: every phase of the curriculum


@dataclass
class CurriculumArguments:
    curriculum: str = field(
        default="bioptimus",
        metadata={
            "help": "'bioptimus' (the paper's four phases) or a json/yaml file with a list of phases "
            "({version, masking_unit, masking_rate, corruption[, steps]})."
        },
    )
    phase_steps: list[float] | None = field(
        default=None,
        metadata={
            "help": "Steps per phase: counts (100 200 ...) or fractions of max_steps (default 0.1 0.2 0.3 0.4)."
        },
    )
    single_phase: str | None = field(
        default=None,
        metadata={
            "help": "Train the whole run in this one phase of the curriculum (e.g. 0.1: token masking at 15%%) "
            "instead of walking through all of them ('all', the same as unset); --phase_steps is then "
            "ignored."
        },
    )
    mask_seed: int | None = field(default=None, metadata={"help": "Masking seed (default: --seed)."})
    masking_stream: str = field(
        default=DEFAULT_MASKING_STREAM,
        metadata={
            "help": "Where each batch's masks come from: 'keyed' (default), a generator seeded by the masking "
            "seed, the phase, the epoch and the batch's token ids, so the masks do not depend on the "
            "DataLoader workers and a resumed run masks as the unbroken run did; 'sequential', one "
            "stream per rank and worker, as runs before this option had (to reproduce one).",
            "choices": list(MASKING_STREAMS),
        },
    )
    allow_schedule_change: bool = field(
        default=False,
        metadata={
            "help": "Resume from a checkpoint trained under another schedule (max_steps, curriculum or phase "
            "steps): continue under the new one from the checkpoint's step; releases record the change."
        },
    )

    def build(self, lexical_warmup_steps: float | int | None = None) -> Curriculum:
        """The :class:`Curriculum` these arguments describe, after ``lexical_warmup_steps`` of lexical warm-up
        (:class:`LexicalWarmupArguments`; None: none). Raises ValueError naming the flag or file."""
        if self.single_phase not in (None, ALL_PHASES):
            return Curriculum.from_spec(self.curriculum, lexical_warmup_steps=lexical_warmup_steps).only(
                self.single_phase
            )
        return Curriculum.from_spec(self.curriculum, self.phase_steps, lexical_warmup_steps=lexical_warmup_steps)


@dataclass
class LexicalWarmupArguments:
    lexical_warmup_steps: float | None = field(
        default=None,
        metadata={
            "help": "A lexical warm-up before the curriculum, as a number of steps (500) or a fraction of "
            "--max_steps (0.1): only the lexical parameters train (input embeddings, the MLM head, the "
            "embedding LayerNorm), the rest of the model frozen, on the first phase's masking; the "
            "curriculum then runs in the remaining steps (--phase_steps fractions are fractions of "
            "those). Default: none. See docs/curriculum.md."
        },
    )
    lexical_warmup_learning_rate: float | None = field(
        default=None,
        metadata={
            "help": "Peak learning rate of the lexical warm-up (default: --learning_rate), under the run's "
            "--lr_scheduler_type and --warmup_steps ratio over the warm-up's own steps; the curriculum "
            "after it has the same schedule over its steps, at --learning_rate."
        },
    )

    lexical_warmup_release: str | None = field(
        default=None,
        metadata={
            "help": "Also release the model at the end of the lexical warm-up, as this version (e.g. 0.0; not "
            "one of the curriculum's): the start model with only its lexical parameters trained. "
            "Default: none (the warm-up's end is not a release)."
        },
    )

    def __post_init__(self):
        if self.lexical_warmup_learning_rate is not None and not self.lexical_warmup_learning_rate > 0:
            raise ValueError(f"--lexical_warmup_learning_rate {self.lexical_warmup_learning_rate}: must be > 0")
        if self.lexical_warmup_release is not None:
            from ..releases.naming import normalise_version

            if not self.lexical_warmup_steps:
                raise ValueError(
                    f"--lexical_warmup_release {self.lexical_warmup_release}: there is no warm-up to "
                    "release (give --lexical_warmup_steps)"
                )
            try:
                self.lexical_warmup_release = normalise_version(self.lexical_warmup_release)
            except ValueError as error:
                raise ValueError(f"--lexical_warmup_release: {error}") from None
