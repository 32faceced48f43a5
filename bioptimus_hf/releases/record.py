"""The release record: what one BIOptimus release is, and the only reader and writer of ``bioptimus_phase.json``.

A release is the model at the end of one curriculum phase (``<output_dir>/releases/v0.k/``), described by one typed
:class:`ReleaseInfo` (the run's facts a :class:`RunFacts`, a student's its :class:`DistillationFacts`, a lexical
warm-up its :class:`LexicalWarmupFacts`). The writer, the cards and the Hub publisher read the object, never the JSON
(its fields: docs/ARCHITECTURE.md)."""

from __future__ import annotations

import math
import os
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Mapping

from ..utils.files import read_json, write_json_atomic
from .naming import is_temporary, normalise_version, release_dir_name, version_sort_key, version_tag


PHASE_FILE = "bioptimus_phase.json"
FORMAT_VERSION = 2  # a reader refuses another: its fields may mean something else


# ------------------------------------------------------------------------------------------ records
class _Record:
    """A record's ``to_dict``/``from_dict``: keys this code does not know are kept in ``extra`` (with a stored
    ``extra``), so that they survive a round trip; a missing list is an empty one."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None):
        data, known = dict(data or {}), {f.name: f for f in fields(cls) if f.name != "extra"}
        extra = dict(data.pop("extra", None) or {}) | {k: v for k, v in data.items() if k not in known}
        values = {k: v for k, v in data.items() if k in known}
        values |= {k: list(values.get(k) or []) for k, f in known.items() if f.default_factory is list}
        return cls(**values, extra=extra)


@dataclass
class LexicalWarmupFacts(_Record):
    """The lexical warm-up a run began with: its steps (global steps ``0 .. steps``, before the first phase), the
    first phase's masking it trained on, its learning-rate schedule, and which parameters it trained (every other
    parameter was frozen)."""

    steps: int
    learning_rate: float | None = None  # peak, under lr_scheduler_type over the warm-up's steps
    lr_scheduler_type: str | None = None
    lr_warmup_steps: int | None = None  # the schedule's own linear ramp inside the warm-up
    masking_version: str | None = None  # the phase whose masking the warm-up used (the first)
    parameters: list[str] = field(default_factory=list)  # qualified names (tied aliases after " = ")
    trained_parameter_count: int | None = None
    frozen_parameter_count: int | None = None
    release_version: str | None = None  # the warm-up's end released as this version (--lexical_warmup_release)
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class RunFacts(_Record):
    """Facts of the run that produced a release: model, data and optimisation (never credentials)."""

    base_model: str | None = None  # public name: the Hub id when known, else the folder name
    base_model_hub_id: str | None = None  # only when known, never guessed (lineage.py): None for a local start
    init_strategy: str | None = None
    tokenizer: str | None = None  # public name of the tokenizer (folder name or Hub id)
    vocab_size: int | None = None
    # "extend": the base vocabulary kept with ``added_tokens`` appended; "replace": a new vocabulary. None (and not
    # written): the run did not record it.
    vocabulary_mode: str | None = None
    added_tokens: int | None = None
    max_seq_length: int | None = None
    packing: bool | None = None
    masked_only_prediction: bool | None = None
    # who drew the dropout masks: "bulk" (utils/bulk_dropout.py, a CPU default) or "torch"; None means torch's.
    # Same dropout either way, another random stream.
    dropout_masks: str | None = None
    # where the curriculum's masks came from: "keyed" (seeded per batch; pretraining/collator.py) or "sequential";
    # None means sequential.
    masking_stream: str | None = None
    train_files: list[str] = field(default_factory=list)  # file names only
    dataset_name: str | None = None
    datasets: list[str] = field(default_factory=list)  # Hub dataset ids of the training data, if any
    learning_rate: float | None = None
    lr_scheduler_type: str | None = None
    warmup_ratio: float | None = None
    warmup_steps: int | None = None  # resolved number of warm-up steps
    weight_decay: float | None = None
    optim: str | None = None
    per_device_train_batch_size: int | None = None
    gradient_accumulation_steps: int | None = None
    world_size: int | None = None
    max_steps: int | None = None
    seed: int | None = None
    bf16: bool | None = None
    lexical_warmup: LexicalWarmupFacts | None = None  # None: the curriculum started at step 0
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self):
        if isinstance(self.lexical_warmup, Mapping):
            self.lexical_warmup = LexicalWarmupFacts.from_dict(self.lexical_warmup)

    @property
    def curriculum_steps(self) -> int | None:
        """The steps of the curriculum itself: ``max_steps`` minus the lexical warm-up's."""
        if self.max_steps is None:
            return None
        return self.max_steps - (self.lexical_warmup.steps if self.lexical_warmup is not None else 0)

    @property
    def effective_train_batch_size(self) -> int | None:
        """Sequences per optimizer step: per device × accumulation × processes."""
        parts = (self.per_device_train_batch_size, self.gradient_accumulation_steps or 1, self.world_size or 1)
        return math.prod(parts) if all(isinstance(p, int) for p in parts) else None

    @classmethod
    def from_training_arguments(cls, args: Any, **facts: Any) -> "RunFacts":
        """Optimisation facts from a ``TrainingArguments`` (``world_size`` is the number of processes),
        plus model and data ``facts`` (keyword arguments named like the fields; unknown ones go to ``extra``).
        With a ``lexical_warmup``, the learning-rate warm-up is the curriculum's: its ramp over the steps after the
        lexical warm-up (the schedule of :mod:`bioptimus_hf.pretraining.lexical_warmup`)."""
        warmup = args.warmup_steps
        known = {f.name for f in fields(cls)}
        extra = {k: v for k, v in facts.items() if k not in known}
        lexical = facts.get("lexical_warmup")
        lexical_steps = (
            lexical.steps if isinstance(lexical, LexicalWarmupFacts) else int((lexical or {}).get("steps") or 0)
        )
        curriculum_steps = args.max_steps - lexical_steps if args.max_steps and args.max_steps > 0 else None
        return cls(
            learning_rate=args.learning_rate,
            lr_scheduler_type=str(getattr(args.lr_scheduler_type, "value", args.lr_scheduler_type)),
            warmup_ratio=float(warmup) if isinstance(warmup, float) and 0 < warmup < 1 else None,
            warmup_steps=args.get_warmup_steps(curriculum_steps) if curriculum_steps else None,
            weight_decay=args.weight_decay,
            optim=str(getattr(args.optim, "value", args.optim)),
            per_device_train_batch_size=args.per_device_train_batch_size,
            gradient_accumulation_steps=args.gradient_accumulation_steps,
            world_size=args.world_size,
            max_steps=args.max_steps,
            seed=args.seed,
            bf16=bool(args.bf16),
            extra=extra,
            **{k: v for k, v in facts.items() if k in known},
        )

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        for key in ("lexical_warmup", "vocabulary_mode", "added_tokens"):
            if data[key] is None:
                del data[key]  # written only by the runs they describe
        data["effective_train_batch_size"] = self.effective_train_batch_size
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> "RunFacts":
        data = dict(data or {})
        data.pop("effective_train_batch_size", None)  # derived
        return super().from_dict(data)


