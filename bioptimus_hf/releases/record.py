"""The release record: what one BIOptimus release is, and the only reader and writer of ``bioptimus_phase.json``.

A release is the model at the end of one curriculum phase (``<output_dir>/releases/v0.k/``). Everything
that describes it — the phase's masking task, where it sits in the curriculum, the held-out loss, and the
facts of the run that produced it — is one typed :class:`ReleaseInfo`, with the run's facts in a
:class:`RunFacts`. The training callback builds it in one call, and the release writer, the model card
and the Hub publisher read the object, never the raw JSON. The names of release directories, branches, tags and
per-version repositories are :mod:`.naming`'s; what a record may say of a model's origin (Hub ids, public names of
local paths) is :mod:`.lineage`'s; what a release's own files say of its model is :mod:`.checkpoint_facts`'s.

Format versions of ``bioptimus_phase.json``:

* 1 (no ``format_version`` key; written by bioptimus-hf 0.1.0): ``run.train_batch_size`` was the
  *effective* batch (per device × accumulation × processes) and ``run.warmup_steps`` held the
  ``TrainingArguments`` value (a float ratio when below 1). :meth:`ReleaseInfo.from_dict` migrates it.
* 2: ``run`` holds ``per_device_train_batch_size`` and the derived ``effective_train_batch_size``;
  warm-up as ``warmup_ratio`` (when given as a ratio) and the resolved ``warmup_steps``.
* 3: format 2 plus a ``distillation`` object (:class:`DistillationFacts`): the release is a student distilled
  from a teacher (``run_distillation.py``). Only such releases are written as format 3; curriculum releases
  stay format 2, so older readers keep reading them and refuse students (whose card they cannot render).

A run with a lexical warm-up before its curriculum (:mod:`bioptimus_hf.pretraining.lexical_warmup`) records it
as ``run.lexical_warmup`` (:class:`LexicalWarmupFacts`), still format 2: the key is written only by such runs,
and a reader that does not know it keeps it in ``run.extra``. The warm-up's end is not a release unless the run
asked for one (``--lexical_warmup_release V``): then it is release ``vV`` with ``phase_index`` null, the first
phase's masking, steps ``0 .. warm-up steps``, and ``run.lexical_warmup.release_version`` equal to its own version
(:attr:`ReleaseInfo.is_lexical_warmup`).
"""

from __future__ import annotations

import math
import os
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Mapping

from ..utils.files import read_json, write_json_atomic
from .checkpoint_facts import CheckpointFacts as CheckpointFacts  # moved; importable from here as before
from .lineage import base_model_hub_id as base_model_hub_id  # moved; importable from here as before
from .lineage import public_name
from .naming import is_temporary, normalise_version, release_dir_name, version_sort_key, version_tag
from .naming import version_repo_id as version_repo_id  # moved; importable from here as before


PHASE_FILE = "bioptimus_phase.json"
FORMAT_VERSION = 2  # a curriculum release
STUDENT_FORMAT_VERSION = 3  # a release with a `distillation` record (a distilled student)
NEWEST_FORMAT_VERSION = STUDENT_FORMAT_VERSION


# ------------------------------------------------------------------------------------------ records
def _known_fields_and_extra(cls: type, data: Mapping[str, Any] | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """A record's keys split into ``cls``'s fields and the rest, kept in ``extra`` (with a stored ``extra``): a key
    written by a newer version survives a round trip through an older reader."""
    data = dict(data or {})
    known = {f.name for f in fields(cls)} - {"extra"}
    extra = dict(data.pop("extra", {}) or {})
    extra.update({k: v for k, v in data.items() if k not in known})
    return {k: v for k, v in data.items() if k in known}, extra


@dataclass
class LexicalWarmupFacts:
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

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "LexicalWarmupFacts":
        values, extra = _known_fields_and_extra(cls, data)
        values["parameters"] = list(values.get("parameters") or [])
        return cls(**values, extra=extra)


@dataclass
class RunFacts:
    """Facts of the run that produced a release: model, data and optimisation (never credentials)."""

    base_model: str | None = None  # public name: the Hub id when known, else the folder name
    base_model_hub_id: str | None = None  # only when known, never guessed (lineage.py): None for a local start
    init_strategy: str | None = None
    tokenizer: str | None = None  # public name of the tokenizer (folder name or Hub id)
    vocab_size: int | None = None
    # "extend": the base vocabulary kept with ``added_tokens`` appended; "replace": a new vocabulary. None (and not
    # written): a run of the base vocabulary, or a record written before the choice existed.
    vocabulary_mode: str | None = None
    added_tokens: int | None = None
    max_seq_length: int | None = None
    packing: bool | None = None
    masked_only_prediction: bool | None = None
    # who drew the dropout masks: "bulk" (utils/bulk_dropout.py, a CPU default) or "torch"; None: a record
    # written before the choice existed (torch's). Same dropout either way, another random stream.
    dropout_masks: str | None = None
    # where the curriculum's masks came from: "keyed" (seeded per batch; pretraining/collator.py) or "sequential";
    # None: a record written before the choice existed (sequential).
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
        if self.lexical_warmup is None:
            del data["lexical_warmup"]  # a run without the warm-up writes the same record as before it existed
        for key in ("vocabulary_mode", "added_tokens"):
            if data[key] is None:
                del data[key]  # likewise a run whose vocabulary mode is unknown
        data["effective_train_batch_size"] = self.effective_train_batch_size
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], format_version: int = FORMAT_VERSION) -> "RunFacts":
        data = dict(data or {})
        data.pop("effective_train_batch_size", None)
        if format_version < 2:
            data = _migrate_run_v1(data)
        values, extra = _known_fields_and_extra(cls, data)
        values["train_files"] = list(values.get("train_files") or [])
        values["datasets"] = list(values.get("datasets") or [])
        return cls(**values, extra=extra)


