"""BioptimusTrainer: a ``Trainer`` that runs the BIOptimus curriculum on a raw text dataset, as TRL's ``SFTTrainer``
runs supervised fine-tuning on one.

    trainer = BioptimusTrainer("bert-base-uncased", args=BioptimusConfig(output_dir="out", max_steps=1000),
                               train_dataset=corpus["train"])
    trainer.train()             # out/releases/v0.1 ... v0.4, each with bioptimus_phase.json and a model card

Given a model name it builds the start model of ``args.init_strategy``; ``bioptimus pretrain``
(:func:`~.run.run_pretraining`) is this trainer over files. A Trainer of your own: ``CurriculumMaskingMixin``."""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, fields
from typing import Any, NamedTuple

from transformers import PreTrainedModel, TrainingArguments, set_seed

from ..releases.lineage import base_model_hub_id, public_name
from ..releases.publisher import start_release_publisher
from ..releases.release_config import ReleaseHub, resolve_release_hub
from ..utils.allocator import retain_freed_memory
from ..utils.bulk_dropout import enable_bulk_dropout, use_bulk_dropout
from ..utils.files import write_json_atomic
from ..utils.hardware import pin_memory_where_useful
from ..utils.masked_lm_loading import tied_keys_expected
from ..utils.sequence_length import max_model_tokens
from ..utils.tokenizer_loader import load_fast_tokenizer
from ..vocabulary.embedding_init import (
    INIT_REPORT_NAME,
    build_initialized_model,
    start_model_provenance,
    vocabulary_facts,
)
from .bioptimus_config import BioptimusConfig, EmbeddingInitArguments, build_curriculum, group_settings
from .callback import PhaseReleases, PhaseScheduleCallback
from .collator import CurriculumDataCollator, CurriculumMaskingMixin
from .data import prepare_pretraining_datasets, shuffle_buffer_size
from .lexical_warmup import LexicalWarmup, LexicalWarmupTrainer, lexical_parameters
from .masked_lm import masked_only_status, use_masked_only_prediction
from .phases import Curriculum, PhaseSchedule
from .static_shapes import allow_compiled_shapes
from .stream_resume import StreamResumeMixin


logger = logging.getLogger(__name__)

# ``release_hub`` not given: the trainer reads ``push_to_hub`` itself (resolve_release_hub).
FROM_ARGS = "from args"


class CurriculumPlan(NamedTuple):
    """The curriculum of a run, its schedule over ``max_steps`` and its lexical warm-up (None: none), built once
    (:func:`curriculum_schedule`) and given to everything that needs them."""

    curriculum: Curriculum
    schedule: PhaseSchedule
    warmup: LexicalWarmup | None


def curriculum_schedule(config: BioptimusConfig) -> CurriculumPlan:
    """The curriculum of ``config``, its schedule over ``max_steps`` and its lexical warm-up (None: none). Cheap (no
    model): raises ValueError naming the flag or file for a schedule that cannot run."""
    if config.max_steps is None or config.max_steps <= 0:
        raise ValueError("--max_steps must be > 0: curriculum phases are scheduled in optimizer steps")
    curriculum = build_curriculum(config, config.lexical_warmup_steps)
    schedule = curriculum.resolve(config.max_steps)
    warmup = None
    if schedule.lexical_warmup_steps:  # its steps as resolved here, for the Trainer and the phases alike
        warmup = LexicalWarmup(schedule.lexical_warmup_steps, config.lexical_warmup_learning_rate)
        if config.lexical_warmup_release in schedule.versions:
            raise ValueError(
                f"--lexical_warmup_release {config.lexical_warmup_release} is a version of the curriculum "
                f"({', '.join(schedule.versions)}): give the warm-up's release its own (e.g. 0.0)"
            )
    return CurriculumPlan(curriculum, schedule, warmup)


def as_bioptimus_config(args: TrainingArguments | None, model: Any) -> BioptimusConfig:
    """``args`` as a :class:`BioptimusConfig`: itself, plain ``TrainingArguments`` with the curriculum's defaults
    added, or (None) the defaults with ``output_dir`` named after the model."""
    if isinstance(args, BioptimusConfig):
        return args
    if args is None:
        name = model if isinstance(model, str) else getattr(getattr(model, "config", None), "_name_or_path", "")
        return BioptimusConfig(output_dir=f"{os.path.basename(os.path.normpath(name or 'model'))}-bioptimus")
    return BioptimusConfig(**{f.name: getattr(args, f.name) for f in fields(args) if f.init})


