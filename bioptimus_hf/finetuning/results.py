"""A fine-tuning run's results over seeds, NER's and BLURB's alike: each seed's ``seed_<s>/seed_results.json``,
written as it finishes, merged into ``all_results.json`` and its ``results.md`` table; a seed's Trainer checkpoints
removed once it has trained; the settings a run records (:func:`run_settings`); two runs compared seed by seed.

Means are over seeds; ``*_std`` is the sample standard deviation (ddof=1; 0.0 for a single seed). A NER run's
``all_results.json`` keys are a contract (cards and the Hub publisher read them through
:class:`~bioptimus_hf.releases.ner_results.NerResult`; docs/ner.md).
"""

from __future__ import annotations

import math
import os
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from statistics import mean, stdev
from typing import Any

from ..releases.ner_results import METRICS, RESULTS_FILE
from ..utils.files import read_json, write_json_atomic, write_text_atomic


# One fine-tune's result, written into its seed_<s>/ directory as soon as that seed finishes: separately
# run seeds (parallel jobs, one per GPU) merge into one all_results.json (merge_seed_results).
SEED_RESULTS_FILE = "seed_results.json"


def sample_std(values: Sequence[float]) -> float:
    """The sample standard deviation (ddof=1): 0.0 for one value, not a number where a value is not one (a constant
    prediction's Pearson r; ``statistics.stdev`` raises on it)."""
    if any(math.isnan(value) for value in values):
        return math.nan
    return stdev(values) if len(values) > 1 else 0.0


def aggregate_seed_results(
    per_seed: Sequence[dict[str, Any]], run_info: dict[str, Any] | None = None, metrics: Sequence[str] = METRICS
) -> dict[str, Any]:
    """Per-seed records (``seed``, ``eval_f1``, ``test_f1``, ...) as ``all_results``: ``run_info``, the mean and
    ``_std`` of ``eval_<m>`` and ``test_<m>`` for each of ``metrics``, the mean training time and speed."""
    if not per_seed:
        raise ValueError("no seed results to aggregate")
    results: dict[str, Any] = dict(run_info or {})
    results["seeds"] = [run["seed"] for run in per_seed]
    results["num_seeds"] = len(per_seed)
    for key in [f"{split}_{metric}" for split in ("eval", "test") for metric in metrics]:
        values = [run[key] for run in per_seed if run.get(key) is not None]
        if values:
            results[key] = mean(values)
            results[f"{key}_std"] = sample_std(values)
    for key in ("train_runtime_s", "train_steps_per_second"):
        values = [run[key] for run in per_seed if run.get(key) is not None]
        if values:
            results[key] = mean(values)
    results["per_seed"] = list(per_seed)
    return results


def paired_seed_difference(
    results: dict[str, Any], reference: dict[str, Any], key: str = "test_f1"
) -> dict[str, Any] | None:
    """``results`` minus ``reference`` seed by seed (two ``all_results`` dicts), over the seeds both ran.

    The same seed gives both models the same data order, head initialisation and dropout masks, so most of the
    seed-to-seed swing cancels in the difference: its spread, not the rows' own, says whether one model is ahead.
    ``None`` when no seed has ``key`` in both."""
    ours = {run["seed"]: run[key] for run in results.get("per_seed", []) if run.get(key) is not None}
    theirs = {run["seed"]: run[key] for run in reference.get("per_seed", []) if run.get(key) is not None}
    seeds = sorted(set(ours) & set(theirs))
    if not seeds:
        return None
    differences = [ours[seed] - theirs[seed] for seed in seeds]
    return {
        "seeds": seeds,
        "differences": differences,
        "mean": mean(differences),
        "std": sample_std(differences),
        "num_seeds": len(seeds),
    }


def _percent(value: float | None) -> str:
    return "–" if value is None or math.isnan(value) else f"{100 * value:.2f}"


def results_table(results: Mapping[str, Any], columns: Mapping[str, str]) -> str:
    """``results.md``'s table: a row per seed of the ``columns`` (header -> key, in %), then mean ± std, the last
    column's in bold."""
    lines = ["| seed | " + " | ".join(columns) + " |", "|---" * (len(columns) + 1) + "|"]
    for run in results["per_seed"]:
        lines.append(f"| {run['seed']} | " + " | ".join(_percent(run.get(key)) for key in columns.values()) + " |")
    cells = [
        "–" if results.get(key) is None else f"{_percent(results[key])} ± {_percent(results.get(key + '_std', 0.0))}"
        for key in columns.values()
    ]
    cells[-1] = f"**{cells[-1]}**"
    return "\n".join(lines + ["| mean ± std | " + " | ".join(cells) + " |"]) + "\n"


