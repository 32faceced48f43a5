"""``bioptimus blurb-task``'s flags and each BLURB dataset's fine-tuning recipe, the one place they are set.
:data:`RECIPES` holds per dataset the learning rate, batch size, epochs, input length, warm-up and seeds, each value
citing its source in :data:`SOURCES` (docs/blurb.md); another dataset takes its task type's recipe
(:data:`TYPE_RECIPE`). A recipe value is a default that a config or flag overrides, in :func:`blurb_arguments`."""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from transformers import TrainingArguments
from transformers.trainer_utils import SaveStrategy

from ..finetuning.finetuning_config import FineTuningModelArguments, StabilisationArguments
from ..releases.blurb_results import published_name
from ..utils.config_mapping import CommandParser
from ..utils.hardware import visible_gpus
from .data import read_task_type
from .score import NER
from .tasks import (
    DOCUMENT_CLASSIFICATION,
    QUESTION_ANSWERING,
    RELATION_EXTRACTION,
    SENTENCE_SIMILARITY,
    TASK_TYPES,
    TaskType,
    get_task_type,
)


# Where each recipe value comes from (the key a value cites -> the source, as docs/blurb.md prints it).
PAPER_SCHEDULE, PAPER_SEEDS, PAPER_RE_LENGTH, PAPER_QA_LENGTH = (
    "paper schedule",
    "paper seeds",
    "paper RE",
    "paper QA",
)
LINKBERT, GRID, SEARCH_EPOCHS = "LinkBERT", "grid", "search epochs"
SOURCES = {
    PAPER_SCHEDULE: "Gu et al. 2021, section 6.2: Adam, linear warm-up over the first 10 % of steps then linear decay, "
    "dropout 0.1; learning rate, batch size and epochs searched on dev within 1e-5/3e-5/5e-5, 16/32, 2-60",
    PAPER_SEEDS: "Gu et al. 2021, section 6.2: the mean of ten runs for BIOSSES, BioASQ and PubMedQA, five for the others",
    PAPER_RE_LENGTH: "Gu et al. 2021, section 5 (relation extraction): 128 tokens for GAD, 256 for ChemProt and DDI",
    PAPER_QA_LENGTH: "Gu et al. 2021, section 5 (question answering): 512 tokens",
    LINKBERT: "michiyasunaga/LinkBERT, src/run_examples_blurb_biolinkbert-base.sh (BioLinkBERT-base's BLURB runs)",
    GRID: "where LinkBERT's learning rate lies off the paper's grid, the grid value nearest it on a log scale",
    SEARCH_EPOCHS: "ours (the paper names a range, 2-60, not each dataset's choices): the recipe's epochs, half "
    "of them rounded down and twice them, kept within 2-60",
}
# The paper's search grid (section 6.2), which bioptimus blurb --search runs: learning rates × batch sizes × each
# dataset's epoch choices (epoch_choices), every point over the dataset's seeds, chosen by the mean dev score.
PAPER_LEARNING_RATES = (1e-5, 3e-5, 5e-5)
PAPER_BATCH_SIZES = (16, 32)
PAPER_EPOCH_RANGE = (2, 60)


