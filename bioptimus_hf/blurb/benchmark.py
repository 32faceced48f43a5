"""``bioptimus blurb``: every dataset present fine-tuned over the same seeds, then one table. NER sets go through
:func:`bioptimus_hf.ner.run.fine_tune_ner` under ``--ner_config``, the others through
:func:`bioptimus_hf.blurb.run.fine_tune_blurb_seeds`, each with its recipe. Each dataset × seed is a job
(:mod:`.jobs`), run side by side as far as the device allows (:mod:`bioptimus_hf.utils.job_pool`, ``--jobs``),
the longest first; a seed whose ``seed_results.json`` exists is not trained again. Each dataset's seeds are then
merged and the table (:mod:`bioptimus_hf.releases.blurb_results`) built from the seed files asked for, the same
however the jobs ran. With ``--search`` (:mod:`.search`), a dataset's results are its chosen grid point's.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from statistics import mean
from typing import Any

from ..finetuning.results import SEED_RESULTS_FILE, sample_std, seed_dir, seed_finished
from ..ner.conll import NER_SPLITS, check_entity_types, is_ner_data_dir, ner_split_path, read_conll
from ..releases.blurb_results import BLURB_RESULTS_FILE, BLURB_TABLE_FILE, blurb_markdown
from ..utils.files import read_json, write_json_atomic, write_text_atomic
from ..utils.hardware import GpuMemory, resolve_batched_seeds
from ..utils.job_pool import DevicePlan, Job, JobOutcome, JobsFailed, parse_jobs, plan_device, run_jobs
from .benchmark_config import BenchmarkArguments
from .data import load_blurb_data, read_task_type, split_path
from .jobs import (
    NerFineTuning,
    SeedJob,
    job_arguments,
    job_estimates,
    ner_seed_arguments,
    run_seed_job,
)
from .run import merge_blurb_results, write_blurb_outputs
from .score import NER, DatasetScore, blurb_score
from .search import GridPoint, SearchGrid, chosen_point, point_dir, point_scores, search_record


logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class BenchmarkDataset:
    name: str  # the sub-directory's name, also the run's under output_dir
    task_type: str  # a key of score.BLURB_DATASETS
    data_dir: str


def _sub_directories(root: str | None) -> list[tuple[str, str]]:
    if not root:
        return []
    return [
        (name, os.path.join(root, name))
        for name in sorted(os.listdir(root))
        if os.path.isdir(os.path.join(root, name))
    ]


def find_datasets(
    blurb_dir: str | None, ner_dir: str | None, only: Sequence[str] | None = None
) -> list[BenchmarkDataset]:
    """The datasets under the two directories, NER first, each sorted by name; ``only`` keeps those named."""
    found = []
    for name, path in _sub_directories(ner_dir):
        if is_ner_data_dir(path):
            found.append(BenchmarkDataset(name, NER, path))
    for name, path in _sub_directories(blurb_dir):
        if os.path.isfile(split_path(path, "train")):
            found.append(BenchmarkDataset(name, read_task_type(path).name, path))
    names = [d.name for d in found]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:  # each dataset's runs go to <output_dir>/<name>/
        raise ValueError(f"dataset(s) {', '.join(twice)} under both --ner_dir and --blurb_dir: rename one")
    if only:
        unknown = sorted(set(only) - {d.name for d in found})
        if unknown:
            raise ValueError(
                f"--datasets {', '.join(unknown)}: not found; present: {', '.join(d.name for d in found) or 'none'}"
            )
        found = [d for d in found if d.name in only]
    if not found:
        raise ValueError(f"no BLURB dataset under --blurb_dir {blurb_dir} or --ner_dir {ner_dir}")
    return found


def check_datasets(datasets: Sequence[BenchmarkDataset]) -> dict[str, int]:
    """Every file read and checked before anything trains, so that a bad file of the last dataset is reported
    first (naming the file and line); returns each dataset's training rows (sentences for NER)."""
    train_rows = {}
    for dataset in datasets:
        if dataset.task_type != NER:
            train_rows[dataset.name] = len(load_blurb_data(dataset.data_dir).train.rows)
            continue
        paths = [ner_split_path(dataset.data_dir, split) for split in NER_SPLITS]
        train, *others = [read_conll(path) for path in paths if os.path.isfile(path)]
        for other in others:
            check_entity_types(train, other)
        train_rows[dataset.name] = len(train.sentences)
    return train_rows


