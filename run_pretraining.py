#!/usr/bin/env python
"""Continued masked-LM pre-training through the BIOptimus curriculum, releasing a model per phase.

Modelled on transformers' examples/pytorch/language-modeling/run_mlm.py:

    python run_pretraining.py configs/demo_minilm.yaml                       # a config file...
    python run_pretraining.py configs/demo_minilm.yaml --max_steps 400       # ...with overrides
    torchrun --nproc_per_node 8 run_pretraining.py configs/bioptimus_full_scale.yaml

Each phase end writes ``<output_dir>/releases/v0.<k>/`` (model, tokenizer, ``bioptimus_phase.json``
with the held-out MLM loss, model card), loadable with ``AutoModelForMaskedLM.from_pretrained``.
"""

import json
import logging
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import datasets
import transformers
import yaml
from datasets import load_dataset
from transformers import (
    AutoConfig,
    AutoModelForMaskedLM,
    AutoTokenizer,
    Trainer,
    TrainingArguments,
    set_seed,
)
from transformers.trainer_utils import get_last_checkpoint

from bioptimus_hf.callback import PhaseScheduleCallback
from bioptimus_hf.cli import parse_args
from bioptimus_hf.collator import CurriculumDataCollator
from bioptimus_hf.corpus import check_text_files, group_texts, tokenize_with_word_ids
from bioptimus_hf.masked_lm import enable_masked_only_prediction, is_masked_only_prediction_enabled
from bioptimus_hf.phases import (
    BIOPTIMUS_CURRICULUM,
    BIOPTIMUS_PHASE_FRACTIONS,
    CurriculumPhase,
    resolve_phase_steps,
)

logger = logging.getLogger(__name__)

INIT_STRATEGIES = ("scratch", "continued", "averaged", "contextualized", "random")


@dataclass
class ModelArguments:
    model_name_or_path: Optional[str] = field(
        default=None, metadata={"help": "Base model (Hub id or directory). Required unless --init_strategy scratch."}
    )
    config_name: Optional[str] = field(default=None, metadata={"help": "Config for --init_strategy scratch."})
    tokenizer_name: Optional[str] = field(
        default=None,
        metadata={"help": "Tokenizer of the run. With averaged/contextualized/scratch: the new (biomedical) vocabulary."},
    )
    init_strategy: str = field(
        default="continued",
        metadata={"help": f"One of {INIT_STRATEGIES} (the paper's Table 1; 'random' = new vocab, random new rows)."},
    )
    init_corpus_files: Optional[list[str]] = field(
        default=None, metadata={"help": "Corpus for contextualized initialisation (default: --train_file)."}
    )
    max_contexts_per_token: int = field(default=20, metadata={"help": "Contexts sampled per new token (contextualized)."})
    init_norm_match: bool = field(
        default=True,
        metadata={
            "help": "Rescale contextualized rows to the norm statistics of the base input embeddings (last-layer "
            "states are ~5x larger; see benchmarks/results/init_quality.json). false = the paper's raw vectors."
        },
    )
    init_batch_size: int = field(default=32, metadata={"help": "Sentences per base-model forward (contextualized)."})
    cache_dir: Optional[str] = field(default=None)
    model_revision: str = field(default="main")
    masked_only_prediction: bool = field(
        default=True,
        metadata={
            "help": "Run the MLM head only at masked positions (exact loss and gradients; BertForMaskedLM only, "
            "other models keep the standard head with a warning). See docs/speed.md."
        },
    )


@dataclass
class DataTrainingArguments:
    dataset_name: Optional[str] = field(default=None, metadata={"help": "A `datasets` dataset name."})
    dataset_config_name: Optional[str] = field(default=None)
    train_file: Optional[list[str]] = field(default=None, metadata={"help": "Local text/json/csv/jsonl file(s)."})
    validation_file: Optional[str] = field(default=None)
    text_column_name: str = field(default="text")
    validation_split_percentage: float = field(
        default=5, metadata={"help": "Held-out share of the training lines when there is no validation file (0 = none)."}
    )
    max_train_samples: Optional[int] = field(default=None)
    max_eval_samples: Optional[int] = field(default=None)
    max_seq_length: Optional[int] = field(default=128)
    line_by_line: bool = field(
        default=False, metadata={"help": "One sequence per line (long lines chunked) instead of packed blocks."}
    )
    preprocessing_num_workers: Optional[int] = field(default=None)
    overwrite_cache: bool = field(default=False)
    streaming: bool = field(default=False, metadata={"help": "Stream the corpus (never pre-tokenised whole)."})
    shuffle_buffer_size: int = field(default=10_000, metadata={"help": "Shuffle buffer with --streaming."})


