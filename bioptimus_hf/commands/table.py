"""The commands of ``bioptimus``, in pipeline order (the one list: help, scripts, README, tests), and the runs of
those that are more than one call of their wing, with what each does around it as a command's duty."""

from __future__ import annotations

import json
import logging
import shlex
import sys
from dataclasses import dataclass

from ..utils.cli import BAD_INPUT_ERRORS, BadInput, exit_on_bad_input, exit_on_hub_error
from ..utils.job_pool import JobsFailed


LOG_FORMAT = "%(asctime)s - %(levelname)s - %(name)s - %(message)s"


@dataclass(frozen=True)
class Command:
    description: str  # `bioptimus <command> --help`'s paragraph (plain text); its first sentence, `bioptimus --help`'s
    example: str  # a runnable command line
    arguments: str  # "module:NAME" of its argument dataclasses (or of a tuple of them), several space-separated
    run: str  # "module:function" called with the parsed dataclasses; imported only to run, not for --help
    errors: tuple[type[BaseException], ...] = ()  # what the run raises for bad input (default: BAD_INPUT_ERRORS)
    log: str | None = None  # how it logs: "run" or "training" (commands.parsing.configure_logging)
    build: str | None = None  # "module:function" building the dataclasses from what the line sets
    positional: str | None = None  # the flag a first value that is no config file is (plot's RUN_DIR)
    line: bool = False  # the run gets the command line too, the parser only what comes before a `--`

    @property
    def summary(self) -> str:
        return self.description.split(". ")[0]


