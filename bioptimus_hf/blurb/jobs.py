"""``bioptimus blurb``'s unit of work: one dataset × seed fine-tune (× grid point with ``--search``) as a picklable
:class:`SeedJob`, run in a worker by :func:`run_seed_job`, with its expected memory
(:func:`fine_tuning_memory_bytes`) and work (:func:`job_work`). A job writes ``seed_results.json`` as its last act,
so a job stopped before its end leaves no seed that looks finished."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..finetuning.results import SEED_RESULTS_FILE, seed_dir
from ..ner.fine_tuning_config import NER_ARGUMENT_TYPES
from ..utils.config_files import read_config
from ..utils.config_mapping import CommandParser
from ..utils.errors import bad_input
from ..utils.files import read_json
from .benchmark_config import BenchmarkArguments
from .blurb_config import batch_in_passes, blurb_arguments, ner_recipe_for
from .run import fine_tune_blurb_seeds
from .score import NER
from .search import GridPoint


# The benchmark's flags that override every task's recipe.
OVERRIDES = ("num_train_epochs", "max_steps", "max_train_samples", "max_eval_samples", "max_test_samples")


@dataclass(frozen=True)
class NerFineTuning:
    """How the benchmark fine-tunes a NER set: ``bioptimus ner``'s config file (a path or a packaged config's name)
    and its values, read once (plain data: a job carries them to its worker process). A set of BLURB's takes its
    recipe (:func:`~bioptimus_hf.blurb.blurb_config.ner_recipe_for`) over the file's values when
    ``recipe_over_config`` (the packaged default), under them otherwise (a file the user names sets what it holds)."""

    config: str
    values: Mapping[str, Any] = field(default_factory=dict)
    recipe_over_config: bool = False

    @classmethod
    def from_config(cls, config: str, recipe_over_config: bool = False) -> NerFineTuning:
        return cls(config, read_config(config), recipe_over_config)

    def values_for(self, data_dir: str) -> dict[str, Any]:
        """The values a fine-tune of the NER set in ``data_dir`` starts from: the config file's and its recipe's."""
        recipe = ner_recipe_for(data_dir)
        if recipe is None:
            return dict(self.values)
        if self.recipe_over_config:
            return {**self.values, **recipe.training_values()}
        return {**recipe.training_values(), **self.values}

    def arguments(self, settings: Mapping[str, Any]) -> tuple:
        """``bioptimus ner``'s typed arguments: ``settings`` (with the set's ``data_dir``) over the set's values; a
        value they refuse is a ``ValueError`` naming the config."""
        try:
            return CommandParser(NER_ARGUMENT_TYPES).parse_dict({**self.values_for(settings["data_dir"]), **settings})
        except ValueError as error:
            raise ValueError(f"--ner_config {self.config}: {error}") from None


@dataclass(frozen=True)
class SeedJob:
    """One dataset × seed fine-tune of the benchmark (with ``--search``, at a grid point, whose settings go over
    every other): everything a worker process needs to run it."""

    benchmark: BenchmarkArguments  # the model, the overrides of every task's recipe, what is kept
    dataset: str  # the data directory's name, and the run's under the benchmark's output_dir
    task_type: str  # a key of score.BLURB_DATASETS
    data_dir: str
    output_dir: str  # the dataset's (or its grid point's): the seed goes to <output_dir>/seed_<seed>/
    seed: int
    ner: NerFineTuning | None = None  # for a NER set
    point: GridPoint | None = None  # --search's grid point
    batched_seeds: bool | None = None  # --batched_seeds (None: the fine-tune's default)
    batched_with: tuple[int, ...] = ()  # the dataset's other seeds trained with this one as one batched model
    disable_tqdm: bool = False  # the Trainer's bars off (else as the benchmark's --disable_tqdm)

    @property
    def seeds(self) -> tuple[int, ...]:
        return (self.seed, *self.batched_with)

    @property
    def label(self) -> str:
        """``seed_<s>``, or ``seeds_<s>-<t>...`` for a job of batched seeds."""
        return f"seeds_{'-'.join(map(str, self.seeds))}" if self.batched_with else f"seed_{self.seed}"

    @property
    def name(self) -> str:
        point = f" {self.point.name}" if self.point else ""
        return f"{self.dataset}{point} {self.label.replace('_', ' ').replace('-', ' ')}"

    @property
    def log_name(self) -> str:
        return f"{self.dataset}{f'-{self.point.name}' if self.point else ''}-{self.label}.log"

    @property
    def memory_key(self) -> str:
        """Jobs whose measured peak stands for each other's: one dataset, one batch size, as many seeds at once."""
        key = f"{self.dataset} bs{self.point.per_device_train_batch_size}" if self.point else self.dataset
        return f"{key} x{len(self.seeds)}" if self.batched_with else key

    @property
    def seed_results_path(self) -> str:
        return os.path.join(seed_dir(self.output_dir, self.seed), SEED_RESULTS_FILE)