def seed_groups(args: BenchmarkArguments, output_dir: str, name: str, batched: bool) -> list[list[int]]:
    """The unfinished seeds of one run (a dataset, or one of its grid points) as its jobs train them: each alone, or
    all in one job with ``batched`` seeds (``--batched_seeds``, resolved on this machine)."""
    done = [seed for seed in args.seeds if seed_finished(output_dir, seed)]
    if done:
        logger.info("%s: seeds %s finished, skipped", name, done)
    left = [seed for seed in args.seeds if seed not in done]
    if batched:
        return [left] if left else []
    return [[seed] for seed in left]


def search_grids(
    args: BenchmarkArguments, datasets: Sequence[BenchmarkDataset], ner: NerFineTuning | None
) -> dict[str, SearchGrid]:
    """With ``--search``, each dataset's grid: the ``--search_*`` flags, else the paper's learning rates and batch
    sizes and the epoch choices of the epochs the dataset trains at its recipe (or NER settings); else none."""
    if not args.search:
        return {}
    grids = {}
    for dataset in datasets:
        at_recipe = _seed_job(args, dataset, ner, os.path.join(args.output_dir, dataset.name), args.seeds[:1])
        epochs = job_arguments(at_recipe)[3].num_train_epochs
        grids[dataset.name] = SearchGrid.for_dataset(
            epochs, args.search_learning_rates, args.search_batch_sizes, args.search_epochs
        )
    return grids


def _seed_job(
    args: BenchmarkArguments,
    dataset: BenchmarkDataset,
    ner: NerFineTuning | None,
    output_dir: str,
    seeds: Sequence[int],
    point: GridPoint | None = None,
    batched: bool | None = None,
) -> SeedJob:
    """The job of ``seeds`` (several: trained as one batched model) of one run of ``dataset``."""
    return SeedJob(
        args,
        dataset.name,
        dataset.task_type,
        dataset.data_dir,
        output_dir,
        seed=seeds[0],
        ner=ner if dataset.task_type == NER else None,
        point=point,
        batched_seeds=batched,
        batched_with=tuple(seeds[1:]),
    )


def seed_jobs(
    args: BenchmarkArguments,
    datasets: Sequence[BenchmarkDataset],
    ner: NerFineTuning | None,
    grids: Mapping[str, SearchGrid] | None = None,
) -> list[SeedJob]:
    """A job for each dataset × seed not finished yet, in dataset then seed order; with ``--search``, for each
    dataset × grid point × seed (``grids``: :func:`search_grids`'), in dataset, point then seed order; with batched
    seeds, one job holds a run's unfinished seeds."""
    if grids is None:
        grids = search_grids(args, datasets, ner)
    batched = resolve_batched_seeds(args.batched_seeds)
    jobs = []
    for dataset in datasets:
        dataset_dir = os.path.join(args.output_dir, dataset.name)
        grid = grids.get(dataset.name)
        runs = [(point_dir(dataset_dir, point), point) for point in grid.points] if grid else [(dataset_dir, None)]
        for output_dir, point in runs:
            name = f"{dataset.name}{f' {point.name}' if point else ''}"
            for seeds in seed_groups(args, output_dir, name, batched):
                jobs.append(_seed_job(args, dataset, ner, output_dir, seeds, point, batched))
    return jobs


def _model_config(model_name_or_path: str):
    from transformers import AutoConfig

    try:
        return AutoConfig.from_pretrained(model_name_or_path)
    except (OSError, ValueError) as error:
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise ValueError(f"--model_name_or_path {model_name_or_path}: no model config there ({first})") from None


def pool_jobs(
    args: BenchmarkArguments,
    jobs: Sequence[SeedJob],
    train_rows: Mapping[str, int],
    device: str | None = None,
    gpus: Sequence[GpuMemory] | None = None,
    cores: int | None = None,
) -> tuple[list[Job], DevicePlan]:
    """The seed jobs as the pool runs them, the longest first, and how this machine runs them (``--jobs``);
    ``device``, ``gpus`` (every visible GPU's memory) and ``cores`` default to this machine's."""
    if device is None:
        import torch

        device = "cuda" if torch.cuda.is_available() else "cpu"
    config = _model_config(args.model_name_or_path)
    estimates = [job_estimates(job, train_rows[job.dataset], config, device) for job in jobs]
    largest = max((memory for memory, _ in estimates), default=0)
    plan = plan_device(parse_jobs(args.jobs), len(jobs), largest, device=device, cores=cores, gpus=gpus)
    order = sorted(range(len(jobs)), key=lambda i: -estimates[i][1])  # stable: dataset then seed among equals
    logs = os.path.join(args.output_dir, "logs") if plan.slots > 1 else None
    if logs:  # side by side, each job's output goes to its log: the Trainer's bars would only clutter it
        jobs = [replace(job, disable_tqdm=True) for job in jobs]
    pooled = [
        Job(
            name=jobs[i].name,
            function=run_seed_job,
            argument=jobs[i],
            memory_bytes=estimates[i][0],
            memory_key=jobs[i].memory_key,
            log_path=os.path.join(logs, jobs[i].log_name) if logs else None,
        )
        for i in order
    ]
    return pooled, plan


