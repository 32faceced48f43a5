"""``bioptimus compare``: several models on several NER datasets, one table in the layout of the BIOptimus paper's
Table 5 (a row per model, a column per dataset, test F1 mean ± std over seeds, and the average). Each model ×
dataset (× seed: :func:`plan_jobs`, independent jobs) is fine-tuned in this process by
:func:`bioptimus_hf.ner.run.fine_tune_ner`.
"""

from __future__ import annotations

import dataclasses
import glob
import json
import logging
import os
import shlex
from dataclasses import dataclass
from statistics import mean
from typing import Dict, List, Optional, Sequence, Tuple

from ..finetuning.results import SEED_RESULTS_FILE, load_results, merge_seed_results, seed_finished
from ..releases.ner_results import RESULTS_FILE
from ..utils.files import write_json_atomic, write_text_atomic
from .compare_config import NerComparisonArguments


logger = logging.getLogger(__name__)


def parse_models(items: Sequence[str]) -> List[Tuple[str, str]]:
    """``["a=path1", "path2"]`` -> ``[("a", "path1"), ("path2", "path2")]`` (name defaults to the basename)."""
    models = []
    for item in filter(None, (part.strip() for part in items)):
        name, sep, path = item.partition("=")
        if not sep:
            name, path = os.path.basename(os.path.normpath(item)), item
        models.append((name, path))
    return models


def run_dir(output_dir: str, model: str, dataset: str) -> str:
    return os.path.join(output_dir, model, os.path.basename(os.path.normpath(dataset)))


def comparison_table(results: Dict[Tuple[str, str], dict], models: Sequence[str], datasets: Sequence[str]) -> str:
    """Markdown table of test F1 (%) mean ± std; missing runs show as a dash; last column = average."""
    header = "| model | " + " | ".join(datasets) + " | average |"
    lines = [header, "|---" * (len(datasets) + 2) + "|"]
    for model in models:
        cells, f1s = [], []
        for dataset in datasets:
            result = results.get((model, dataset))
            if result is None or result.get("test_f1") is None:
                cells.append("–")
                continue
            f1s.append(result["test_f1"])
            cells.append(f"{100 * result['test_f1']:.2f} ± {100 * result.get('test_f1_std', 0.0):.2f}")
        average = f"{100 * mean(f1s):.2f}" if f1s and len(f1s) == len(datasets) else "–"
        lines.append(f"| {model} | " + " | ".join(cells) + f" | {average} |")
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class NerJob:
    """One fine-tuning job of a comparison: a model on a dataset, for one seed (or the config's seeds)."""

    model: str
    model_path: str
    dataset: str
    seed: Optional[int] = None

    def directory(self, output_dir: str) -> str:
        return run_dir(output_dir, self.model, self.dataset)

    def done(self, output_dir: str) -> bool:
        directory = self.directory(output_dir)
        if self.seed is None:
            return os.path.isfile(os.path.join(directory, RESULTS_FILE))
        return seed_finished(directory, self.seed)

    def flags(self, output_dir: str) -> List[str]:
        """This job's own ``bioptimus ner`` flags (after the shared ones, so that they win)."""
        flags = ["--model_name_or_path", self.model_path, "--model_name", self.model, "--data_dir", self.dataset]
        flags += ["--output_dir", self.directory(output_dir)]
        if self.seed is not None:
            flags += ["--seeds", str(self.seed)]
        return flags

    def arguments(self, template: tuple, output_dir: str) -> tuple:
        """The ``bioptimus ner`` arguments of this job: ``template`` (the comparison's config and flags, parsed)
        with this job's model, dataset, output directory and seed; ``template`` itself is left as it is."""
        model_args, data_args, stab_args, training_args = template
        return (
            dataclasses.replace(model_args, model_name_or_path=self.model_path, model_name=self.model),
            dataclasses.replace(data_args, data_dir=self.dataset),
            stab_args if self.seed is None else dataclasses.replace(stab_args, seeds=[self.seed]),
            dataclasses.replace(training_args, output_dir=self.directory(output_dir)),
        )


def plan_jobs(
    models: Sequence[Tuple[str, str]], datasets: Sequence[str], seeds: Sequence[int] | None = None
) -> List[NerJob]:
    """Every model × dataset (× seed, when seeds are given) job, in a fixed order (job indices are stable)."""
    return [
        NerJob(name, path, dataset, seed)
        for name, path in models
        for dataset in datasets
        for seed in (seeds or [None])
    ]