class BioptimusTrainer(CurriculumMaskingMixin, StreamResumeMixin, LexicalWarmupTrainer):
    """A ``Trainer`` for the curriculum on raw text (see the module docstring).

    Args:
        model: a masked LM, or the name or path of the base model to build the start model from.
        args: a :class:`~.bioptimus_config.BioptimusConfig` (plain ``TrainingArguments`` take its defaults).
        train_dataset, eval_dataset: datasets with a ``text_column_name`` column (or tokenized with word ids); with
            an ``eval_dataset`` each release holds its phase's held-out MLM loss.
        processing_class: the tokenizer, or its name or path (default: the model's).
        data_collator: a :class:`~.collator.CurriculumDataCollator` (default: the one ``args`` describes).
        release_hub: where releases are published (:func:`~bioptimus_hf.releases.release_config.resolve_release_hub`;
            default: from ``args.push_to_hub``).
        Every other argument is the ``Trainer``'s."""

    def __init__(
        self,
        model: PreTrainedModel | str | None = None,
        args: TrainingArguments | None = None,
        data_collator: CurriculumDataCollator | None = None,
        train_dataset: Any = None,
        eval_dataset: Any = None,
        processing_class: Any = None,
        *,
        release_hub: ReleaseHub | None | str = FROM_ARGS,
        **kwargs: Any,
    ):
        args = as_bioptimus_config(args, model)
        pin_memory_where_useful(args)
        plan = curriculum_schedule(args)
        hub = resolve_release_hub(args) if release_hub is FROM_ARGS else release_hub

        # The start model (the paper's Table 1) and its tokenizer; the masked-only head, dropout masks, allocator.
        set_seed(args.seed)
        start = _StartModel.build(model, processing_class, args)
        model, tokenizer = start.model, start.tokenizer
        facts = self._prepare_model(model, args, plan)

        # The curriculum's masking collator (it refuses a tokenizer without a mask token), with static shapes.
        collator = data_collator or CurriculumDataCollator.from_arguments(
            args, tokenizer, plan.curriculum, args.seed, args.line_by_line
        )
        self._set_static_shapes(collator, args, plan, facts["masked_only_prediction"])

        # The texts as packed blocks with word ids.
        data = prepare_pretraining_datasets(
            train_dataset, eval_dataset, tokenizer, args, args, model_max_tokens=max_model_tokens(model, tokenizer)
        )
        args.remove_unused_columns = False  # word_ids / special_tokens_mask feed the collator
        if data.streaming:
            # Each rank reads its own shard; rank 0 must not collate and broadcast for everybody.
            args.accelerator_config.dispatch_batches = False

        # The callback that switches phases and writes a release at each phase end.
        self.release_publisher = start_release_publisher(hub, args)
        phase_callback = PhaseScheduleCallback(
            collator,
            schedule=plan.schedule,
            evaluate_at_phase_end=data.eval is not None,
            allow_schedule_change=args.allow_schedule_change,
            releases=PhaseReleases(
                run_info={**start.release_facts(args, data, collator), **facts},
                on_release=[self.release_publisher] if self.release_publisher is not None else [],
                lexical_warmup_release=args.lexical_warmup_release,
            ),
        )
        # With a lexical warm-up, the Trainer freezes the body for it and runs its learning-rate schedule.
        super().__init__(
            model=model,
            args=args,
            data_collator=collator,
            train_dataset=data.train,
            eval_dataset=data.eval,
            processing_class=tokenizer,
            lexical_warmup=plan.warmup,
            # A stream resumes from the loader state its checkpoint holds, not by reading every trained batch again.
            streaming_resume=args.streaming_resume,
            shuffle_buffer_size=shuffle_buffer_size(args) if data.streaming else 0,
            on_inexact_resume=[
                lambda step, text: phase_callback.schedule_changes.append({"step": step, "description": text})
            ],
            **kwargs,
        )
        self.add_callback(phase_callback)
        self.phase_callback = phase_callback
        self.schedule = plan.schedule
        self.init_report = start.init_report
        if start.init_report is not None and self.is_world_process_zero():
            write_json_atomic(f"{args.output_dir}/{INIT_REPORT_NAME}", start.init_report)

    def train(self, *args: Any, **kwargs: Any):
        # A checkpoint holds a tied decoder once: the Trainer's "missing keys" warning on resume is expected then.
        with tied_keys_expected(self.model):
            return super().train(*args, **kwargs)

    def log(self, logs: dict[str, float], start_time: float | None = None) -> None:
        # The curriculum's metrics, before the history and every callback (report_to's reporters included) see logs.
        self.phase_callback.add_metrics(logs)
        super().log(logs, start_time)

    @staticmethod
    def _prepare_model(model: PreTrainedModel, args: BioptimusConfig, plan: CurriculumPlan) -> dict[str, Any]:
        """The masked-only head, dropout masks, allocator and the lexical warm-up's parameters; their facts for the
        releases' record."""
        masked_only = use_masked_only_prediction(model, args.masked_only_prediction, args.gradient_accumulation_steps)
        logger.info("masked-only prediction: %s", masked_only_status(model))
        facts: dict[str, Any] = {"masked_only_prediction": masked_only, "dropout_masks": "torch"}
        if use_bulk_dropout(args.bulk_dropout, args):
            logger.info("bulk dropout: %s", enable_bulk_dropout(model))
            facts["dropout_masks"] = "bulk"
        if args.retain_freed_memory and args.device.type == "cpu":
            logger.info("allocator: %s", retain_freed_memory())
        if plan.warmup is not None:
            schedule, lexical = plan.schedule, lexical_parameters(model)
            warmup_facts = plan.warmup.facts(args, lexical, schedule.versions[0], args.lexical_warmup_release)
            logger.info(
                "lexical warm-up: %d steps at peak learning rate %g on v%s's masking, training %s",
                schedule.lexical_warmup_steps,
                warmup_facts.learning_rate,
                schedule.versions[0],
                lexical.describe(),
            )
            facts["lexical_warmup"] = warmup_facts
        return facts

    def _set_static_shapes(
        self, collator: CurriculumDataCollator, args: BioptimusConfig, plan: CurriculumPlan, masked_only: bool
    ) -> None:
        static_shapes = self._static_shapes(args, masked_only)
        collator.static_masked_positions = static_shapes
        if static_shapes and args.torch_compile:
            # The warm-up's end recompiles the first phase's graph once (requires_grad is part of its guards).
            allow_compiled_shapes(len(plan.curriculum.phases) + (1 if plan.warmup is not None else 0))
        logger.info("static masked positions (one compiled shape per phase): %s", "on" if static_shapes else "off")

    @staticmethod
    def _static_shapes(args: BioptimusConfig, masked_only: bool) -> bool:
        """``static_masked_positions`` as the run can honour it (default: on with ``torch_compile``)."""
        if args.static_masked_positions is None:
            return bool(args.torch_compile) and masked_only
        if args.static_masked_positions and not masked_only:
            logger.warning("--static_masked_positions needs masked-only prediction, which is off: not used")
            return False
        return args.static_masked_positions