COMMANDS: dict[str, Command] = {
    "prepare-corpus": Command(
        "Turn NLM's PubMed XML files (baseline, updates) into a sharded corpus. One record per citation, later "
        "versions replacing earlier ones, Parquet shards and a manifest.json whose counts reconcile; a rerun skips "
        "finished shards. See docs/pubmed.md.",
        "bioptimus prepare-corpus --input_files pubmed/pubmed25n0001.xml.gz --output_dir corpus/pubmed",
        "bioptimus_hf.corpus.prepare_config:PrepareCorpusArguments",
        "bioptimus_hf.commands.table:prepare_corpus",
    ),
    "train-tokenizer": Command(
        "Train a vocabulary of the base's family, with a coverage report. The base tokenizer's own pipeline and "
        "trainer replace its vocabulary or extend it (--vocabulary_mode extend); coverage_report.json compares how "
        "the corpus splits. See docs/vocabulary_and_init.md.",
        "bioptimus train-tokenizer --train_files ../shared/data/corpus/pubmed_sentences.txt "
        "--base_tokenizer bert-base-uncased --vocab_size 30522 --output_dir out/biomed_tok",
        "bioptimus_hf.vocabulary.tokenizer_config:TokenizerTrainingArguments",
        "bioptimus_hf.vocabulary.run:train_and_report",
        errors=(BadInput,),
    ),
    "init-embeddings": Command(
        "Write a base model initialised for a new vocabulary. The new rows are set by --init_strategy, with "
        "init_report.json; the settings are bioptimus pretrain's, so this is the model it would build. See "
        "docs/vocabulary_and_init.md.",
        "bioptimus init-embeddings --model_name_or_path bert-base-uncased --tokenizer_name out/biomed_tok "
        "--init_corpus_files ../shared/data/corpus/pubmed_sentences.txt --output_dir out/init",
        "bioptimus_hf.vocabulary.init_config:StartModelArguments "
        "bioptimus_hf.pretraining.bioptimus_config:EmbeddingInitArguments",
        "bioptimus_hf.vocabulary.run:write_initialized_model",
    ),
    "pretrain": Command(
        "Continue masked-LM pre-training through the curriculum, a release per phase. The BIOptimus phases (tokens "
        "15% with 80/10/10, whole words 15%, 20%, then 20% all [MASK]) under one learning-rate schedule, each phase's"
        " end a release with its held-out loss and card. See docs/pretraining.md.",
        "bioptimus pretrain demo_minilm --model_name_or_path bert-base-uncased --max_steps 400",
        "bioptimus_hf.pretraining.bioptimus_config:PRETRAINING_ARGUMENT_TYPES",
        "bioptimus_hf.pretraining.run:run_pretraining",
        errors=(BadInput,),
        log="training",
    ),
    "publish": Command(
        "Publish a run's releases to the Hugging Face Hub. A branch and a tag per version (or a repository each, "
        "--mode repos) with its model card; publishing again uploads only what changed and never replaces a different"
        " model; --dry_run prints the plan. See docs/hub.md.",
        "bioptimus publish --run_dir outputs/demo_minilm --hub_model_id acme/bioptimus --dry_run",
        "bioptimus_hf.releases.publish_config:PublishArguments",
        "bioptimus_hf.commands.table:publish",
        log="run",
        line=True,
    ),
    "ner": Command(
        "Fine-tune and evaluate on a NER dataset over several seeds (BLURB). Windows instead of truncation, span-"
        "level F1 against the original spans, Tinn et al.'s stabilisation; all_results.json gives the mean and "
        "standard deviation. See docs/ner.md.",
        "bioptimus ner ner_blurb --model_name_or_path outputs/demo_minilm/releases/v0.4 "
        "--data_dir ../shared/data/ner/NCBI-disease-IOB --output_dir ner/v0.4/NCBI-disease --seeds 1 2 3",
        "bioptimus_hf.ner.fine_tuning_config:NER_ARGUMENT_TYPES",
        "bioptimus_hf.commands.table:ner",
        errors=(BadInput,),
        log="run",
    ),
    "tag": Command(
        "Tag entities in raw text with a fine-tuned NER model. One JSON line per input line in the shape of "
        "transformers' token-classification pipeline, written into <output_file>.partial until the last line. See "
        "docs/ner.md.",
        'bioptimus tag --model_name_or_path ner/v0.4/NCBI-disease/seed_1 --text "Mutations in BRCA1 cause cancer."',
        "bioptimus_hf.ner.tagger_config:TaggingArguments",
        "bioptimus_hf.ner.tagging_run:run_tagging",
        errors=(BadInput,),
    ),
    "compare": Command(
        "Fine-tune several models on several NER datasets, one table. Finished runs are kept, so it resumes; "
        "--list_jobs prints one bioptimus ner command per job, --results_only merges them; flags after -- go to every"
        " run. See docs/ner.md.",
        "bioptimus compare --ner_config ner_blurb --models v0.1=outputs/demo_minilm/releases/v0.1 "
        "v0.4=outputs/demo_minilm/releases/v0.4 --data_dirs ../shared/data/ner/NCBI-disease-IOB "
        "--output_dir ner_comparison -- --seeds 1 2 3",
        "bioptimus_hf.ner.compare_config:NerComparisonArguments",
        "bioptimus_hf.commands.table:compare",
        line=True,
    ),
    "blurb-task": Command(
        "Fine-tune and evaluate on one BLURB dataset beyond NER over several seeds. The task type is read from the "
        "data and its recipe applies unless a config or a flag sets a value. See docs/blurb.md.",
        "bioptimus blurb-task --model_name_or_path outputs/demo_minilm/releases/v0.4 "
        "--data_dir ../shared/data/blurb/GAD --output_dir blurb/v0.4/GAD --seeds 1 2 3",
        "bioptimus_hf.blurb.blurb_config:BLURB_ARGUMENT_TYPES",
        "bioptimus_hf.commands.table:blurb_task",
        log="run",
        build="bioptimus_hf.blurb.blurb_config:blurb_arguments",
    ),
    "blurb": Command(
        "The BLURB benchmark of one model: every dataset present, one table, the score. Each set fine-tuned over the "
        "seeds with its recipe, a finished seed never again; blurb_results.md gives each mean, each task type's "
        "average and the score. See docs/blurb.md.",
        "bioptimus blurb --model_name_or_path outputs/demo_minilm/releases/v0.4 --seeds 1 2 3 "
        "--blurb_dir ../shared/data/blurb --ner_dir ../shared/data/ner --output_dir blurb/v0.4",
        "bioptimus_hf.blurb.benchmark_config:BenchmarkArguments",
        "bioptimus_hf.blurb.benchmark:run_benchmark",
        errors=(*BAD_INPUT_ERRORS, JobsFailed),  # JobsFailed: a fine-tune failed in a worker, named in one line
        log="run",
    ),
    "blurb-compare": Command(
        "Compare the BLURB tables of several models, paired by seed. Per dataset, task type and BLURB score: the mean"
        " and standard deviation of the seed-by-seed differences from the first. See docs/blurb.md.",
        "bioptimus blurb-compare --runs v0.1=blurb/v0.1 v0.4=blurb/v0.4 --output_dir blurb/comparison",
        "bioptimus_hf.blurb.compare_config:BlurbCompareArguments",
        "bioptimus_hf.commands.table:blurb_compare",
    ),
    "distill": Command(
        "Distil a compact student from a release (DistilBioBERT, TinyBioBERT...). Rohanian et al.'s recipes through "
        "the curriculum of bioptimus pretrain; the student is a release in <output_dir>/student/. See "
        "docs/distillation.md.",
        "bioptimus distill --teacher_model_name_or_path outputs/demo_minilm/releases/v0.4 --student_layers 0 2 4 "
        "--train_file ../shared/data/corpus/pubmed_sentences.txt --output_dir outputs/student --max_steps 200",
        "bioptimus_hf.distillation.distillation_config:DISTILLATION_ARGUMENT_TYPES",
        "bioptimus_hf.distillation.run:run_distillation",
        errors=(BadInput,),
        log="training",
    ),
    "remove-layers": Command(
        "Write a model with its top layers removed, the cheap alternative to distillation. The kept layers, "
        "embeddings and heads copied bit for bit (Tinn et al., Table 7), with layer_removal.json. See "
        "docs/distillation.md.",
        "bioptimus remove-layers --model_name_or_path outputs/demo_minilm/releases/v0.4 --num_layers_to_remove 3 "
        "--output_dir out/v0.4-top3-removed",
        "bioptimus_hf.distillation.layer_removal_config:RemoveLayersArguments",
        "bioptimus_hf.distillation.layer_removal:remove_top_layers",
        errors=(ValueError, OSError),
    ),
    "task-difficulty": Command(
        "Measure a model's MLM loss under each curriculum phase's masking. The same corpus blocks under each phase "
        "(the paper's Figure 4), several models in one table and plot. See docs/study.md.",
        "bioptimus task-difficulty --model_name_or_path outputs/demo_minilm/releases/v0.4 "
        "--corpus_files ../shared/data/corpus/pubmed_abstracts.txt --output_file difficulty.json",
        "bioptimus_hf.analysis.task_difficulty_config:TaskDifficultyArguments "
        "bioptimus_hf.pretraining.bioptimus_config:CurriculumArguments",
        "bioptimus_hf.analysis.task_difficulty:run_task_difficulty",
    ),
    "study": Command(
        "Run the paper's study: arms under one token budget, NER of each, tables, figures. Run it again after an "
        "interruption and it resumes from the finished units. See docs/study.md.",
        "bioptimus study study_cpu --model_name_or_path sentence-transformers/all-MiniLM-L6-v2",
        "bioptimus_hf.study.study_config:StudyArguments",
        "bioptimus_hf.commands.table:study",
        errors=(BadInput,),
        log="run",
        line=True,
    ),
    "plot": Command(
        "Draw a finished run's figures again (its loss plot with the phases). From its trainer_state.json and its "
        "releases' records (training_loss.png). See docs/pretraining.md.",
        "bioptimus plot outputs/demo_minilm --output_dir figures",
        "bioptimus_hf.pretraining.run_figures_config:PlotArguments",
        "bioptimus_hf.commands.table:plot",
        positional="run_dir",
    ),
}


