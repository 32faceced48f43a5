"""``bioptimus blurb --search``: the paper's search on dev (Gu et al. 2021, section 6.2). A dataset's grid
(:class:`SearchGrid`) is every learning rate × batch size × epochs (the paper's rates and sizes, the dataset's
:func:`~.blurb_config.epoch_choices`; ``--search_*`` flags replace an axis); each point (:class:`GridPoint`)
fine-tunes the benchmark's seeds into ``<DATASET>/search/<point>/seed_<s>/``, so a finished seed of a point is never
trained again. The choice (:func:`choose`): the highest mean dev score over the seeds asked for, a mean that is not a
number (a constant prediction's Pearson r) last, ties to the first in grid order. :func:`search_record` is the
``search`` section of the dataset's ``all_results.json`` (scores as fractions, as the seed files hold them).
"""

from __future__ import annotations

import itertools
import math
import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from statistics import mean
from typing import Any

from ..finetuning.results import SEED_RESULTS_FILE, sample_std, seed_dir
from ..utils.files import read_json
from .blurb_config import PAPER_BATCH_SIZES, PAPER_LEARNING_RATES, epoch_choices


SEARCH_DIR = "search"  # <output_dir>/<DATASET>/search/<point>/: a point's seeds
CHOSEN_BY = (
    "the highest mean dev score (BLURB's metric; NER: entity-level F1) over seeds {seeds}, a mean that is not a number ranking last; ties: the "
    "first point in grid order (learning rate, then batch size, then epochs, each as listed)"
)


def _number(value: float) -> str:
    """A value as a point's name shows it: 3e-05 -> 3e-5, 10.0 -> 10, 2.5 -> 2.5."""
    return f"{value:.10g}".replace("e-0", "e-").replace("e+0", "e+")


@dataclass(frozen=True)
class GridPoint:
    """One point of the grid: the settings it lays over the dataset's recipe (or NER settings)."""

    learning_rate: float
    per_device_train_batch_size: int
    num_train_epochs: float

    @property
    def name(self) -> str:
        """Its directory's name, e.g. ``lr3e-5_bs32_ep10``."""
        return (
            f"lr{_number(self.learning_rate)}_bs{self.per_device_train_batch_size}_ep{_number(self.num_train_epochs)}"
        )

    def settings(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class SearchGrid:
    """A dataset's grid: its three axes, each in the order its points run and break ties."""

    learning_rates: tuple[float, ...]
    batch_sizes: tuple[int, ...]
    epochs: tuple[float, ...]

    @classmethod
    def for_dataset(
        cls,
        recipe_epochs: float,
        learning_rates: Sequence[float] | None = None,
        batch_sizes: Sequence[int] | None = None,
        epochs: Sequence[float] | None = None,
    ) -> SearchGrid:
        """The paper's learning rates and batch sizes and the epoch choices of a dataset that trains
        ``recipe_epochs`` at its recipe, each axis replaced where given (the ``--search_*`` flags)."""
        return cls(
            tuple(learning_rates or PAPER_LEARNING_RATES),
            tuple(batch_sizes or PAPER_BATCH_SIZES),
            tuple(epochs or epoch_choices(recipe_epochs)),
        )

    @property
    def points(self) -> list[GridPoint]:
        return [GridPoint(*values) for values in itertools.product(self.learning_rates, self.batch_sizes, self.epochs)]

    def as_record(self) -> dict[str, list]:
        return {
            "learning_rate": list(self.learning_rates),
            "per_device_train_batch_size": list(self.batch_sizes),
            "num_train_epochs": list(self.epochs),
        }


def point_dir(dataset_dir: str, point: GridPoint) -> str:
    return os.path.join(dataset_dir, SEARCH_DIR, point.name)


def _mean_std(values: Sequence[float | None]) -> tuple[float | None, float | None]:
    if not values or any(value is None for value in values):
        return None, None
    return mean(values), sample_std(values)


def point_scores(
    dataset_dir: str, point: GridPoint, seeds: Sequence[int], dev_key: str, test_key: str
) -> dict[str, Any]:
    """A point's record: its settings, directory (under the dataset's), and the mean and sample standard deviation
    over ``seeds`` of its dev (``dev_key``) and test (``test_key``) scores, from the seed files."""
    runs = [
        read_json(os.path.join(seed_dir(point_dir(dataset_dir, point), s), SEED_RESULTS_FILE))["run"] for s in seeds
    ]
    dev_mean, dev_std = _mean_std([run.get(dev_key) for run in runs])
    test_mean, test_std = _mean_std([run.get(test_key) for run in runs])
    return {
        "point": point.name,
        **point.settings(),
        "output_dir": os.path.join(SEARCH_DIR, point.name),
        "dev_mean": dev_mean,
        "dev_std": dev_std,
        "test_mean": test_mean,
        "test_std": test_std,
    }


def choose(dev_means: Sequence[float | None]) -> int:
    """The index of the highest mean, the first among equals; a mean that is missing or not a number ranks last."""
    ranked = [-math.inf if value is None or math.isnan(value) else value for value in dev_means]
    return ranked.index(max(ranked))


def search_record(grid: SearchGrid, scores: Sequence[dict[str, Any]], seeds: Sequence[int], dev_key: str) -> dict:
    """The ``search`` section: the grid, every point's scores in grid order, the choice and how it was made."""
    chosen = choose([entry["dev_mean"] for entry in scores])
    return {
        "grid": grid.as_record(),
        "seeds": list(seeds),
        "dev_key": dev_key,
        "chosen_by": CHOSEN_BY.format(seeds=", ".join(map(str, seeds))),
        "points": list(scores),
        "choice": scores[chosen]["point"],
    }


def chosen_point(record: dict[str, Any]) -> dict[str, Any]:
    """The chosen point's entry of a ``search`` section."""
    return next(entry for entry in record["points"] if entry["point"] == record["choice"])