def job_settings(job: SeedJob) -> dict[str, Any]:
    """The settings a job gives its fine-tune (over its NER config file or its recipe): the model, data, output
    directory, seeds, the benchmark's overrides and the grid point's settings."""
    args = job.benchmark
    settings = {
        "model_name_or_path": args.model_name_or_path,
        "model_name": args.name,
        "base_model_hub_id": args.base_model_hub_id,
        "data_dir": job.data_dir,
        "output_dir": job.output_dir,
        "seeds": list(job.seeds),
        "save_model": args.save_model,
        **{key: getattr(args, key) for key in OVERRIDES if getattr(args, key) is not None},
        **(job.point.settings() if job.point else {}),
    }
    # unset: the fine-tune's default, or its config file's value
    if job.disable_tqdm or args.disable_tqdm:
        settings["disable_tqdm"] = True
    if job.batched_seeds is not None:
        settings["batched_seeds"] = job.batched_seeds
    if args.max_tokens_per_pass is not None and job.task_type != NER:  # NER pads each batch to its longest window
        settings["max_tokens_per_pass"] = args.max_tokens_per_pass
    return settings


def ner_seed_arguments(job: SeedJob) -> tuple:
    """``bioptimus ner``'s four typed arguments for a NER job: its settings over the NER config file's values."""
    if job.ner is None:
        raise ValueError(f"{job.name}: a NER set, but no NER config given")
    return job.ner.arguments(job_settings(job))


def job_arguments(job: SeedJob) -> tuple:
    """A job's four typed arguments: a NER job's (:func:`ner_seed_arguments`), else its recipe's under its settings."""
    if job.task_type == NER:
        return ner_seed_arguments(job)
    return blurb_arguments({**job_settings(job), "report_to": "none"})


def run_seed_job(job: SeedJob) -> dict[str, Any]:
    """Fine-tune ``job``'s seeds (nothing if their results exist); returns its first seed's ``run`` record."""
    arguments = job_arguments(job)
    if job.task_type == NER:
        from ..ner.run import fine_tune_ner, load_ner_run_data  # the NER wing's run loads with the first NER job

        with bad_input():  # bad data: the pool reports it in one line, as bioptimus ner words it
            data = load_ner_run_data(arguments[0], arguments[1])
        fine_tune_ner(*arguments, data)
    else:
        fine_tune_blurb_seeds(*arguments)
    return read_json(job.seed_results_path)["run"]


def encoder_parameters(config) -> int:
    """A BERT-like encoder's parameter count from its config: the embeddings (words, positions, token types, a layer
    norm), per layer four h×h attention projections, the h×i feed-forward pair, biases and two layer norms, the
    pooler."""
    hidden = config.hidden_size
    intermediate = getattr(config, "intermediate_size", None) or 4 * hidden
    positions = getattr(config, "max_position_embeddings", None) or 512
    embeddings = (config.vocab_size + positions + (getattr(config, "type_vocab_size", None) or 0) + 2) * hidden
    layer = 4 * hidden * hidden + 2 * hidden * intermediate + 9 * hidden + intermediate
    return embeddings + config.num_hidden_layers * layer + hidden * hidden + hidden


def fine_tuning_memory_bytes(config, batch_size: int, length: int, bf16: bool) -> int:
    """Expected peak memory of fine-tuning an encoder with AdamW on batches of ``batch_size`` × ``length`` tokens:
    16 bytes a parameter (float32 weights, gradients, Adam's two moments) plus the activations kept for the backward
    pass, s·b·h·(34 + 5·a·s/h) bytes a layer in 16 bits (Korthikanti et al. 2022, section 4.1; twice that in
    float32). An upper estimate: fused attention keeps less than the a·s² term counts."""
    hidden, heads, layers = config.hidden_size, config.num_attention_heads, config.num_hidden_layers
    per_layer = length * batch_size * hidden * (34 + 5 * heads * length / hidden)
    activations = layers * per_layer * (1 if bf16 else 2)
    return int(16 * encoder_parameters(config) + activations)


def job_work(train_rows: int, epochs: float, max_steps: int | None, batch_size: int, length: int) -> float:
    """A job's work in token positions trained (its order among the jobs: the longest first): ``max_steps``
    batches where set, else ``epochs`` passes over ``train_rows``, each ``length`` tokens at most."""
    rows = max_steps * batch_size if max_steps and max_steps > 0 else train_rows * epochs
    return float(rows * length)


def job_estimates(job: SeedJob, train_rows: int, model_config, device: str) -> tuple[int, float]:
    """(memory in bytes, work) of ``job`` on ``device`` for a model of ``model_config``, from the batch, input
    length (capped by the model's positions), epochs and steps of the job's own arguments; bf16 activations on a GPU
    where the run asks for them, else float32. A job of K batched seeds: K times both."""
    model_args, data_args, _, training_args = job_arguments(job)
    length = data_args.max_seq_length
    length = min(int(length), getattr(model_config, "max_position_embeddings", None) or int(length))
    if job.task_type != NER:
        training_args = batch_in_passes(training_args, length)  # as the job will train: its memory is a pass's
    batch, epochs = training_args.per_device_train_batch_size, training_args.num_train_epochs
    accumulation = training_args.gradient_accumulation_steps
    rows = train_rows
    if data_args.max_train_samples is not None:
        rows = min(rows, data_args.max_train_samples)
    bf16 = bool(model_args.bf16_if_supported) and device == "cuda"
    memory = fine_tuning_memory_bytes(model_config, int(batch), length, bf16)
    work = job_work(rows, float(epochs), training_args.max_steps, int(batch) * accumulation, length)
    return len(job.seeds) * memory, len(job.seeds) * work