def write_results(output_dir: str, results: dict[str, Any], title: str | None = None, columns=None) -> str:
    """``all_results.json`` (its presence means a finished run: the comparison skips it) and, with ``columns``,
    ``results.md`` (``title`` over :func:`results_table`); returns the table."""
    write_json_atomic(os.path.join(output_dir, RESULTS_FILE), results, default=None)
    if columns is None:
        return ""
    table = results_table(results, columns)
    write_text_atomic(os.path.join(output_dir, "results.md"), f"# {title}\n\n{table}")
    return table


def seed_dir(output_dir: str, seed: int) -> str:
    return os.path.join(output_dir, f"seed_{seed}")


def seed_finished(output_dir: str, seed: int) -> bool:
    """Whether ``seed`` has its results in ``output_dir`` (a rerun skips it)."""
    return os.path.isfile(os.path.join(seed_dir(output_dir, seed), SEED_RESULTS_FILE))


def remove_checkpoints(seed_directory: str) -> list[str]:
    """Delete the Trainer's ``checkpoint-*`` directories of a seed that has trained (the best one, with
    ``load_best_model_at_end``, is then loaded): nothing resumes a seed from them. Returns the paths."""
    from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR

    removed = sorted(str(p) for p in Path(seed_directory).glob(f"{PREFIX_CHECKPOINT_DIR}-*") if p.is_dir())
    for path in removed:
        shutil.rmtree(path)
    return removed


def run_settings(stab_args, training_args) -> dict[str, Any]:
    """The fine-tuning settings a run records in its ``run_info`` (NER and BLURB alike): stabilisation, schedule,
    batch per process, processes, whether bf16 ran (``training_args`` after ``resolve_bf16``) and who drew the
    dropout masks (torch, unless the run says otherwise)."""
    return {
        "stabilisation": {k: v for k, v in asdict(stab_args).items() if k != "seeds"},
        "learning_rate": training_args.learning_rate,
        "num_train_epochs": training_args.num_train_epochs,
        "max_steps": training_args.max_steps,
        "warmup_steps": training_args.warmup_steps,
        "lr_scheduler_type": str(getattr(training_args.lr_scheduler_type, "value", training_args.lr_scheduler_type)),
        "train_batch_size": training_args.per_device_train_batch_size,
        "gradient_accumulation_steps": training_args.gradient_accumulation_steps,
        "world_size": training_args.world_size,  # processes; the batch is train_batch_size × world_size × accumulation
        "bf16": training_args.bf16,
        "dropout_masks": "torch",
    }


def write_seed_result(output_dir: str, run: dict[str, Any], run_info: dict[str, Any]) -> str:
    """Write one seed's metrics and the run's settings to ``seed_<s>/seed_results.json`` (atomic)."""
    path = os.path.join(seed_dir(output_dir, run["seed"]), SEED_RESULTS_FILE)
    return str(write_json_atomic(path, {"run": run, "run_info": run_info}, default=None))


def merge_seed_results(output_dir: str, metrics: Sequence[str] = METRICS) -> dict[str, Any]:
    """Every ``seed_*/seed_results.json`` under ``output_dir``, in seed order, as :func:`aggregate_seed_results`.
    Seeds fine-tuned under other settings (another model, dataset or hyper-parameter) are refused, naming the files,
    so that a table never mixes two configurations."""
    files = sorted(Path(output_dir).glob(f"seed_*/{SEED_RESULTS_FILE}"))
    if not files:
        raise FileNotFoundError(f"no seed_*/{SEED_RESULTS_FILE} under {output_dir}: no seed has finished there")
    records = sorted(((file, read_json(file)) for file in files), key=lambda item: item[1]["run"]["seed"])
    first_file, first = records[0]
    for file, record in records[1:]:
        differing = sorted(
            k
            for k in {*record["run_info"], *first["run_info"]}
            if record["run_info"].get(k) != first["run_info"].get(k)
        )
        if differing:
            raise ValueError(
                f"{file} and {first_file} were fine-tuned under different settings ({', '.join(differing)}); "
                f"remove the stale seed directory or use another output_dir"
            )
    per_seed = [record["run"] for _, record in records]
    results = aggregate_seed_results(per_seed, first["run_info"], metrics)
    speeds = [run["test_sentences_per_s"] for run in per_seed if run.get("test_sentences_per_s") is not None]
    if speeds:  # a NER run's prediction speed
        results["test_sentences_per_s"] = mean(speeds)
    return results


def load_results(path: str) -> dict[str, Any]:
    """A run's ``all_results.json``, given it or its directory."""
    return read_json(os.path.join(path, RESULTS_FILE) if os.path.isdir(path) else path)
