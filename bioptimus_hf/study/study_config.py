"""What a study is (``bioptimus study``): named pre-training arms under one token budget, NER evaluation, and what
to analyse. Every field of :class:`StudyArguments` is a flag and a key of the study's yaml; an arm is a mapping of
``bioptimus pretrain`` settings over the shared ``pretraining_args``, without ``max_steps``: the token budget over
the tokens of one optimizer step, so that every arm sees the same number of tokens (docs/study.md).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

from ..releases.lineage import base_model_hub_id_field


# The `bioptimus pretrain` settings that the study sets itself, per arm; an arm may not set them.
STUDY_OWNED_ARGS = ("output_dir", "max_steps", "model_name_or_path", "tokenizer_name", "seed")
# The init settings that decide the start model: arms that agree on them share one initialised checkpoint.
INIT_KEYS = ("init_strategy", "init_norm_match", "max_contexts_per_token", "max_context_chars")
BASE_ROW = "base"  # the base model with no further pre-training, a row of every table
CHECKPOINT_KINDS = ("final", "releases", "steps")
# Arm names name directories and flags' values: letters, digits and `_ . - +` (`contextualized+warmup`).
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$")


def _mapping(value: Any, flag: str) -> dict[str, Any]:
    """A mapping given in a config file or as a flag (JSON text)."""
    if value is None or value == "":
        return {}
    if isinstance(value, dict):
        return dict(value)
    try:
        data = json.loads(value)
    except (TypeError, json.JSONDecodeError) as error:
        raise ValueError(f"--{flag}: expected a mapping (JSON object or yaml mapping), got {value!r} ({error})")
    if not isinstance(data, dict):
        raise ValueError(f"--{flag}: expected a mapping, got {data!r}")
    return data


def _refuse_owned(flag: str, mapping: dict[str, Any], owned: tuple[str, ...], why: str = "") -> None:
    for key in mapping:
        if key in owned:
            raise ValueError(f"--{flag} sets {key!r}, which the study sets itself{why}")


@dataclass(frozen=True)
class ArmConfig:
    """One pre-training setting of the study: a name and the ``bioptimus pretrain`` settings that define it."""

    name: str
    args: dict[str, Any]

    @classmethod
    def from_mapping(cls, data: dict[str, Any], shared: dict[str, Any]) -> "ArmConfig":
        data = dict(data)
        name = str(data.pop("name", "") or "")
        if not _NAME.match(name):
            raise ValueError(
                f"--arms: every arm needs a 'name' made of letters, digits, '_', '-', '.', '+'; got {name!r}"
            )
        if name == BASE_ROW:
            raise ValueError(f"--arms: {BASE_ROW!r} is the base model's row (--include_base), not an arm name")
        owned = sorted(set(data) & set(STUDY_OWNED_ARGS))
        if owned:
            raise ValueError(
                f"--arms: arm {name!r} sets {owned}, which the study sets itself (token budget, seed, "
                "base model, tokenizer, output directory)"
            )
        return cls(name, {**shared, **data})

    @property
    def init_strategy(self) -> str:
        return self.args.get("init_strategy", "continued")

    @property
    def init_key(self) -> str:
        """A name for the start model of this arm: equal for arms that would build the same model."""
        parts = [self.init_strategy]
        if self.init_strategy == "contextualized":
            if not _as_bool(self.args.get("init_norm_match", True)):
                parts.append("raw")
            parts += [
                f"{key}{self.args[key]}" for key in ("max_contexts_per_token", "max_context_chars") if key in self.args
            ]
        return "-".join(str(p) for p in parts)

    @property
    def curriculum_text(self) -> str:
        """The arm's curriculum for tables: the curriculum or its single phase, after the lexical warm-up if any."""
        single = self.args.get("single_phase")
        text = (
            f"single phase v{single}" if single not in (None, "all") else str(self.args.get("curriculum", "bioptimus"))
        )
        warmup = self.args.get("lexical_warmup_steps")
        if warmup:
            amount = f"{100 * float(warmup):g}%" if float(warmup) < 1 else f"{int(float(warmup))} steps"
            text = f"lexical warm-up ({amount}), then {text}"
        return text

    def tokens_per_step(self) -> int:
        """Tokens of one optimizer step (packed blocks: batch × accumulation × sequence length)."""
        batch = int(self.args.get("per_device_train_batch_size", 8))
        return batch * int(self.args.get("gradient_accumulation_steps", 1)) * int(self.args.get("max_seq_length", 512))

    def max_steps(self, token_budget: int) -> int:
        return max(1, math.ceil(token_budget / self.tokens_per_step()))


