"""A fine-tuning run's results over seeds, NER's and BLURB's alike: each seed's ``seed_<s>/seed_results.json``,
written as it finishes, merged into ``all_results.json``; a seed's Trainer checkpoints removed once it has trained;
the fine-tuning settings a run records (:func:`run_settings`); two runs compared seed by seed.

Means are over seeds; ``*_std`` is the sample standard deviation (ddof=1; 0.0 for a single seed). A NER run's
``all_results.json`` keys are a contract (the model card and the Hub publisher read them through
:class:`~bioptimus_hf.releases.ner_results.NerResult`; see docs/ner.md); its ``results.md`` and
``model_index.json`` are :mod:`bioptimus_hf.ner.results`', a BLURB run's :mod:`bioptimus_hf.blurb.results`'.
"""

from __future__ import annotations

import json
import math
import os
import shutil
from dataclasses import asdict
from pathlib import Path
from statistics import mean, stdev
from typing import Any, Dict, Sequence

from ..releases.ner_results import METRICS, RESULTS_FILE
from ..utils.files import read_json


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
    per_seed: Sequence[Dict[str, Any]], run_info: Dict[str, Any] | None = None, metrics: Sequence[str] = METRICS
) -> Dict[str, Any]:
    """Combine per-seed metric dicts (keys ``seed``, ``eval_f1``, ``test_f1``, ...) into all_results: the mean and
    ``_std`` of ``eval_<m>`` and ``test_<m>`` for each of ``metrics``."""
    if not per_seed:
        raise ValueError("no seed results to aggregate")
    results: Dict[str, Any] = dict(run_info or {})
    results["seeds"] = [run["seed"] for run in per_seed]
    results["num_seeds"] = len(per_seed)
    for split in ("eval", "test"):
        for metric in metrics:
            key = f"{split}_{metric}"
            values = [run[key] for run in per_seed if run.get(key) is not None]
            if values:
                results[key] = mean(values)
                results[f"{key}_std"] = sample_std(values)
    for key in ("train_runtime_s", "train_steps_per_second"):  # absent from seeds written before it was recorded
        values = [run[key] for run in per_seed if run.get(key) is not None]
        if values:
            results[key] = mean(values)
    results["per_seed"] = list(per_seed)
    return results


def paired_seed_difference(
    results: Dict[str, Any], reference: Dict[str, Any], key: str = "test_f1"
) -> Dict[str, Any] | None:
    """``results`` minus ``reference`` seed by seed (two ``all_results`` dicts), over the seeds both ran.

    Fine-tuning with the same seed gives both models the same data order, head initialisation and
    dropout masks, so most of the seed-to-seed swing is shared and cancels in the difference: its
    spread, not the two rows' own spreads, says whether one model is ahead. ``None`` when no seed has
    ``key`` in both.
    """
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


def write_results(output_dir: str, results: Dict[str, Any]) -> str:
    """Write ``all_results.json`` atomically: its presence means a finished run (the comparison driver skips it)."""
    from ..utils.files import write_json_atomic

    return str(write_json_atomic(os.path.join(output_dir, RESULTS_FILE), results, default=None))


def seed_dir(output_dir: str, seed: int) -> str:
    return os.path.join(output_dir, f"seed_{seed}")


def seed_finished(output_dir: str, seed: int) -> bool:
    """Whether ``seed`` has its results in ``output_dir`` (a rerun skips it)."""
    return os.path.isfile(os.path.join(seed_dir(output_dir, seed), SEED_RESULTS_FILE))


def remove_checkpoints(seed_directory: str) -> list[str]:
    """Delete the Trainer's ``checkpoint-*`` directories in a seed's directory, once its training has ended (the
    best one, with ``load_best_model_at_end``, is then loaded): they hold candidate models and optimizer state, and
    nothing resumes a seed from them (an unfinished seed is trained again from its start). Returns the paths."""
    from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR

    removed = sorted(str(p) for p in Path(seed_directory).glob(f"{PREFIX_CHECKPOINT_DIR}-*") if p.is_dir())
    for path in removed:
        shutil.rmtree(path)
    return removed


def run_settings(stab_args, training_args) -> Dict[str, Any]:
    """The fine-tuning settings a run records in its ``run_info`` (NER and BLURB alike): stabilisation, schedule,
    batch per process, processes and whether bf16 ran (``training_args`` after ``resolve_bf16``)."""
    return {
        "stabilisation": {k: v for k, v in asdict(stab_args).items() if k != "seeds"},
        "learning_rate": training_args.learning_rate,
        "num_train_epochs": training_args.num_train_epochs,
        "max_steps": training_args.max_steps,
        "warmup_steps": training_args.warmup_steps,
        "lr_scheduler_type": str(getattr(training_args.lr_scheduler_type, "value", training_args.lr_scheduler_type)),
        "train_batch_size": training_args.per_device_train_batch_size,
        "world_size": training_args.world_size,  # processes; the batch is train_batch_size × world_size × accumulation
        "bf16": training_args.bf16,
    }


def write_seed_result(output_dir: str, run: Dict[str, Any], run_info: Dict[str, Any]) -> str:
    """Write one seed's metrics and the run's settings to ``seed_<s>/seed_results.json`` (atomic)."""
    from ..utils.files import write_json_atomic

    path = os.path.join(seed_dir(output_dir, run["seed"]), SEED_RESULTS_FILE)
    return str(write_json_atomic(path, {"run": run, "run_info": run_info}, default=None))


def merge_seed_results(output_dir: str, metrics: Sequence[str] = METRICS) -> Dict[str, Any]:
    """Aggregate every ``seed_*/seed_results.json`` under ``output_dir`` (in seed order) into the results of
    :func:`aggregate_seed_results`. Seeds fine-tuned under other settings (another model, dataset or
    hyper-parameter) are refused, naming the files, so that a table never mixes two configurations."""
    files = sorted(Path(output_dir).glob(f"seed_*/{SEED_RESULTS_FILE}"))
    if not files:
        raise FileNotFoundError(f"no seed_*/{SEED_RESULTS_FILE} under {output_dir}: no seed has finished there")
    records = [(file, read_json(file)) for file in files]
    for _, record in records:
        # seeds written before run_info recorded the process count are taken as one process, the usual case
        record["run_info"].setdefault("world_size", 1)
        # and seeds written before run_info recorded who drew the dropout masks used torch's
        record["run_info"].setdefault("dropout_masks", "torch")
        # and seeds written before run_info recorded whether they trained batched trained one after another
        record["run_info"].setdefault("batched_seeds", False)
    records.sort(key=lambda item: item[1]["run"]["seed"])
    first_file, first = records[0]
    for file, record in records[1:]:
        if record["run_info"] != first["run_info"]:
            differing = sorted(
                k
                for k in set(record["run_info"]) | set(first["run_info"])
                if record["run_info"].get(k) != first["run_info"].get(k)
            )
            raise ValueError(
                f"{file} and {first_file} were fine-tuned under different settings ({', '.join(differing)}); "
                f"remove the stale seed directory or use another output_dir"
            )
    per_seed = [record["run"] for _, record in records]
    results = aggregate_seed_results(per_seed, first["run_info"], metrics)
    speeds = [run["test_sentences_per_s"] for run in per_seed if run.get("test_sentences_per_s") is not None]
    if speeds:
        results["test_sentences_per_s"] = mean(speeds)
    return results


def load_results(path: str) -> Dict[str, Any]:
    if os.path.isdir(path):
        path = os.path.join(path, RESULTS_FILE)
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)
