"""Running a study (``bioptimus study``): one tokenizer, one start model per initialisation, the arms one after
another, NER on each evaluated checkpoint. Each unit is a wing's run called in this process with settings built from
the study's mappings (:func:`typed_settings`: a refused value raises ``BadInput`` naming it), and is marked done
(:mod:`.done_marks`) once its results are written: a marked unit is skipped, an unmarked pre-training run resumes
from its own last checkpoint. :class:`StudyLayout` is the one definition of ``output_dir``'s layout.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import time
from collections import Counter
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from ..releases.record import find_releases
from ..utils.config_mapping import CommandParser
from ..utils.errors import bad_input
from ..utils.files import write_json_atomic
from ..utils.secrets import redact
from .done_marks import is_done, mark_done, read_done
from .study_config import BASE_ROW, INIT_KEYS, ArmConfig, StudyArguments


logger = logging.getLogger(__name__)


class StudyLayout:
    """Where each piece of a study lives under its output directory (the one definition of the layout)."""

    def __init__(self, output_dir: str | Path):
        self.root = Path(output_dir)

    @property
    def tokenizer(self) -> Path:
        return self.root / "tokenizer"

    def init(self, init_key: str) -> Path:
        return self.root / "init" / init_key

    def arm(self, name: str) -> Path:
        return self.root / "arms" / name

    def pretraining(self, name: str) -> Path:
        return self.arm(name) / "pretraining"

    def ner_run(self, name: str, target: str, dataset: str, seed: int) -> Path:
        return self.arm(name) / "ner" / target / dataset / f"seed_{seed}"


def checkpoint_targets(pretraining_dir: Path, kinds: Sequence[str], every_steps: int | None) -> dict[str, Path]:
    """The model directories of a finished arm that NER evaluates, by target name (``final``, ``v0.1``,
    ``step_400`` ...), in training order."""
    targets: dict[str, Path] = {}
    if "steps" in kinds and every_steps:
        steps = sorted(
            (int(p.name.split("-")[1]), p)
            for p in pretraining_dir.glob("checkpoint-*")
            if p.name.split("-")[1].isdigit()
        )
        targets.update({f"step_{s}": p for s, p in steps if s % every_steps == 0})
    if "releases" in kinds:
        with contextlib.suppress(FileNotFoundError):
            targets.update({p.name: p for p in find_releases(pretraining_dir)})
    if "final" in kinds:
        targets["final"] = pretraining_dir
    return targets


def typed_settings(dataclass_types: Sequence[type], mapping: Mapping[str, Any]) -> tuple:
    """A unit's settings as its run's dataclasses (see the module docstring); bad values raise ``BadInput``."""
    with bad_input():
        return CommandParser(dataclass_types).parse_dict(mapping)


class StudyRunner:
    """Runs the units of a study in order, skipping finished ones; ``computed`` counts the units it ran."""

    def __init__(self, args: StudyArguments, on_progress: Callable[[], None] | None = None):
        self.args = args
        self.layout = StudyLayout(args.output_dir)
        self.on_progress = on_progress  # called after every finished unit (e.g. to rewrite the report)
        self.computed: Counter[str] = Counter()

    # ------------------------------------------------------------------ shared inputs
    def tokenizer(self) -> str:
        """The new vocabulary of every new-vocabulary arm: given, or trained once."""
        if self.args.tokenizer_name:
            return self.args.tokenizer_name
        from ..vocabulary.tokenizer_training import COVERAGE_REPORT_NAME

        path = self.layout.tokenizer
        if not (path / COVERAGE_REPORT_NAME).is_file():  # written last inside an all-at-once directory
            from ..vocabulary.run import train_and_report
            from ..vocabulary.tokenizer_config import TokenizerTrainingArguments

            files = self.args.tokenizer_train_files or self.args.corpus_files()
            if not files:
                raise ValueError("--tokenizer_train_files (or a shared train_file) is needed to train the tokenizer")
            settings = {
                **self.args.tokenizer_run_args,
                "train_files": files,
                "base_tokenizer": self.args.model_name_or_path,
                "vocab_size": self.args.tokenizer_vocab_size,
                "output_dir": str(path),
            }
            train_and_report(*typed_settings((TokenizerTrainingArguments,), settings))
            self.computed["tokenizer"] += 1
        return str(path)

    def start_model(self, arm: ArmConfig, tokenizer: str) -> Path | None:
        """The initialised start model shared by every arm with the same initialisation (None: the base itself)."""
        if arm.init_strategy == "continued":
            return None
        from ..pretraining.bioptimus_config import EmbeddingInitArguments
        from ..vocabulary.embedding_init import INIT_REPORT_NAME
        from ..vocabulary.init_config import StartModelArguments
        from ..vocabulary.run import write_initialized_model

        path = self.layout.init(arm.init_key)
        if not (path / INIT_REPORT_NAME).is_file():  # bioptimus init-embeddings writes the directory all at once
            init_args = {k: v for k, v in arm.args.items() if k in INIT_KEYS or k.startswith("init_")}
            init_args.setdefault("init_corpus_files", arm.args.get("train_file"))
            settings = {
                **init_args,
                "model_name_or_path": self.args.model_name_or_path,
                "tokenizer_name": tokenizer,
                "output_dir": str(path),
                "seed": self.args.seed,
            }
            write_initialized_model(*typed_settings((StartModelArguments, EmbeddingInitArguments), settings))
            self.computed[f"init:{arm.init_key}"] += 1
        return path

    # ------------------------------------------------------------------ one arm
    def pretraining_args(self, arm: ArmConfig, start_model: Path | None) -> dict[str, Any]:
        """The arm's ``bioptimus pretrain`` arguments, completed with what the study decides."""
        args = dict(arm.args)
        if start_model is not None:
            # The start model is already initialised: train on from it with its own (new) vocabulary.
            for key in [k for k in args if k in INIT_KEYS or k.startswith("init_")]:
                del args[key]
            args.update(
                model_name_or_path=str(start_model), tokenizer_name=str(start_model), init_strategy="continued"
            )
        else:
            args["model_name_or_path"] = self.args.model_name_or_path
        if self.args.base_model_hub_id:
            args["base_model_hub_id"] = self.args.base_model_hub_id
        if "steps" in self.args.evaluate_checkpoints:
            args["save_steps"] = self.args.evaluate_every_steps
            args.pop("save_total_limit", None)  # every evaluated checkpoint must stay
        args.update(
            output_dir=str(self.layout.pretraining(arm.name)),
            max_steps=arm.max_steps(self.args.token_budget),
            seed=self.args.seed,
            overwrite_output_dir=True,
            do_train=True,
        )
        return args

    def pretrain(self, arm: ArmConfig, tokenizer: str) -> Path:
        """Train the arm (or resume it); returns its run directory."""
        arm_dir = self.layout.arm(arm.name)
        run_dir = self.layout.pretraining(arm.name)
        if is_done(arm_dir):
            return run_dir
        start_model = self.start_model(arm, tokenizer)
        args = self.pretraining_args(arm, start_model)
        write_json_atomic(
            arm_dir / "pretraining_args.json",
            {"arm": arm.name, "init_strategy": arm.init_strategy, "init_key": arm.init_key, "args": redact(args)},
        )
        logger.info("study: pre-training arm %s (%d steps)", arm.name, args["max_steps"])
        started = time.perf_counter()
        # Resumes from the last complete checkpoint of run_dir; --overwrite_output_dir only matters when there is
        # none (an attempt killed before its first checkpoint).
        from ..pretraining.bioptimus_config import PRETRAINING_ARGUMENT_TYPES
        from ..pretraining.run import run_pretraining

        run_pretraining(*typed_settings(PRETRAINING_ARGUMENT_TYPES, args))
        self.computed[f"pretrain:{arm.name}"] += 1
        seconds = time.perf_counter() - started
        summary = dict(arm=arm.name, max_steps=args["max_steps"], token_budget=self.args.token_budget)
        mark_done(arm_dir, {**summary, "seconds_this_attempt": seconds})
        self._progress()
        return run_dir

    # ------------------------------------------------------------------ NER
    def ner(self, row: str, targets: dict[str, Path]) -> None:
        """Every (target, dataset, seed) fine-tune of a row that is not done yet."""
        from ..ner.fine_tuning_config import NER_ARGUMENT_TYPES
        from ..ner.run import fine_tune_ner

        runs = itertools.product(targets.items(), self.args.ner_data_dirs, self.args.ner_seeds)
        for (target, model_dir), data_dir, seed in runs:
            dataset = Path(data_dir).name
            run_dir = self.layout.ner_run(row, target, dataset, seed)
            if is_done(run_dir):
                continue
            logger.info("study: NER %s/%s on %s, seed %d", row, target, dataset, seed)
            started = time.perf_counter()
            settings = {
                "save_model": False,
                "report_to": "none",
                "bf16_if_supported": False,  # float32, as the study's records ran (ner_args may say true)
                **self.args.ner_run_args,
                "model_name_or_path": str(model_dir),
                "model_name": f"{row}/{target}",
                "data_dir": data_dir,
                "output_dir": str(run_dir),
                "seeds": [seed],
            }
            fine_tune_ner(*typed_settings(NER_ARGUMENT_TYPES, settings))
            self.computed[f"ner:{row}/{target}/{dataset}/{seed}"] += 1
            seconds = time.perf_counter() - started
            mark_done(run_dir, dict(row=row, target=target, dataset=dataset, seed=seed, seconds=seconds))
            self._progress()

    # ------------------------------------------------------------------ the whole study
    def prepare(self) -> str | None:
        """The inputs the selected arms share: the new vocabulary and each initialised start model (once each)."""
        if not any(a.init_strategy != "continued" for a in self.args.selected_arms):
            return None
        tokenizer = self.tokenizer()
        for arm in self.args.selected_arms:
            self.start_model(arm, tokenizer)
        return tokenizer

    def run(self) -> None:
        """Base row first (the reference every arm is compared with), then each arm: train, then evaluate."""
        tokenizer = self.prepare()
        if self.args.include_base:
            self.ner(BASE_ROW, {"final": Path(self.args.model_name_or_path)})
        for arm in self.args.selected_arms:
            run_dir = self.pretrain(arm, tokenizer)
            kinds, every = self.args.evaluate_checkpoints, self.args.evaluate_every_steps
            self.ner(arm.name, checkpoint_targets(run_dir, kinds, every))

    def _progress(self) -> None:
        if self.on_progress is not None:
            self.on_progress()


def finished_ner_runs(layout: StudyLayout, row: str) -> list[dict[str, Any]]:
    """Every finished NER fine-tune of a row: its done mark plus the per-seed record ``bioptimus ner`` wrote."""
    from ..finetuning.results import load_results

    runs = []
    for mark in sorted((layout.arm(row) / "ner").glob("*/*/seed_*/study_done.json")):
        results = load_results(str(mark.parent))
        run_info = {k: v for k, v in results.items() if k != "per_seed"}
        runs.append({**read_done(mark.parent), "result": results["per_seed"][0], "run_info": run_info})
    return runs
