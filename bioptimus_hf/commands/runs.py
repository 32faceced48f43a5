"""The commands that are more than one call of their wing: what each does around it, as a command's duty (printing,
the best seed's Hub push, a Hub error that says how to resume). Each wing loads only when its command runs."""

from __future__ import annotations

import json
import shlex
import sys

from ..utils.cli import exit_on_bad_input, exit_on_hub_error
from .parsing import configure_logging, parse_args


def prepare_corpus(args):
    """``bioptimus prepare-corpus``: prepare, print the counts; lost records end with status 1 unless accepted."""
    from ..corpus.prepare import lost_records_message, prepare_corpus

    manifest = prepare_corpus(args)
    print(json.dumps(manifest["counts"], indent=2), flush=True)
    lost = lost_records_message(manifest)
    if lost and args.on_error == "report":
        raise SystemExit(f"error: {lost}")
    return manifest


def publish(args, argv: list[str]):
    """``bioptimus publish``: publish, one line per version; a failed Hub request ends with the command to resume."""
    from ..releases.hub import publish_releases
    from ..utils.secrets import redact_argv

    resume = (
        "Nothing published is lost and publishing is idempotent: re-run the same command (token: --hub_token or "
        f"HF_TOKEN) to upload only what is missing:\n  bioptimus publish {shlex.join(redact_argv(argv, drop=True))}"
    )
    with exit_on_hub_error("the Hub request", resume), exit_on_bad_input(ValueError, FileNotFoundError, RuntimeError):
        reports = publish_releases(
            args.run_dir,
            args.hub_model_id,
            versions=args.versions,
            mode=args.mode,
            private=args.hub_private_repo,
            organization=args.organization,
            commit_message=args.commit_message,
            force=args.force,
            dry_run=args.dry_run,
            staging_dir=args.staging_dir,
            ner_results=args.ner_result_paths(),
            license=args.license,
            datasets=args.datasets,
            rerender_card=not args.keep_release_readme,
            keep_edited_card=args.keep_edited_card,
            token=args.hub_token,
            endpoint=args.endpoint,
            print_fn=print if args.dry_run else None,
        )
    for report in reports:
        where = f"{report.repo_id} (branch {report.branch}, tag {report.tag})"
        print(
            f"v{report.version}: {report.status} -> {where}"
            + (f"; uploaded {report.uploaded}" if report.uploaded else "")
        )
    return reports


def ner(model_args, data_args, stab_args, training_args) -> dict:
    """``bioptimus ner``: fine-tune every seed; ``--push_to_hub`` pushes the best seed's model once every rank is
    done (the Trainer never pushes)."""
    from ..ner.hub_push import push_best_seed, take_ner_hub_settings
    from ..ner.run import fine_tune_ner, load_ner_run_data
    from ..utils.distributed import close_process_group

    with exit_on_bad_input():
        hub = take_ner_hub_settings(training_args, model_args.save_model)
        data = load_ner_run_data(model_args, data_args)
    results = fine_tune_ner(model_args, data_args, stab_args, training_args, data)
    close_process_group()
    if hub is not None and training_args.process_index == 0:
        output_dir = training_args.output_dir
        with exit_on_hub_error(f"--push_to_hub to {hub.repo_id}", f"the results and models are in {output_dir}"):
            dataset, base = data_args.dataset_name, model_args.base_model_hub_id
            push_best_seed(hub, output_dir, results, model_args.model_name_or_path, dataset, base_model_hub_id=base)
    return results


def blurb_task(model_args, data_args, stab_args, training_args) -> dict:
    """``bioptimus blurb-task``: fine-tune every seed; ``--push_to_hub`` pushes the seed with the best dev score once
    every rank is done (the token taken before training: the Trainer never pushes)."""
    from ..blurb.run import run_blurb_task
    from ..finetuning.results import seed_dir
    from ..releases.seed_push import best_seed, push_seed_folder, take_seed_hub_settings
    from ..utils.distributed import close_process_group

    hub = take_seed_hub_settings(training_args, model_args.save_model)
    results = run_blurb_task(model_args, data_args, stab_args, training_args)
    close_process_group()
    if hub is not None and training_args.process_index == 0:
        output_dir, seed = training_args.output_dir, best_seed(results["per_seed"], "eval_score")
        message = f"{results['model_name']} on {results['dataset']}: seed {seed}, the best dev score"
        with exit_on_hub_error(f"--push_to_hub to {hub.repo_id}", f"the results and models are in {output_dir}"):
            push_seed_folder(hub, seed_dir(output_dir, seed), seed, message)
    return results


def compare(args, argv: list[str]) -> str | None:
    """``bioptimus compare``: run (or list) the NER jobs, the flags after ``--`` given to each; returns the table
    (the job list with ``--list_jobs``, None with ``--job_index``)."""
    from ..ner.compare import compare_models, parse_models, plan_jobs
    from ..ner.fine_tuning_config import NER_ARGUMENT_TYPES

    models, ner_flags = parse_models(args.models), argv[argv.index("--") + 1 :] if "--" in argv else []
    config = [args.ner_config] if args.ner_config else []
    if args.list_jobs:  # each through the Python that listed them: the same installation runs every job
        command = [sys.executable, "-m", __package__, "ner", *config, *ner_flags]
        jobs = plan_jobs(models, args.data_dirs, args.seeds)
        listed = "\n".join(shlex.join(command + job.flags(args.output_dir)) for job in jobs)
        print(listed)
        return listed
    stand_in = ["--model_name_or_path", models[0][1] if models else ""]  # each job sets its model, data, output, seed
    ner_line = [*config, *ner_flags, *stand_in]
    ner_arguments = None if args.results_only else parse_args(NER_ARGUMENT_TYPES, ner_line, "bioptimus ner")
    configure_logging("run", ner_arguments or ())
    options = dict(rerun=args.rerun, results_only=args.results_only, seeds=args.seeds, job_index=args.job_index)
    table = compare_models(models, args.data_dirs, args.output_dir, ner_arguments=ner_arguments, **options)
    if table is not None:
        print(table)
    return table


def blurb(args) -> dict:
    """``bioptimus blurb``: the benchmark; a fine-tune that failed in a worker ends it in one line."""
    from ..blurb.benchmark import run_benchmark
    from ..utils.job_pool import JobsFailed

    with exit_on_bad_input(JobsFailed):
        return run_benchmark(args)


def blurb_compare(args) -> dict:
    """``bioptimus blurb-compare``: the comparison, its table printed."""
    from ..blurb.compare import compare_runs, parse_runs

    comparison = compare_runs(parse_runs(args.runs), args.output_dir)
    print(comparison["markdown"])
    return comparison


def task_difficulty(args, curriculum_args) -> dict:
    """``bioptimus task-difficulty``: each model's loss under each phase of the curriculum."""
    from ..analysis.task_difficulty import measure_task_difficulty

    return measure_task_difficulty(args, curriculum_args.build())


def study(args, argv: list[str]):
    """``bioptimus study``: run (or resume) it, recording the command that reproduces it (local paths as a record
    names them, ``utils/public_paths.py``)."""
    from ..study.run import run_study
    from ..utils.public_paths import public_command

    return run_study(args, public_command(shlex.join(["bioptimus", "study", *argv])))


def plot(args) -> list[str]:
    """``bioptimus plot RUN_DIR``: draw the run's figures again, print the files written."""
    from ..pretraining.run_figures import draw_run_figures

    written = [str(path) for path in draw_run_figures(args.run_dir, args.output_dir)]
    print("\n".join(written))
    return written