@dataclass
class CurriculumArguments:
    curriculum: str = field(
        default="bioptimus",
        metadata={"help": "'bioptimus' (the paper's four phases) or a json/yaml file with a list of phases."},
    )
    phase_steps: Optional[list[float]] = field(
        default=None,
        metadata={"help": "Steps per phase: counts (100 200 ...) or fractions of max_steps (default 0.1 0.2 0.3 0.4)."},
    )
    mask_seed: Optional[int] = field(default=None, metadata={"help": "Masking seed (default: --seed)."})
    overwrite_output_dir: bool = field(
        default=False, metadata={"help": "Allow writing into an output_dir that holds a run without checkpoints."}
    )
    push_releases_to_hub: bool = field(
        default=False,
        metadata={"help": "Publish each release as its phase ends (background; a Hub failure never stops training)."},
    )
    releases_repo_id: Optional[str] = field(default=None, metadata={"help": "Hub repository for the releases."})
    releases_private: bool = field(default=False)
    releases_hub_mode: str = field(default="branches", metadata={"help": "'branches' (one repo) or 'repos'."})


def load_curriculum(spec: str) -> tuple[list[CurriculumPhase], Optional[list[float]]]:
    if spec == "bioptimus":
        return list(BIOPTIMUS_CURRICULUM), None
    path = Path(spec)
    if not path.is_file():
        raise SystemExit(f"--curriculum {spec}: neither 'bioptimus' nor an existing json/yaml file")
    data = json.loads(path.read_text()) if path.suffix == ".json" else yaml.safe_load(path.read_text())
    entries = data.get("phases") if isinstance(data, dict) else data
    if not isinstance(entries, list) or not entries:
        raise SystemExit(f"--curriculum {spec}: expected a non-empty list of phases (or a mapping with 'phases')")
    try:
        phases = [CurriculumPhase.from_dict(entry) for entry in entries]
    except (TypeError, ValueError) as error:
        raise SystemExit(f"--curriculum {spec}: {error}")
    steps = [entry["steps"] for entry in entries if "steps" in entry]
    return phases, (steps if len(steps) == len(entries) else None)