def _migrate_run_v1(run: dict[str, Any]) -> dict[str, Any]:
    """Format 1 -> 2: ``train_batch_size`` was per device × accumulation × processes; ``warmup_steps`` the raw
    TrainingArguments value; paths were stored as given."""
    run = dict(run)
    effective = run.pop("train_batch_size", None)
    accumulation = run.get("gradient_accumulation_steps") or 1
    world = run.get("world_size") or 1
    if run.get("per_device_train_batch_size") is None and isinstance(effective, int):
        run["per_device_train_batch_size"] = effective // (accumulation * world)
    warmup = run.get("warmup_steps")
    if isinstance(warmup, float) and 0 < warmup < 1:
        run["warmup_ratio"] = warmup
        max_steps = run.get("max_steps")
        run["warmup_steps"] = math.ceil(warmup * max_steps) if isinstance(max_steps, int) else None
    elif isinstance(warmup, (int, float)):
        run["warmup_steps"] = int(warmup)
    # A format-1 record did not say where its base was loaded from: no Hub id is guessed from the name's shape.
    base = run.get("base_model")
    run["base_model"] = public_name(base)
    run["tokenizer"] = public_name(run.get("tokenizer"))
    run["train_files"] = [os.path.basename(str(f)) for f in run.get("train_files") or []]
    return run


@dataclass
class DistillationFacts:
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

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "DistillationFacts":
        values, extra = _known_fields_and_extra(cls, data)
        return cls(**values, extra=extra)


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
    # Set for a student distilled from a teacher (format 3); None for curriculum releases.
    distillation: DistillationFacts | None = None
    format_version: int = FORMAT_VERSION

    def __post_init__(self):
        self.version = normalise_version(self.version)
        if isinstance(self.distillation, Mapping):
            self.distillation = DistillationFacts.from_dict(self.distillation)
        self.format_version = STUDENT_FORMAT_VERSION if self.distillation is not None else FORMAT_VERSION
        if self.heldout_mlm_loss is not None and self.heldout_perplexity is None:
            self.heldout_perplexity = math.exp(self.heldout_mlm_loss) if self.heldout_mlm_loss < 50 else math.inf

    @property
    def dir_name(self) -> str:
        return release_dir_name(self.version)

    @property
    def tag(self) -> str:
        return version_tag(self.version)

    @property
    def is_last(self) -> bool:
        return bool(self.curriculum) and str(self.curriculum[-1].get("version")) == self.version

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
            del data["distillation"]  # a curriculum release stays byte-for-byte format 2
        if data["heldout_perplexity"] == math.inf:
            data["heldout_perplexity"] = None
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], source: str = PHASE_FILE) -> "ReleaseInfo":
        if not isinstance(data, Mapping) or "version" not in data:
            raise ValueError(f"{source}: expected a JSON object with a 'version' key")
        data = dict(data)
        format_version = int(data.pop("format_version", 1))
        if format_version > NEWEST_FORMAT_VERSION:
            raise ValueError(
                f"{source}: format version {format_version} is newer than this bioptimus-hf understands "
                f"({NEWEST_FORMAT_VERSION}); upgrade bioptimus-hf"
            )
        run = RunFacts.from_dict(data.pop("run", {}) or {}, format_version)
        distillation = data.pop("distillation", None)
        if distillation is not None and format_version < STUDENT_FORMAT_VERSION:
            raise ValueError(
                f"{source}: a 'distillation' record needs format version {STUDENT_FORMAT_VERSION}, "
                f"the file says {format_version}"
            )
        known = {f.name for f in fields(cls)} - {"run", "format_version"}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"{source}: unknown release field(s) {unknown}")
        try:
            return cls(
                **data,
                run=run,
                distillation=DistillationFacts.from_dict(distillation) if distillation is not None else None,
            )
        except TypeError as error:
            raise ValueError(f"{source}: {error}") from None

    def save(self, release_dir: str | os.PathLike) -> Path:
        return write_json_atomic(Path(release_dir) / PHASE_FILE, self.to_dict())

    @classmethod
    def load(cls, release_dir: str | os.PathLike) -> "ReleaseInfo":
        path = Path(release_dir) / PHASE_FILE
        data = read_json(path, f"{path} not found: {release_dir} is not a BIOptimus release directory")
        return cls.from_dict(data, source=str(path))


def is_release_dir(path: str | os.PathLike) -> bool:
    path = Path(path)
    return path.is_dir() and not is_temporary(path) and (path / PHASE_FILE).is_file()


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
    found = [d for d in releases_dir.iterdir() if is_release_dir(d)]
    if not found:
        raise FileNotFoundError(f"{releases_dir}: no release directories (v0.k/ with {PHASE_FILE}) found")
    return sorted(found, key=lambda d: version_sort_key(ReleaseInfo.load(d).version))