def prepare_corpus(args):
    """Prepare, print the counts; lost records end the command with status 1 unless ``--on_error skip``."""
    from ..corpus.prepare import lost_records_message, prepare_corpus

    manifest = prepare_corpus(args)
    print(json.dumps(manifest["counts"], indent=2), flush=True)
    lost = lost_records_message(manifest)
    if lost and args.on_error == "report":
        raise SystemExit(f"error: {lost}")
    return manifest


def publish(args, argv: list[str]):
    """Publish, one line per version; a failed Hub request ends with the command that resumes."""
    from ..releases.hub import publish_releases
    from ..utils.secrets import redact_argv

    resume = (
        "Nothing published is lost and publishing is idempotent: run this command again with the same token "
        "to upload only what is missing:\n  bioptimus publish " + shlex.join(redact_argv(argv, drop=True))
    )
    with exit_on_hub_error("the Hub request", resume), exit_on_bad_input(ValueError, FileNotFoundError, RuntimeError):
        reports = publish_releases(args)
    for report in reports:
        where = f"{report.repo_id} (branch {report.branch}, tag {report.tag})"
        print(
            f"v{report.version}: {report.status} -> {where}"
            + (f"; uploaded {report.uploaded}" if report.uploaded else "")
        )
    return reports


def ner(model_args, data_args, stab_args, training_args) -> dict:
    """Fine-tune every seed; ``--push_to_hub`` pushes the best seed's model once every rank is done."""
    from ..ner.hub_push import push_best_seed, take_ner_hub_settings
    from ..ner.run import fine_tune_ner, load_ner_run_data
    from ..utils.distributed import close_process_group

    with exit_on_bad_input():
        hub = take_ner_hub_settings(training_args, model_args.save_model)  # the Trainer never pushes
        data = load_ner_run_data(model_args, data_args)
    results = fine_tune_ner(model_args, data_args, stab_args, training_args, data)
    close_process_group()
    if hub is not None and training_args.process_index == 0:
        output_dir, name, base = training_args.output_dir, model_args.model_name_or_path, model_args.base_model_hub_id
        with exit_on_hub_error(f"--push_to_hub to {hub.repo_id}", f"the results and models are in {output_dir}"):
            push_best_seed(hub, output_dir, results, name, data_args.dataset_name, base_model_hub_id=base)
    return results