def main():
    model_args, data_args, curriculum_args, training_args = parse_args(
        (ModelArguments, DataTrainingArguments, CurriculumArguments, TrainingArguments)
    )

    logging.basicConfig(
        format="%(asctime)s - %(levelname)s - %(name)s - %(message)s",
        datefmt="%m/%d/%Y %H:%M:%S",
        handlers=[logging.StreamHandler(sys.stdout)],
    )
    log_level = training_args.get_process_log_level()
    logger.setLevel(log_level)
    logging.getLogger("bioptimus_hf").setLevel(log_level)
    datasets.utils.logging.set_verbosity(log_level)
    transformers.utils.logging.set_verbosity(log_level)
    transformers.utils.logging.enable_default_handler()
    transformers.utils.logging.enable_explicit_format()
    logger.info(f"Training/evaluation parameters {training_args}")

    # ---- Everything that can be checked without a model is checked first: bad input fails here.
    if model_args.init_strategy not in INIT_STRATEGIES:
        raise SystemExit(f"--init_strategy {model_args.init_strategy!r}: expected one of {INIT_STRATEGIES}")
    if training_args.max_steps is None or training_args.max_steps <= 0:
        raise SystemExit("--max_steps must be > 0: curriculum phases are scheduled in optimizer steps")
    phases, file_steps = load_curriculum(curriculum_args.curriculum)
    phase_steps = curriculum_args.phase_steps or file_steps or list(BIOPTIMUS_PHASE_FRACTIONS)
    if len(phase_steps) != len(phases):
        raise SystemExit(f"--phase_steps has {len(phase_steps)} values for {len(phases)} curriculum phases")
    phase_steps = [int(s) if float(s).is_integer() and s >= 1 else float(s) for s in phase_steps]
    try:
        step_counts = resolve_phase_steps(phase_steps, training_args.max_steps)
    except ValueError as error:
        raise SystemExit(f"--phase_steps: {error}")
    logger.info("curriculum: %s", ", ".join(f"v{p.version}={n} steps" for p, n in zip(phases, step_counts)))

    if data_args.dataset_name is None and not data_args.train_file:
        raise SystemExit("give a corpus: --train_file FILE [FILE ...] or --dataset_name NAME")
    if data_args.train_file:
        text_files = [f for f in data_args.train_file if not f.endswith((".json", ".jsonl", ".csv"))]
        try:
            report = check_text_files(text_files + ([data_args.validation_file] if data_args.validation_file else []))
        except (FileNotFoundError, ValueError) as error:
            raise SystemExit(f"--train_file: {error}")
        logger.info("corpus check: %s", report.summary())
    if not 0 <= data_args.validation_split_percentage < 100:
        raise SystemExit("--validation_split_percentage must be in [0, 100)")

    # ---- Output directory: resume from the last checkpoint, never overwrite a finished run silently.
    last_checkpoint = None
    output_dir = Path(training_args.output_dir)
    if output_dir.is_dir() and training_args.do_train and training_args.resume_from_checkpoint is None:
        last_checkpoint = get_last_checkpoint(str(output_dir))
        if last_checkpoint is None and any(output_dir.iterdir()) and not curriculum_args.overwrite_output_dir:
            raise SystemExit(
                f"output directory {output_dir} already exists and is not empty but holds no checkpoint to resume; "
                "use --overwrite_output_dir to write into it anyway"
            )
        if last_checkpoint is not None:
            logger.info(f"Checkpoint detected, resuming training at {last_checkpoint}.")

    set_seed(training_args.seed)

    # ---- Tokenizer and model.
    tokenizer_name = model_args.tokenizer_name or model_args.model_name_or_path
    if tokenizer_name is None:
        raise SystemExit("give --tokenizer_name (or --model_name_or_path)")
    tokenizer = AutoTokenizer.from_pretrained(tokenizer_name, cache_dir=model_args.cache_dir, use_fast=True)
    if tokenizer.mask_token is None:
        raise SystemExit(f"tokenizer {tokenizer_name} has no mask token; masked-LM pre-training needs one")
    init_report = None
    if model_args.init_strategy == "continued":
        if model_args.model_name_or_path is None:
            raise SystemExit("--init_strategy continued needs --model_name_or_path")
        model = AutoModelForMaskedLM.from_pretrained(
            model_args.model_name_or_path, cache_dir=model_args.cache_dir, revision=model_args.model_revision
        )
        if model.get_input_embeddings().num_embeddings < len(tokenizer):
            raise SystemExit(
                f"tokenizer {tokenizer_name} has {len(tokenizer)} entries but the model only "
                f"{model.get_input_embeddings().num_embeddings}: a new vocabulary needs --init_strategy averaged, "
                "contextualized, random or scratch"
            )
    elif model_args.init_strategy == "scratch":
        config = AutoConfig.from_pretrained(model_args.config_name or model_args.model_name_or_path)
        config.vocab_size = len(tokenizer)
        config.pad_token_id = tokenizer.pad_token_id
        model = AutoModelForMaskedLM.from_config(config)
    else:
        from bioptimus_hf.embedding_init import build_initialized_model

        model, tokenizer, init_report = build_initialized_model(
            model_args.model_name_or_path,
            tokenizer_name,
            model_args.init_strategy,
            corpus_files=model_args.init_corpus_files or [
                f for f in (data_args.train_file or []) if f.endswith((".txt", ".gz"))
            ],
            max_contexts_per_token=model_args.max_contexts_per_token,
            seed=training_args.seed,
            norm_match=model_args.init_norm_match,
            batch_size=model_args.init_batch_size,
        )

    if model_args.masked_only_prediction:
        enable_masked_only_prediction(model)
    if not is_masked_only_prediction_enabled(model) and training_args.gradient_accumulation_steps > 1:
        # transformers 5.23 passes num_items_in_batch to BertForMaskedLM, which ignores it, and then
        # skips dividing the loss by the accumulation steps (see docs/speed.md).
        logger.warning(
            "standard MLM head with gradient_accumulation_steps=%d: transformers does not scale this model's loss "
            "by the accumulation steps; prefer --masked_only_prediction true",
            training_args.gradient_accumulation_steps,
        )

    # ---- Data.
    max_seq_length = min(data_args.max_seq_length or tokenizer.model_max_length, tokenizer.model_max_length)
    if data_args.dataset_name is not None:
        raw = load_dataset(
            data_args.dataset_name,
            data_args.dataset_config_name,
            cache_dir=model_args.cache_dir,
            streaming=data_args.streaming,
        )
    else:
        data_files = {"train": data_args.train_file}
        if data_args.validation_file:
            data_files["validation"] = data_args.validation_file
        extension = data_args.train_file[0].rsplit(".", 1)[-1]
        builder = {"txt": "text", "gz": "text", "jsonl": "json"}.get(extension, extension)
        if builder not in ("text", "json", "csv"):
            builder = "text"
        kwargs = {"encoding_errors": "replace"} if builder == "text" else {}
        raw = load_dataset(
            builder, data_files=data_files, cache_dir=model_args.cache_dir, streaming=data_args.streaming, **kwargs
        )
    if "validation" not in raw and data_args.validation_split_percentage > 0:
        if data_args.streaming:
            held_out = data_args.max_eval_samples or 1000
            raw["validation"] = raw["train"].take(held_out)
            raw["train"] = raw["train"].skip(held_out)
        else:
            split = raw["train"].train_test_split(
                test_size=data_args.validation_split_percentage / 100, seed=training_args.seed
            )
            raw["train"], raw["validation"] = split["train"], split["test"]
    def column_names(split):
        # Streaming datasets may not know their columns until read.
        return split.column_names or list(split.features or {}) or [data_args.text_column_name]

    if data_args.text_column_name not in column_names(raw["train"]):
        raise SystemExit(
            f"--text_column_name {data_args.text_column_name!r} not in the dataset columns {column_names(raw['train'])}"
        )

    def tokenize(examples):
        return tokenize_with_word_ids(
            examples, tokenizer, data_args.text_column_name, max_seq_length, line_by_line=data_args.line_by_line
        )

    def pack(examples):
        return group_texts(examples, max_seq_length)

    map_kwargs = {} if data_args.streaming else {
        "num_proc": data_args.preprocessing_num_workers,
        "load_from_cache_file": not data_args.overwrite_cache,
    }
    with training_args.main_process_first(desc="tokenizing the corpus"):
        tokenized = {}
        for split_name, split in raw.items():
            if split_name not in ("train", "validation"):
                continue
            columns = column_names(split)
            ds = split.map(tokenize, batched=True, remove_columns=columns, **map_kwargs,
                           **({} if data_args.streaming else {"desc": f"tokenizing {split_name}"}))
            if data_args.line_by_line:
                if not data_args.streaming:
                    extra = sum(1 for c in ds["chunk"] if c > 0)
                    long_lines = sum(1 for c in ds["chunk"] if c == 1)
                    if extra:
                        logger.warning(
                            "%s: %d line(s) longer than %d tokens were chunked into %d extra sequence(s) (not truncated)",
                            split_name, long_lines, max_seq_length, extra,
                        )
                ds = ds.remove_columns(["chunk"])
            else:
                ds = ds.remove_columns(["chunk"]).map(
                    pack, batched=True, **map_kwargs,
                    **({} if data_args.streaming else {"desc": f"packing {split_name} into {max_seq_length}-token blocks"}),
                )
            tokenized[split_name] = ds

    train_dataset = tokenized["train"]
    eval_dataset = tokenized.get("validation")
    if data_args.streaming:
        train_dataset = train_dataset.shuffle(seed=training_args.seed, buffer_size=data_args.shuffle_buffer_size)
        if data_args.max_eval_samples and eval_dataset is not None:
            eval_dataset = eval_dataset.take(data_args.max_eval_samples)
        # Each rank reads its own shard; rank 0 must not collate and broadcast for everybody.
        training_args.accelerator_config.dispatch_batches = False
    else:
        if len(train_dataset) == 0:
            raise SystemExit(
                f"no training sequence: the corpus is shorter than one {max_seq_length}-token block "
                "(use --line_by_line or a smaller --max_seq_length)"
            )
        if data_args.max_train_samples is not None:
            train_dataset = train_dataset.select(range(min(len(train_dataset), data_args.max_train_samples)))
        if eval_dataset is not None and data_args.max_eval_samples is not None:
            eval_dataset = eval_dataset.select(range(min(len(eval_dataset), data_args.max_eval_samples)))
        if eval_dataset is not None and len(eval_dataset) == 0:
            eval_dataset = None

    # word_ids / special_tokens_mask feed the collator, not the model: keep them.
    training_args.remove_unused_columns = False

    # ---- Curriculum.
    collator = CurriculumDataCollator(
        tokenizer,
        phases=phases,
        seed=training_args.seed if curriculum_args.mask_seed is None else curriculum_args.mask_seed,
        pad_to_multiple_of=8 if data_args.line_by_line else None,
    )
    run_info = {
        "base_model": model_args.model_name_or_path,
        "init_strategy": model_args.init_strategy,
        "tokenizer": tokenizer_name,
        "vocab_size": len(tokenizer),
        "max_seq_length": max_seq_length,
        "packing": not data_args.line_by_line,
        "masked_only_prediction": is_masked_only_prediction_enabled(model),
        "train_files": data_args.train_file,
        "dataset_name": data_args.dataset_name,
    }
    publisher = None
    if curriculum_args.push_releases_to_hub:
        if not curriculum_args.releases_repo_id:
            raise SystemExit("--push_releases_to_hub needs --releases_repo_id ORG/NAME")
        from bioptimus_hf.hub import make_release_publisher

        publisher = make_release_publisher(
            curriculum_args.releases_repo_id,
            private=curriculum_args.releases_private,
            mode=curriculum_args.releases_hub_mode,
        )
    callback = PhaseScheduleCallback(
        collator,
        phase_steps=phase_steps,
        evaluate_at_phase_end=eval_dataset is not None,
        run_info=run_info,
        on_release=[publisher] if publisher is not None else [],
    )

    trainer = Trainer(
        model=model,
        args=training_args,
        train_dataset=train_dataset,
        eval_dataset=eval_dataset,
        processing_class=tokenizer,
        data_collator=collator,
    )
    # First in line, so that reporters (TensorBoard...) see the curriculum metrics it adds to logs.
    trainer.callback_handler.callbacks.insert(0, callback)
    if init_report is not None and trainer.is_world_process_zero():
        output_dir.mkdir(parents=True, exist_ok=True)
        (output_dir / "init_report.json").write_text(json.dumps(init_report, indent=2, default=str))

    checkpoint = training_args.resume_from_checkpoint or last_checkpoint
    train_result = trainer.train(resume_from_checkpoint=checkpoint)
    trainer.save_model()
    metrics = train_result.metrics
    metrics["remasked_batches"] = collator.remasked_batches
    for index, phase in enumerate(phases):
        fraction = collator.realised_fraction(index)
        if fraction is not None:
            metrics[f"realised_masked_fraction_v{phase.version}"] = round(fraction, 5)
    trainer.log_metrics("train", metrics)
    trainer.save_metrics("train", metrics)
    trainer.save_state()
    if publisher is not None and trainer.is_world_process_zero():
        publisher.wait(timeout=600)
    if trainer.is_world_process_zero():
        releases = sorted(p.name for p in (output_dir / "releases").glob("v*") if p.is_dir())
        logger.info("releases written: %s", ", ".join(releases) or "none")


if __name__ == "__main__":
    main()