@dataclass
class _StartModel:
    """The start model of a run, its tokenizer, its initialisation report (None: given, not built) and the names
    they came from."""

    model: PreTrainedModel
    tokenizer: Any
    init_report: dict | None
    model_name: str | None
    tokenizer_name: str | None

    @classmethod
    def build(cls, model: PreTrainedModel | str | None, processing_class: Any, args: BioptimusConfig) -> "_StartModel":
        """The model given (with its tokenizer), or the start model of ``args.init_strategy`` built from a name."""
        model_name = model if isinstance(model, str) or model is None else getattr(model, "name_or_path", None)
        tokenizer_name = (
            processing_class if isinstance(processing_class, str) else getattr(processing_class, "name_or_path", None)
        )
        if isinstance(model, PreTrainedModel):
            tokenizer = load_fast_tokenizer(processing_class or model_name, purpose="word ids")
            return cls(model, tokenizer, None, model_name, tokenizer_name)
        model, tokenizer, init_report = build_initialized_model(
            model,
            processing_class,  # a name, a path or a tokenizer (load_fast_tokenizer takes each)
            group_settings(args, EmbeddingInitArguments),
            seed=args.seed,
            config_name=args.config_name,
            progress=not args.disable_tqdm,
        )
        return cls(model, tokenizer, init_report, model_name, tokenizer_name)

    def release_facts(self, args: BioptimusConfig, data: Any, collator: CurriculumDataCollator) -> dict[str, Any]:
        """The model and data facts of the releases' record."""
        # A checkpoint of bioptimus init-embeddings continued here is described by its own initialisation and base.
        init_strategy, base_model, tokenizer_source = start_model_provenance(
            self.model_name, self.tokenizer_name, args.init_strategy
        )
        hub_id = base_model_hub_id(
            base_model, args.base_model_hub_id, cache_dir=args.cache_dir, revision=args.model_revision
        )
        return {
            "base_model": hub_id or public_name(base_model),
            "base_model_hub_id": hub_id,
            "init_strategy": init_strategy,
            "tokenizer": public_name(tokenizer_source or getattr(self.tokenizer, "name_or_path", None)),
            "vocab_size": len(self.tokenizer),
            "max_seq_length": data.max_seq_length,
            "packing": not args.line_by_line,
            "masking_stream": collator.masking_stream,
            "train_files": [os.path.basename(f) for f in args.train_file or []],
            "dataset_name": args.dataset_name,
            **vocabulary_facts(self.init_report, self.model_name),
        }