def merge_comparison(models: Sequence[Tuple[str, str]], datasets: Sequence[str], output_dir: str) -> str:
    """Each model × dataset directory's finished seeds merged (a directory without seed files: its
    ``all_results.json``), ``comparison.md`` and ``comparison.json`` written; returns the markdown table."""
    from .run import write_run_outputs

    dataset_names = [os.path.basename(os.path.normpath(d)) for d in datasets]
    results: Dict[Tuple[str, str], dict] = {}
    for name, _ in models:
        for dataset, dataset_name in zip(datasets, dataset_names):
            directory = run_dir(output_dir, name, dataset)
            if glob.glob(os.path.join(directory, "seed_*", SEED_RESULTS_FILE)):
                merged = results[(name, dataset_name)] = merge_seed_results(directory)
                written = os.path.join(directory, RESULTS_FILE)
                if not os.path.isfile(written) or load_results(written) != json.loads(json.dumps(merged)):
                    write_run_outputs(directory, merged)  # seeds finished since `bioptimus ner` last merged
            elif os.path.isfile(os.path.join(directory, RESULTS_FILE)):
                results[(name, dataset_name)] = load_results(directory)
    table = comparison_table(results, [name for name, _ in models], dataset_names)
    os.makedirs(output_dir, exist_ok=True)
    write_text_atomic(
        os.path.join(output_dir, "comparison.md"), "Test entity-level F1 (%), mean ± std over seeds\n\n" + table
    )
    summary = [
        {
            "model": model,
            "dataset": dataset,
            **{k: r.get(k) for k in ("test_f1", "test_f1_std", "test_precision", "test_recall", "eval_f1", "seeds")},
        }
        for (model, dataset), r in results.items()
    ]
    write_json_atomic(os.path.join(output_dir, "comparison.json"), summary)
    return table


def job_commands(args: NerComparisonArguments, ner: Sequence[str], ner_flags: Sequence[str]) -> List[str]:
    """One shell command per job (``--list_jobs``): ``ner`` (how ``bioptimus ner`` is started), the config,
    ``ner_flags`` (what follows ``--``), then the job's own flags."""
    config = [args.ner_config] if args.ner_config else []
    command = [*ner, *config, *ner_flags]
    jobs = plan_jobs(parse_models(args.models), args.data_dirs, args.seeds)
    return [shlex.join(command + job.flags(args.output_dir)) for job in jobs]


def shared_ner_arguments(args: NerComparisonArguments, ner_flags: Sequence[str]) -> tuple:
    """The ``bioptimus ner`` arguments every job shares: ``--ner_config`` under ``ner_flags``, checked (each job then
    sets its model, data, output and seed). A ValueError names what is refused."""
    from ..utils.config_mapping import CommandParser
    from ..utils.model_reference import check_model_references
    from .fine_tuning_config import NER_ARGUMENT_TYPES

    config = [args.ner_config] if args.ner_config else []
    stand_in = ["--model_name_or_path", parse_models(args.models)[0][1] if args.models else ""]
    parsed = CommandParser(NER_ARGUMENT_TYPES, "bioptimus ner").parse_line([*config, *ner_flags, *stand_in])
    check_model_references(parsed)
    return parsed


def compare_models(args: NerComparisonArguments, ner_arguments: tuple | None = None) -> str | None:
    """Every model fine-tuned on every dataset (finished jobs skipped unless ``--rerun``), ``comparison.md`` and
    ``comparison.json`` written in ``--output_dir``; returns the markdown table. ``ner_arguments``: the parsed
    arguments every job shares (:func:`shared_ner_arguments`; not needed with ``--results_only``). With ``--seeds``
    every seed is a job of its own; ``--job_index`` runs only that job of :func:`plan_jobs` (a SLURM array task) and
    returns None: a later ``--results_only`` merges the seeds into the same table as one run."""
    models, output_dir, job_index = parse_models(args.models), args.output_dir, args.job_index
    jobs = plan_jobs(models, args.data_dirs, args.seeds)
    if job_index is not None:
        if not 0 <= job_index < len(jobs):
            raise ValueError(
                f"--job_index {job_index} is out of range: this comparison has {len(jobs)} jobs (0..{len(jobs) - 1})"
            )
        jobs = [jobs[job_index]]
    if not args.results_only:
        from .run import fine_tune_ner

        for job in jobs:
            if args.rerun or not job.done(output_dir):
                logger.info(
                    "comparison: %s on %s%s", job.model, job.dataset, "" if job.seed is None else f", seed {job.seed}"
                )
                fine_tune_ner(*job.arguments(ner_arguments, output_dir))
    if job_index is not None:
        return None
    return merge_comparison(models, args.data_dirs, output_dir)


def run_comparison(args: NerComparisonArguments, argv: Sequence[str], ner: Sequence[str]) -> str | None:
    """``bioptimus compare``: the jobs run (or listed, ``--list_jobs``, each started by ``ner``), the flags after
    ``--`` given to each; prints and returns the table (the job list with ``--list_jobs``, None with ``--job_index``)."""
    ner_flags = list(argv[argv.index("--") + 1 :]) if "--" in argv else []
    if args.list_jobs:
        print(listed := "\n".join(job_commands(args, ner, ner_flags)))
        return listed
    table = compare_models(args, None if args.results_only else shared_ner_arguments(args, ner_flags))
    if table is not None:
        print(table)
    return table