def blurb_task(model_args, data_args, stab_args, training_args) -> dict:
    """Fine-tune every seed; ``--push_to_hub`` pushes the seed of the best dev score once every rank is done."""
    from ..blurb.run import run_blurb_task
    from ..finetuning.results import seed_dir
    from ..releases.seed_push import best_seed, push_seed_folder, take_seed_hub_settings
    from ..utils.distributed import close_process_group

    hub = take_seed_hub_settings(training_args, model_args.save_model)  # the Trainer never pushes
    results = run_blurb_task(model_args, data_args, stab_args, training_args)
    close_process_group()
    if hub is not None and training_args.process_index == 0:
        output_dir, seed = training_args.output_dir, best_seed(results["per_seed"], "eval_score")
        message = f"{results['model_name']} on {results['dataset']}: seed {seed}, the best dev score"
        with exit_on_hub_error(f"--push_to_hub to {hub.repo_id}", f"the results and models are in {output_dir}"):
            push_seed_folder(hub, seed_dir(output_dir, seed), seed, message)
    return results


def compare(args, argv: list[str]) -> str | None:
    """Run (or list) the NER jobs, the flags after ``--`` given to each; returns the table (the job list with
    ``--list_jobs``, None with ``--job_index``)."""
    from ..ner.compare import compare_models, job_commands, shared_ner_arguments

    ner_flags = argv[argv.index("--") + 1 :] if "--" in argv else []
    if args.list_jobs:
        # each through the Python that listed them: the same installation runs every job
        print(listed := "\n".join(job_commands(args, [sys.executable, "-m", __package__, "ner"], ner_flags)))
        return listed
    with exit_on_bad_input():
        ner_arguments = None if args.results_only else shared_ner_arguments(args, ner_flags)
    level = ner_arguments[-1].get_process_log_level() if ner_arguments else logging.INFO
    logging.basicConfig(format=LOG_FORMAT, level=level)
    if (table := compare_models(args, ner_arguments)) is not None:
        print(table)
    return table


def blurb_compare(args) -> dict:
    from ..blurb.compare import compare_runs, parse_runs

    comparison = compare_runs(parse_runs(args.runs), args.output_dir)
    print(comparison["markdown"])
    return comparison


def study(args, argv: list[str]):
    """Run (or resume) the study, recording the command that reproduces it (``utils/public_paths.py``)."""
    from ..study.run import run_study
    from ..utils.public_paths import public_command

    return run_study(args, public_command(shlex.join(["bioptimus", "study", *argv])))


def plot(args) -> list[str]:
    from ..pretraining.run_figures import draw_run_figures

    written = [str(path) for path in draw_run_figures(args.run_dir, args.output_dir)]
    print("\n".join(written))
    return written
