"""The data flags of ``run_blurb.py`` and the default fine-tuning recipe of each task type: the one place they are
set. Its model and precision flags are every fine-tuning command's (:mod:`bioptimus_hf.ner.fine_tuning_config`).

The recipe follows the PubMedBERT paper (Gu et al. 2021, section 6.2): Adam with a linear warm-up over the
first 10 % of steps then a linear decay, dropout 0.1 (the models' own), learning rate, batch size and epochs
chosen within its search ranges (1e-5/3e-5/5e-5; 16/32; 2-60 epochs), and its input lengths (128 tokens for
GAD, 256 for DDI and ChemProt, 512 for question answering). The paper gives the ranges, not the value picked
per dataset: the picks below are starting points to tune on dev. A recipe value is a default only: a config
file or a flag overrides it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from transformers import TrainingArguments

from .tasks import (
    DOCUMENT_CLASSIFICATION,
    QUESTION_ANSWERING,
    RELATION_EXTRACTION,
    SENTENCE_SIMILARITY,
    TASK_TYPES,
    TaskType,
    get_task_type,
)


@dataclass(frozen=True)
class Recipe:
    learning_rate: float
    per_device_train_batch_size: int
    num_train_epochs: float
    max_seq_length: int
    warmup_steps: float = 0.1  # < 1: a fraction of the training steps


RECIPES = {
    RELATION_EXTRACTION.name: Recipe(
        learning_rate=3e-5, per_device_train_batch_size=32, num_train_epochs=5, max_seq_length=256
    ),
    SENTENCE_SIMILARITY.name: Recipe(
        learning_rate=3e-5, per_device_train_batch_size=16, num_train_epochs=30, max_seq_length=128
    ),
    DOCUMENT_CLASSIFICATION.name: Recipe(
        learning_rate=3e-5, per_device_train_batch_size=32, num_train_epochs=10, max_seq_length=128
    ),
    QUESTION_ANSWERING.name: Recipe(
        learning_rate=3e-5, per_device_train_batch_size=16, num_train_epochs=20, max_seq_length=512
    ),
}
# The input lengths the paper states per dataset (by directory name), where they differ from the type's.
DATASET_MAX_SEQ_LENGTH = {"GAD": 128, "DDI": 256, "ChemProt": 256, "PubMedQA": 512, "BioASQ": 512}


def recipe_for(task: TaskType, dataset_name: str) -> Recipe:
    recipe = RECIPES[task.name]
    if dataset_name in DATASET_MAX_SEQ_LENGTH:
        recipe = dataclasses.replace(recipe, max_seq_length=DATASET_MAX_SEQ_LENGTH[dataset_name])
    return recipe


def _recipe_training_arguments(task_name: str, recipe: Recipe) -> type[TrainingArguments]:
    """``TrainingArguments`` whose defaults are ``recipe``'s (what ``--help`` and an unset flag give); a module-level
    class, so that the Trainer can pickle its arguments with the model."""
    base = {f.name: f for f in dataclasses.fields(TrainingArguments)}
    types = {
        "learning_rate": float,
        "per_device_train_batch_size": int,
        "num_train_epochs": float,
        "warmup_steps": float,
    }
    overrides = [
        (name, types[name], field(default=getattr(recipe, name), metadata=base[name].metadata)) for name in types
    ]
    name = "".join(part.title() for part in task_name.split("_")) + "TrainingArguments"
    cls = dataclasses.make_dataclass(name, overrides, bases=(TrainingArguments,))
    cls.__module__ = __name__
    return cls


RECIPE_TRAINING_ARGUMENTS = {name: _recipe_training_arguments(name, recipe) for name, recipe in RECIPES.items()}
globals().update({cls.__name__: cls for cls in RECIPE_TRAINING_ARGUMENTS.values()})


def recipe_training_arguments(task: TaskType) -> type[TrainingArguments]:
    return RECIPE_TRAINING_ARGUMENTS[task.name]


@dataclass
class BlurbDataArguments:
    data_dir: str = field(
        metadata={
            "help": "Directory with train.jsonl, dev.jsonl and test.jsonl (one JSON object "
            "a line, e.g. ../shared/data/blurb/GAD)."
        }
    )
    task_type: str | None = field(
        default=None, metadata={"help": f"One of {', '.join(TASK_TYPES)} (default: read from the fields of the data)."}
    )
    negative_label: str | None = field(
        default=None,
        metadata={
            "help": "Relation extraction: the class BLURB's micro-F1 leaves out (default: the "
            "label named 0, false or *-false)."
        },
    )
    max_seq_length: int | None = field(
        default=None, metadata={"help": "Tokens per input, longer ones truncated (default: the task's recipe)."}
    )
    max_train_samples: int | None = field(default=None, metadata={"help": "Use only the first N training rows."})
    max_eval_samples: int | None = field(default=None, metadata={"help": "Use only the first N dev rows."})
    max_test_samples: int | None = field(default=None, metadata={"help": "Use only the first N test rows."})

    def __post_init__(self):
        if self.task_type is not None:
            get_task_type(self.task_type)
        if self.max_seq_length is not None and self.max_seq_length < 2:
            raise ValueError(f"--max_seq_length {self.max_seq_length}: needs room for at least the special tokens")