def _as_bool(value: Any) -> bool:
    return value if isinstance(value, bool) else str(value).lower() in ("1", "true", "yes")


@dataclass
class StudyArguments:
    """The flags of ``bioptimus study`` (every one can live in the study's yaml file)."""

    output_dir: str = field(metadata={"help": "Where arms train, NER runs and the study's results go."})
    model_name_or_path: str = field(metadata={"help": "The base model every arm starts from (Hub id or directory)."})
    token_budget: int = field(
        metadata={"help": "Training tokens of every arm (max_steps = budget / tokens per step)."}
    )
    arms: list[str] = field(
        default_factory=list,
        metadata={"help": "The arms: mappings with a 'name' and bioptimus pretrain settings (a yaml list)."},
    )
    pretraining_args: str | None = field(
        default=None, metadata={"help": "bioptimus pretrain settings shared by every arm (a mapping)."}
    )
    base_model_hub_id: str | None = base_model_hub_id_field()
    tokenizer_name: str | None = field(
        default=None,
        metadata={"help": "The new-vocabulary arms' tokenizer (default: trained in <output_dir>/tokenizer)."},
    )
    tokenizer_train_files: list[str] | None = field(
        default=None, metadata={"help": "Corpus the study's tokenizer is trained on (default: the arms' train_file)."}
    )
    tokenizer_vocab_size: str = field(
        default="30522", metadata={"help": "The trained vocabulary's size (extending a base: the total, or auto)."}
    )
    tokenizer_args: str | None = field(
        default=None,
        metadata={"help": "More bioptimus train-tokenizer settings (a mapping: {vocabulary_mode: extend})."},
    )
    seed: int = field(default=42, metadata={"help": "Seed of every arm (initialisation, data order, masking)."})
    include_base: bool = field(default=True, metadata={"help": "Evaluate the base model as a row of every table."})
    only_arms: list[str] | None = field(
        default=None,
        metadata={"help": f"Run only these arms this time ('{BASE_ROW}' alone: only the base row's NER runs)."},
    )
    ner_data_dirs: list[str] = field(
        default_factory=list, metadata={"help": "NER datasets (CoNLL directories with train/devel/test.tsv)."}
    )
    ner_seeds: list[int] = field(default_factory=lambda: [1, 2, 3], metadata={"help": "Seeds of each NER run."})
    ner_args: str | None = field(
        default=None, metadata={"help": "bioptimus ner settings of every NER run (a mapping)."}
    )
    evaluate_checkpoints: list[str] = field(
        default_factory=lambda: ["final"],
        metadata={"help": f"What of each arm NER evaluates, any of {CHECKPOINT_KINDS} (steps: Figure-3 curves)."},
    )
    evaluate_every_steps: int | None = field(
        default=None, metadata={"help": "With 'steps': keep and evaluate a checkpoint every N optimizer steps."}
    )
    analysis_corpus: list[str] | None = field(
        default=None, metadata={"help": "Corpus of the representation analysis (default: the arms' train_file)."}
    )
    analysis_max_sentences: int = field(
        default=2000, metadata={"help": "Sentences encoded for contextual word representations."}
    )
    analysis_projection: str = field(
        default="auto",
        metadata={"help": "2-D projection of the figures: tsne (scikit-learn), pca, or auto (tsne where installed)."},
    )
    skip_analysis: bool = field(default=False, metadata={"help": "Do not run the representation analysis."})
    report_only: bool = field(
        default=False, metadata={"help": "Train nothing: rewrite the results and figures from the work finished."}
    )
    prepare_only: bool = field(
        default=False,
        metadata={"help": "Build the tokenizer and start models the arms share, then stop (docs/study.md)."},
    )
    results_dir: str | None = field(
        default=None, metadata={"help": "Where results.json, results.md and figures go (default: <output_dir>/study)."}
    )
    reference_results: str | None = field(
        default=None,
        metadata={
            "help": "results.json of an earlier study with the same base model, token budget and NER settings "
            "(checked): its rows join the tables, paired with this study's by fine-tuning seed."
        },
    )
    reference_rows: list[str] | None = field(
        default=None, metadata={"help": "Rows of --reference_results to show and pair with (default: all of them)."}
    )

    def __post_init__(self):
        if self.token_budget <= 0:
            raise ValueError(f"--token_budget must be > 0, got {self.token_budget}")
        self.shared_pretraining_args = _mapping(self.pretraining_args, "pretraining_args")
        _refuse_owned("pretraining_args", self.shared_pretraining_args, STUDY_OWNED_ARGS)
        self.arm_configs = [
            ArmConfig.from_mapping(_mapping(a, "arms"), self.shared_pretraining_args) for a in self.arms
        ]
        self._check_selection([a.name for a in self.arm_configs])
        self.tokenizer_vocab_size = str(self.tokenizer_vocab_size)
        self.tokenizer_run_args = _mapping(self.tokenizer_args, "tokenizer_args")
        owned = ("train_files", "base_tokenizer", "output_dir", "vocab_size")
        why = " (--tokenizer_train_files, --model_name_or_path, --output_dir, --tokenizer_vocab_size)"
        _refuse_owned("tokenizer_args", self.tokenizer_run_args, owned, why)
        if self.tokenizer_name and self.tokenizer_run_args:
            raise ValueError("--tokenizer_args trains the study's vocabulary; --tokenizer_name gives one: use one")
        self.ner_run_args = _mapping(self.ner_args, "ner_args")
        _refuse_owned("ner_args", self.ner_run_args, ("model_name_or_path", "output_dir", "data_dir", "seeds", "seed"))
        if self.analysis_projection not in ("auto", "tsne", "pca"):
            raise ValueError(f"--analysis_projection {self.analysis_projection!r}: expected auto, tsne or pca")
        if self.reference_rows and not self.reference_results:
            raise ValueError("--reference_rows needs --reference_results (the earlier study's results.json)")
        self.results_dir = self.results_dir or f"{self.output_dir.rstrip('/')}/study"

    def _check_selection(self, names: list[str]) -> None:
        if not names and not self.include_base:
            raise ValueError("--arms: a study needs at least one arm (or --include_base)")
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"--arms: arm names must be unique, {duplicates} repeat")
        unknown = sorted(set(self.only_arms or []) - set(names) - {BASE_ROW})
        if unknown:
            raise ValueError(f"--only_arms {unknown}: no such arm (arms: {names}, or {BASE_ROW!r})")
        if self.prepare_only and self.report_only:
            raise ValueError("--prepare_only and --report_only exclude each other")
        bad = sorted(set(self.evaluate_checkpoints) - set(CHECKPOINT_KINDS))
        if bad:
            raise ValueError(f"--evaluate_checkpoints {bad}: expected any of {CHECKPOINT_KINDS}")
        if "steps" in self.evaluate_checkpoints and not (self.evaluate_every_steps or 0) > 0:
            raise ValueError("--evaluate_checkpoints steps needs --evaluate_every_steps N > 0")

    @property
    def selected_arms(self) -> list[ArmConfig]:
        return [a for a in self.arm_configs if not self.only_arms or a.name in self.only_arms]

    def corpus_files(self) -> list[str]:
        """The arms' training text (shared train_file), for the tokenizer and the analysis defaults."""
        files = self.shared_pretraining_args.get("train_file") or []
        return [files] if isinstance(files, str) else list(files)