def merge_dataset(
    dataset: BenchmarkDataset, output_dir: str, into: str | None = None, search: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Every finished seed of ``output_dir`` merged into ``all_results.json`` and ``results.md``, as the last seed of
    a run one seed after another leaves them: in ``output_dir``, or in ``into`` with the ``search`` section (the
    dataset's directory, from its chosen grid point's)."""
    extra = {"search": search} if search is not None else {}
    if dataset.task_type == NER:
        from ..ner.run import merge_ner_run  # the NER wing's run, as its jobs load it

        results, _ = merge_ner_run(output_dir, into, extra)
    else:
        results = {**merge_blurb_results(output_dir), **extra}
        write_blurb_outputs(into or output_dir, results)
    return results


def run_jobs_of(
    args: BenchmarkArguments,
    datasets: Sequence[BenchmarkDataset],
    jobs: Sequence[SeedJob],
    train_rows: Mapping[str, int],
) -> list[JobOutcome]:
    """Run ``jobs`` (as ``--jobs`` says), then merge each dataset that trained a seed; returns the outcomes."""
    if not jobs:
        return []
    pooled, plan = pool_jobs(args, jobs, train_rows)
    if plan.slots > 1:
        os.makedirs(os.path.join(args.output_dir, "logs"), exist_ok=True)
    logger.info(
        "%d fine-tunes, up to %d at once on %s (%d torch thread(s) each%s)",
        len(pooled),
        plan.slots,
        f"{len(plan.gpus)} GPUs" if len(plan.gpus) > 1 else plan.device,
        plan.threads_per_job,
        f"; {plan.memory_budget_bytes / 2**30:.1f} GiB of device memory" if plan.memory_budget_bytes else "",
    )

    def done(outcome: JobOutcome) -> None:
        if outcome.ok:
            key = "test_f1" if outcome.job.argument.task_type == NER else "test_score"
            score = outcome.result.get(key)
            shown = f"test {100 * score:.2f}" if score is not None else "no test split"
            logger.info("%s: %s, %.0f s", outcome.job.name, shown, outcome.seconds)

    report = run_jobs(pooled, plan, progress=not args.disable_tqdm, description="BLURB fine-tunes", on_done=done)
    trained = {
        (outcome.job.argument.dataset, outcome.job.argument.output_dir) for outcome in report.outcomes if outcome.ok
    }
    by_name = {dataset.name: dataset for dataset in datasets}
    for name, output_dir in sorted(trained):  # each dataset's (or grid point's) directory that trained a seed
        merge_dataset(by_name[name], output_dir)
    if report.failures:
        names = ", ".join(outcome.job.name for outcome in report.failures)
        raise JobsFailed(
            f"{len(report.failures)} of {len(pooled)} fine-tunes failed ({names}), each named with its error above"
            + (f" and logged in {os.path.join(args.output_dir, 'logs')}" if plan.slots > 1 else "")
            + ": rerun the same command to train only the missing seeds"
        )
    return report.outcomes


def dataset_row(dataset: BenchmarkDataset, output_dir: str, seeds: Sequence[int]) -> dict[str, Any]:
    """One dataset's test scores per seed (0-100), their mean and sample standard deviation."""
    key = "test_f1" if dataset.task_type == NER else "test_score"
    paths = [os.path.join(seed_dir(output_dir, seed), SEED_RESULTS_FILE) for seed in seeds]
    records = [read_json(path) for path in paths]
    for path, record in zip(paths, records):
        if record["run"].get(key) is None:
            raise ValueError(f"{path}: no test score ({key}): the dataset has no test split")
        if record["run_info"] != records[0]["run_info"]:  # one row, one configuration
            raise ValueError(
                f"{path} and {paths[0]} were fine-tuned under different settings; remove the stale "
                "seed directory or use another --output_dir"
            )
    per_seed = {str(seed): 100 * record["run"][key] for seed, record in zip(seeds, records)}
    metric = records[0]["run_info"].get("metric", "f1")  # a NER run's: entity-level F1
    values = list(per_seed.values())
    return {
        "dataset": dataset.name,
        "task_type": dataset.task_type,
        "metric": metric,
        "per_seed": per_seed,
        "mean": mean(values),
        "std": sample_std(values),
    }


def benchmark_table(
    rows: Sequence[dict[str, Any]], seeds: Sequence[int], model_name: str, model_name_or_path: str | None = None
) -> dict[str, Any]:
    """The table of ``blurb_results.json``: rows, each task type's average, the BLURB score, per seed too."""

    def score_of(values: dict[str, float]) -> dict[str, Any]:  # dataset -> 0-100 score
        return blurb_score(
            DatasetScore(row["dataset"], row["task_type"], values[row["dataset"]] / 100) for row in rows
        )

    overall = score_of({row["dataset"]: row["mean"] for row in rows})
    per_seed = {str(seed): score_of({row["dataset"]: row["per_seed"][str(seed)] for row in rows}) for seed in seeds}
    task_types = {
        task_type: {
            "score": entry["score"],
            "datasets": list(entry["datasets"]),
            "per_seed": {seed: entry["task_types"][task_type]["score"] for seed, entry in per_seed.items()},
        }
        for task_type, entry in overall["task_types"].items()
    }
    return {
        "model_name": model_name,
        "model_name_or_path": model_name_or_path,
        "seeds": list(seeds),
        "datasets": list(rows),
        "task_types": task_types,
        "score": overall["score"],
        "score_per_seed": {seed: entry["score"] for seed, entry in per_seed.items()},
        "absent_task_types": overall["absent_task_types"],
    }


def write_benchmark_table(output_dir: str, table: dict[str, Any]) -> str:
    """``blurb_results.json`` and ``blurb_results.md``; returns the markdown."""
    markdown = blurb_markdown(table)
    write_json_atomic(os.path.join(output_dir, BLURB_RESULTS_FILE), table)
    write_text_atomic(os.path.join(output_dir, BLURB_TABLE_FILE), f"# {table['model_name']} on BLURB\n\n{markdown}")
    return markdown


def check_ner_config(jobs: Sequence[SeedJob]) -> None:
    """Refuse a ``--ner_config`` whose values ``bioptimus ner`` refuses before anything trains: the first NER job's
    typed arguments are built here (a ``ValueError`` naming the config file and the value)."""
    first = next((job for job in jobs if job.task_type == NER), None)
    if first is not None:
        ner_seed_arguments(first)


def ner_fine_tuning(args: BenchmarkArguments) -> NerFineTuning | None:
    """How the NER sets are fine-tuned (None without ``--ner_dir``): ``--ner_config`` read, each of BLURB's sets
    with its recipe over the packaged default's values or under the values of a file the user names."""
    if not args.ner_dir:
        return None
    return NerFineTuning.from_config(args.ner_config, recipe_over_config=args.uses_default_ner_config)


def search_row(dataset: BenchmarkDataset, dataset_dir: str, grid: SearchGrid, seeds: Sequence[int]) -> dict:
    """With ``--search``, a dataset's row at its chosen point (:mod:`.search`), with the table's ``search`` entry
    (scores 0-100); the dataset's ``all_results.json`` and ``results.md`` are the chosen point's seeds merged, with
    the ``search`` section (scores as fractions)."""
    keys = ("eval_f1", "test_f1") if dataset.task_type == NER else ("eval_score", "test_score")
    record = search_record(grid, [point_scores(dataset_dir, p, seeds, *keys) for p in grid.points], seeds, keys[0])
    chosen_dir = os.path.join(dataset_dir, chosen_point(record)["output_dir"])
    merge_dataset(dataset, chosen_dir, into=dataset_dir, search=record)
    percent = ("dev_mean", "dev_std", "test_mean", "test_std")

    def in_percent(entry: dict[str, Any]) -> dict[str, Any]:
        return {k: 100 * v if k in percent and v is not None else v for k, v in entry.items() if k != "output_dir"}

    search = {**record, "points": [in_percent(entry) for entry in record["points"]]}
    return {**dataset_row(dataset, chosen_dir, seeds), "search": search}


def run_benchmark(args: BenchmarkArguments) -> dict[str, Any]:
    """Every dataset present, each unfinished seed fine-tuned (side by side as far as the device allows; with
    ``--search``, at every point of its grid), then the table; returns it."""
    datasets = find_datasets(args.blurb_dir, args.ner_dir, args.datasets)
    ner = ner_fine_tuning(args)
    train_rows = check_datasets(datasets)
    grids = search_grids(args, datasets, ner)
    jobs = seed_jobs(args, datasets, ner, grids)
    check_ner_config(jobs)
    os.makedirs(args.output_dir, exist_ok=True)
    run_jobs_of(args, datasets, jobs, train_rows)
    rows = [
        search_row(d, os.path.join(args.output_dir, d.name), grids[d.name], args.seeds)
        if d.name in grids
        else dataset_row(d, os.path.join(args.output_dir, d.name), args.seeds)
        for d in datasets
    ]
    table = benchmark_table(rows, args.seeds, args.name, args.model_name_or_path)
    print(write_benchmark_table(args.output_dir, table))
    return table