@dataclass
class DistillationFacts(_Record):
    """How a student release was distilled: teacher, recipe, layer map, losses, sizes and measured speed."""

    teacher: str | None = None  # public name: the Hub id when known, else the folder name
    teacher_hub_id: str | None = None
    recipe: str | None = None
    # What the card says of the recipe and of each loss, written by the distillation wing (the recipes' owner)
    # so that a card is rendered from the release alone; records without them show the recipe's key.
    recipe_name: str | None = None  # the paper's name, e.g. "DistilBioBERT"
    recipe_description: str | None = None
    loss_descriptions: dict[str, str] = field(default_factory=dict)  # one line per loss in loss_weights
    student_init: str | None = None  # "teacher_layers" or "random"
    student_layers: list[int] = field(default_factory=list)  # teacher layers kept (or aligned to), 0-based
    layer_map: list[int] = field(default_factory=list)  # teacher layer g(l) of each student layer l
    loss_weights: dict[str, float] = field(default_factory=dict)  # only the losses that trained the student
    temperature: float | None = None
    projection: bool | None = None  # whether a learned W_p (dropped from the release) mapped student widths
    teacher_num_layers: int | None = None
    teacher_hidden_size: int | None = None
    teacher_parameters: int | None = None
    student_num_layers: int | None = None
    student_hidden_size: int | None = None
    student_parameters: int | None = None
    teacher_heldout_mlm_loss: float | None = None
    # Inference speed measured at the end of the run, teacher and student alternated on the same batches:
    # device, batch_size, seq_length, teacher_sequences_per_s, student_sequences_per_s, speedup.
    speed: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class ReleaseInfo:
    """One release: its phase of the curriculum, its measurements and the run's facts."""

    version: str
    phase_index: int | None = None
    masking_unit: str | None = None
    masking_rate: float | None = None
    corruption: bool | None = None
    steps: int | None = None
    start_step: int | None = None
    end_step: int | None = None
    global_step: int | None = None
    realised_masked_fraction: float | None = None
    heldout_mlm_loss: float | None = None
    heldout_perplexity: float | None = None
    curriculum: list[dict[str, Any]] = field(default_factory=list)  # every phase, with its steps
    run: RunFacts = field(default_factory=RunFacts)
    # Schedule changes accepted on resume (``--allow_schedule_change``): what changed, at which step.
    schedule_changes: list[dict[str, Any]] = field(default_factory=list)
    distillation: DistillationFacts | None = None  # a student distilled from a teacher; None for the curriculum's
    format_version: int = FORMAT_VERSION

    def __post_init__(self):
        self.version = normalise_version(self.version)
        if not isinstance(self.run, RunFacts):
            self.run = RunFacts.from_dict(self.run)
        if isinstance(self.distillation, Mapping):
            self.distillation = DistillationFacts.from_dict(self.distillation)
        if self.heldout_mlm_loss is not None and self.heldout_perplexity is None:
            self.heldout_perplexity = math.exp(self.heldout_mlm_loss) if self.heldout_mlm_loss < 50 else math.inf

    @property
    def dir_name(self) -> str:
        return release_dir_name(self.version)

    @property
    def tag(self) -> str:
        return version_tag(self.version)

    @property
    def training_tokens(self) -> int | None:
        """Upper bound on token positions trained on up to this release (padding included)."""
        steps, batch, length = self.global_step, self.run.effective_train_batch_size, self.run.max_seq_length
        return steps * batch * length if all(isinstance(x, int) for x in (steps, batch, length)) else None

    @property
    def is_student(self) -> bool:
        return self.distillation is not None

    @property
    def is_lexical_warmup(self) -> bool:
        """The model at the end of the run's lexical warm-up (released when asked), not of a curriculum phase."""
        warmup = self.run.lexical_warmup
        return warmup is not None and warmup.release_version == self.version

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["run"] = self.run.to_dict()
        if self.distillation is None:
            del data["distillation"]  # written only by a student
        if data["heldout_perplexity"] == math.inf:
            data["heldout_perplexity"] = None
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], source: str = PHASE_FILE) -> "ReleaseInfo":
        if not isinstance(data, Mapping) or "version" not in data:
            raise ValueError(f"{source}: expected a JSON object with a 'version' key")
        data = dict(data)
        format_version = data.pop("format_version", FORMAT_VERSION)
        if format_version != FORMAT_VERSION:
            raise ValueError(
                f"{source}: format version {format_version}, this bioptimus-hf reads {FORMAT_VERSION} (a newer record "
                "needs a newer bioptimus-hf)"
            )
        unknown = sorted(set(data) - {f.name for f in fields(cls)})
        if unknown:
            raise ValueError(f"{source}: unknown release field(s) {unknown}")
        try:
            return cls(**data)  # the run's and a student's facts as mappings, read by __post_init__
        except TypeError as error:
            raise ValueError(f"{source}: {error}") from None

    def save(self, release_dir: str | os.PathLike) -> Path:
        return write_json_atomic(Path(release_dir) / PHASE_FILE, self.to_dict())

    @classmethod
    def load(cls, release_dir: str | os.PathLike) -> "ReleaseInfo":
        path = Path(release_dir) / PHASE_FILE
        data = read_json(path, f"{path} not found: {release_dir} is not a BIOptimus release directory")
        return cls.from_dict(data, source=str(path))


def find_releases(path: str | os.PathLike) -> list[Path]:
    """Release directories under ``path`` in version order; work-in-progress directories are ignored.

    ``path`` may be a run's output_dir (holding ``releases/``), the ``releases/`` folder itself, or a single
    release directory.
    """
    path = Path(path)
    if is_temporary(path):
        raise FileNotFoundError(f"{path} is an unfinished release (being written or replaced), not a release")
    if (path / PHASE_FILE).is_file():
        return [path]
    releases_dir = path / "releases" if (path / "releases").is_dir() else path
    if not releases_dir.is_dir():
        raise FileNotFoundError(f"{path}: no such run, releases or release directory")
    found = [d for d in releases_dir.iterdir() if d.is_dir() and not is_temporary(d) and (d / PHASE_FILE).is_file()]
    if not found:
        raise FileNotFoundError(f"{releases_dir}: no release directories (v0.k/ with {PHASE_FILE}) found")
    return sorted(found, key=lambda d: version_sort_key(ReleaseInfo.load(d).version))