def epoch_choices(epochs: float) -> tuple[float, ...]:
    """The epochs ``--search`` tries for a dataset that trains ``epochs`` at its recipe (:data:`SOURCES`'
    ``search epochs``: half rounded down, the recipe's, twice, within the paper's 2-60), in increasing order
    (GAD's 10 -> 5, 10, 20; HoC's 40 -> 20, 40, 60)."""
    low, high = PAPER_EPOCH_RANGE
    return tuple(sorted({max(low, int(epochs // 2)), epochs, min(high, 2 * epochs)}))


def nearest_on_grid(linkbert_learning_rate: float) -> float:
    """The paper's grid value nearest a learning rate on a log scale (LinkBERT's 2e-5 -> 3e-5, 4e-5 -> 5e-5)."""
    return min(PAPER_LEARNING_RATES, key=lambda rate: abs(math.log(rate / linkbert_learning_rate)))


RECIPE_FIELDS = (
    "learning_rate",
    "per_device_train_batch_size",
    "num_train_epochs",
    "max_seq_length",
    "warmup_steps",
    "seeds",
)


@dataclass(frozen=True)
class Recipe:
    task_type: str
    learning_rate: float
    per_device_train_batch_size: int
    num_train_epochs: float
    max_seq_length: int
    seeds: int  # how many seeds the paper averages: 1..seeds
    sources: dict  # field name -> key of SOURCES
    warmup_steps: float = 0.1  # < 1: a fraction of the training steps

    def seed_list(self) -> list[int]:
        return list(range(1, self.seeds + 1))

    @property
    def search_epochs(self) -> tuple[float, ...]:
        """The epochs ``--search`` tries (:func:`epoch_choices` of the recipe's)."""
        return epoch_choices(self.num_train_epochs)

    def training_values(self) -> dict:
        """The recipe as fine-tuning settings (a config file's keys), the seed count aside."""
        return {name: getattr(self, name) for name in RECIPE_FIELDS if name != "seeds"}


def _recipe(
    task: TaskType | str, lr, batch, epochs, length, seeds, *, lr_from=LINKBERT, length_from=LINKBERT
) -> Recipe:
    """A recipe whose batch size and epochs are LinkBERT's and whose warm-up and seed count are the paper's."""
    sources = {
        "learning_rate": lr_from,
        "per_device_train_batch_size": LINKBERT,
        "num_train_epochs": LINKBERT,
        "max_seq_length": length_from,
        "warmup_steps": PAPER_SCHEDULE,
        "seeds": PAPER_SEEDS,
    }
    return Recipe(getattr(task, "name", task), lr, batch, epochs, length, seeds, sources)


# BLURB's datasets: beyond NER by directory name, NER sets by BLURB's names (their directories may be named as
# BLURB's files are: BC5CDR-chem-IOB is BC5-chem). LinkBERT's values that the paper contradicts: GAD's 256 tokens
# (paper: 128), no warm-up beyond NER (paper: 10 %; 100 steps for question answering), learning rates off the
# paper's grid (2e-5 for DDI and question answering, 4e-5 for HoC, 6e-5 for BC2GM: here the grid value nearest on a
# log scale). The paper fixes no input length for NER: LinkBERT's 512 tokens.
RECIPES = {
    "BC5-chem": _recipe(NER, 5e-5, 32, 20, 512, 5),
    "BC5-disease": _recipe(NER, 5e-5, 16, 8, 512, 5),
    "NCBI-disease": _recipe(NER, 5e-5, 32, 20, 512, 5),
    "BC2GM": _recipe(NER, nearest_on_grid(6e-5), 32, 50, 512, 5, lr_from=GRID),
    "JNLPBA": _recipe(NER, 1e-5, 16, 5, 512, 5),
    "ChemProt": _recipe(RELATION_EXTRACTION, 3e-5, 32, 10, 256, 5, length_from=PAPER_RE_LENGTH),
    "DDI": _recipe(
        RELATION_EXTRACTION, nearest_on_grid(2e-5), 32, 5, 256, 5, lr_from=GRID, length_from=PAPER_RE_LENGTH
    ),
    "GAD": _recipe(RELATION_EXTRACTION, 3e-5, 32, 10, 128, 5, length_from=PAPER_RE_LENGTH),
    "BIOSSES": _recipe(SENTENCE_SIMILARITY, 1e-5, 16, 30, 512, 10),
    "HoC": _recipe(DOCUMENT_CLASSIFICATION, nearest_on_grid(4e-5), 32, 40, 512, 5, lr_from=GRID),
    "PubMedQA": _recipe(
        QUESTION_ANSWERING, nearest_on_grid(2e-5), 16, 30, 512, 10, lr_from=GRID, length_from=PAPER_QA_LENGTH
    ),
    "BioASQ": _recipe(
        QUESTION_ANSWERING, nearest_on_grid(2e-5), 16, 20, 512, 10, lr_from=GRID, length_from=PAPER_QA_LENGTH
    ),
}
# The recipe of a dataset directory not named above: its task type's BLURB dataset.
TYPE_RECIPE = {
    RELATION_EXTRACTION.name: "ChemProt",
    SENTENCE_SIMILARITY.name: "BIOSSES",
    DOCUMENT_CLASSIFICATION.name: "HoC",
    QUESTION_ANSWERING.name: "PubMedQA",
}


def recipe_name(task: TaskType, dataset: str | None) -> str:
    """The recipe ``dataset`` (a directory's name or path) takes: its own when it is one of BLURB's of this task
    type, else its task type's."""
    name = os.path.basename(os.path.normpath(dataset)) if dataset else None
    if name in RECIPES and RECIPES[name].task_type == task.name:
        return name
    return TYPE_RECIPE[task.name]


def recipe_for(task: TaskType, dataset: str | None = None) -> Recipe:
    return RECIPES[recipe_name(task, dataset)]


def ner_recipe_for(dataset: str) -> Recipe | None:
    """The recipe of a NER set when its directory (a name or path) is one of BLURB's, by BLURB's name or its files'
    (``BC5CDR-chem-IOB`` -> ``BC5-chem``, :func:`~bioptimus_hf.releases.blurb_results.published_name`); else None."""
    recipe = RECIPES.get(published_name(os.path.basename(os.path.normpath(dataset))) or "")
    return recipe if recipe is not None and recipe.task_type == NER else None


def _format(name: str, value) -> str:
    if name == "learning_rate":
        return f"{value:.0e}".replace("e-0", "e-")
    if name == "warmup_steps":
        return f"{value:.0%} of the steps"
    return f"{value:g}"


def recipe_table_markdown() -> str:
    """:data:`RECIPES` as docs/blurb.md shows it: each value with its source's key, then the epochs ``--search``
    tries."""
    header = "| dataset | task type | learning rate | batch | epochs | max tokens | warm-up | seeds | search epochs |"
    lines = [header, "|---|---|---|---|---|---|---|---|---|"]
    for name, recipe in RECIPES.items():
        cells = [f"{_format(f, getattr(recipe, f))} ({recipe.sources[f]})" for f in RECIPE_FIELDS]
        cells.append(f"{'/'.join(f'{e:g}' for e in recipe.search_epochs)} ({SEARCH_EPOCHS})")
        lines.append(f"| {name} | {recipe.task_type} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


_TRAINING_FIELDS = {f.name: f for f in dataclasses.fields(TrainingArguments)}
# --max_tokens_per_pass on a CPU: PubMedQA's 16 rows of 512 tokens, 3 seeds in one worker, peak at 2.0 GB of RSS in
# passes of 2 (39 s), 2.5 GB in passes of 4 (51 s); HoC's 32 rows whole: 11 GB, the attention probabilities most of it.
CPU_TOKENS_PER_PASS = 1024


@dataclass(repr=False)  # TrainingArguments' own repr, which masks hub_token
class BlurbTrainingArguments(TrainingArguments):
    """``TrainingArguments`` that save no checkpoint unless asked (a seed is never resumed from one: the Trainer's
    default saves every 500 steps would only fill the disk); with ``--load_best_model_at_end``, where evaluation runs
    (the Trainer picks the best among them)."""

    save_strategy: SaveStrategy | str = field(
        default="no",
        metadata={
            **_TRAINING_FIELDS["save_strategy"].metadata,
            "help": "When to save a checkpoint: no, epoch, steps or best. Default: no, or where evaluation runs "
            "with --load_best_model_at_end.",
        },
    )

    max_tokens_per_pass: int | None = field(
        default=None,
        metadata={
            "help": "At most this many tokens (rows x the input length) in one forward and backward pass: a larger "
            "--per_device_train_batch_size trains in equal passes whose gradients accumulate (--gradient_accumulation_"
            f"steps multiplied), each optimizer step on the same batch. Default: {CPU_TOKENS_PER_PASS} on a CPU, "
            "where it bounds memory (docs/blurb.md); whole batches on a GPU or with 0."
        },
    )

    def __post_init__(self):
        if self.load_best_model_at_end and self.save_strategy == "no":
            self.save_strategy = self.eval_strategy
        super().__post_init__()
        if self.max_tokens_per_pass is not None and self.max_tokens_per_pass < 0:
            raise ValueError(f"--max_tokens_per_pass {self.max_tokens_per_pass}: expected 0 or more")


def batch_in_passes(training_args: TrainingArguments, max_length: int) -> TrainingArguments:
    """``training_args`` whose batch trains in passes of at most ``--max_tokens_per_pass`` tokens at ``max_length``
    (:class:`BlurbTrainingArguments`): the fewest equal passes that fit, ``per_device_train_batch_size`` divided and
    ``gradient_accumulation_steps`` multiplied by their number (a copy; the same object where nothing splits)."""
    limit = getattr(training_args, "max_tokens_per_pass", None)
    if limit is None:
        limit = CPU_TOKENS_PER_PASS if training_args.use_cpu or not visible_gpus() else 0
    batch = training_args.per_device_train_batch_size
    if limit == 0 or batch * max_length <= limit:
        return training_args
    rows = max(1, limit // max_length)
    passes = next(k for k in range(1, batch + 1) if batch % k == 0 and batch // k <= rows)
    return dataclasses.replace(
        training_args,
        per_device_train_batch_size=batch // passes,
        gradient_accumulation_steps=training_args.gradient_accumulation_steps * passes,
    )


DOCUMENT_UNITS = ("document", "sentence")


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
    document_unit: str = field(
        default="document",
        metadata={
            "help": "Document classification: what one training and prediction row is. 'document' (the paper's "
            "unit): the rows sharing a document_id joined in file order by spaces, labels the union of theirs "
            "(HoC: 1,295/186/371 abstracts); 'sentence': one row per line, its predictions merged per document "
            "only when scored.",
            "choices": list(DOCUMENT_UNITS),
        },
    )
    max_seq_length: int | None = field(
        default=None, metadata={"help": "Tokens per input, longer ones truncated (default: the dataset's recipe)."}
    )
    max_train_samples: int | None = field(default=None, metadata={"help": "Use only the first N training rows."})
    max_eval_samples: int | None = field(default=None, metadata={"help": "Use only the first N dev rows."})
    max_test_samples: int | None = field(default=None, metadata={"help": "Use only the first N test rows."})

    def __post_init__(self):
        if self.task_type is not None:
            get_task_type(self.task_type)
        if self.document_unit not in DOCUMENT_UNITS:
            raise ValueError(f"--document_unit {self.document_unit!r}: expected one of {', '.join(DOCUMENT_UNITS)}")
        if self.max_seq_length is not None and self.max_seq_length < 2:
            raise ValueError(f"--max_seq_length {self.max_seq_length}: needs room for at least the special tokens")


# The arguments of a dataset's run, in the order ``bioptimus blurb-task`` parses them and :func:`~.run.run_blurb_task`
# takes them.
BLURB_ARGUMENT_TYPES = (FineTuningModelArguments, BlurbDataArguments, StabilisationArguments, BlurbTrainingArguments)


def blurb_arguments(settings: Mapping[str, Any]) -> tuple:
    """A dataset's four argument objects (:data:`BLURB_ARGUMENT_TYPES`): its recipe (:func:`recipe_for`) under
    ``settings``, a config file's values and the flags by name (None: unset), for ``bioptimus blurb-task``, the
    benchmark's jobs and any caller. Raises ``ValueError`` naming a value refused, an unknown name or a missing
    ``--data_dir``."""
    settings = {name: value for name, value in settings.items() if value is not None}
    if "data_dir" not in settings:
        raise ValueError("the following arguments are required: --data_dir")
    task = read_task_type(settings["data_dir"], settings.get("task_type"))
    recipe = recipe_for(task, settings["data_dir"])
    return CommandParser(BLURB_ARGUMENT_TYPES).parse_dict({**recipe.training_values(), **settings})
