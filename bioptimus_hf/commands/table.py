"""The commands of ``bioptimus`` in pipeline order (help, scripts, README and tests read this list), and the runs
of those that are more than one call of their wing."""

from __future__ import annotations

import sys
from dataclasses import dataclass

from ..utils.cli import exit_on_bad_input
from ..utils.errors import BAD_INPUT_ERRORS, BadInput
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
    summary = property(lambda self: self.description.split(". ")[0])  # `bioptimus --help`'s line


COMMANDS: dict[str, Command] = {
    "prepare-corpus": Command(
        "Turn NLM's PubMed XML files (baseline, updates) into a sharded corpus. See docs/pubmed.md.",
        "bioptimus prepare-corpus --input_files pubmed/pubmed25n0001.xml.gz --output_dir corpus/pubmed",
        "bioptimus_hf.corpus.prepare_config:PrepareCorpusArguments",
        "bioptimus_hf.corpus.prepare:run_prepare_corpus",
    ),
    "train-tokenizer": Command(
        "Train a vocabulary of the base's family, with a coverage report. See docs/vocabulary_and_init.md.",
        "bioptimus train-tokenizer --train_files ../shared/data/corpus/pubmed_sentences.txt "
        "--base_tokenizer bert-base-uncased --vocab_size 30522 --output_dir out/biomed_tok",
        "bioptimus_hf.vocabulary.tokenizer_config:TokenizerTrainingArguments",
        "bioptimus_hf.vocabulary.run:train_and_report",
        errors=(BadInput,),
    ),
    "init-embeddings": Command(
        "Write a base model initialised for a new vocabulary. See docs/vocabulary_and_init.md.",
        "bioptimus init-embeddings --model_name_or_path bert-base-uncased --tokenizer_name out/biomed_tok "
        "--init_corpus_files ../shared/data/corpus/pubmed_sentences.txt --output_dir out/init",
        "bioptimus_hf.vocabulary.init_config:StartModelArguments "
        "bioptimus_hf.pretraining.bioptimus_config:EmbeddingInitArguments",
        "bioptimus_hf.vocabulary.run:write_initialized_model",
    ),
    "pretrain": Command(
        "Continue masked-LM pre-training through the curriculum, a release per phase. See docs/pretraining.md.",
        "bioptimus pretrain demo_minilm --model_name_or_path bert-base-uncased --max_steps 400",
        "bioptimus_hf.pretraining.bioptimus_config:PRETRAINING_ARGUMENT_TYPES",
        "bioptimus_hf.pretraining.run:run_pretraining",
        errors=(BadInput,),
        log="training",
    ),
    "publish": Command(
        "Publish a run's releases to the Hugging Face Hub. Idempotent; --dry_run prints the plan. See docs/hub.md.",
        "bioptimus publish --run_dir outputs/demo_minilm --hub_model_id acme/bioptimus --dry_run",
        "bioptimus_hf.releases.publish_config:PublishArguments",
        "bioptimus_hf.releases.hub:publish_command",
        log="run",
        line=True,
    ),
    "ner": Command(
        "Fine-tune and evaluate on a NER dataset over several seeds (BLURB). Span-level F1. See docs/ner.md.",
        "bioptimus ner ner_blurb --model_name_or_path outputs/demo_minilm/releases/v0.4 "
        "--data_dir ../shared/data/ner/NCBI-disease-IOB --output_dir ner/v0.4/NCBI-disease --seeds 1 2 3",
        "bioptimus_hf.ner.fine_tuning_config:NER_ARGUMENT_TYPES",
        "bioptimus_hf.commands.table:ner",
        errors=(BadInput,),
        log="run",
    ),
    "tag": Command(
        "Tag entities in raw text with a fine-tuned NER model. One JSON line per input line. See docs/ner.md.",
        'bioptimus tag --model_name_or_path ner/v0.4/NCBI-disease/seed_1 --text "Mutations in BRCA1 cause cancer."',
        "bioptimus_hf.ner.tagger_config:TaggingArguments",
        "bioptimus_hf.ner.tagging_run:run_tagging",
        errors=(BadInput,),
    ),
    "compare": Command(
        "Fine-tune models on NER datasets into one table, a bioptimus ner per job (flags after --). See docs/ner.md.",
        "bioptimus compare --ner_config ner_blurb --models v0.1=outputs/demo_minilm/releases/v0.1 "
        "v0.4=outputs/demo_minilm/releases/v0.4 --data_dirs ../shared/data/ner/NCBI-disease-IOB "
        "--output_dir ner_comparison -- --seeds 1 2 3",
        "bioptimus_hf.ner.compare_config:NerComparisonArguments",
        "bioptimus_hf.commands.table:compare",
        log="run",
        line=True,
    ),
    "blurb-task": Command(
        "Fine-tune and evaluate on one BLURB dataset beyond NER over several seeds. See docs/blurb.md.",
        "bioptimus blurb-task --model_name_or_path outputs/demo_minilm/releases/v0.4 "
        "--data_dir ../shared/data/blurb/GAD --output_dir blurb/v0.4/GAD --seeds 1 2 3",
        "bioptimus_hf.blurb.blurb_config:BLURB_ARGUMENT_TYPES",
        "bioptimus_hf.commands.table:blurb_task",
        log="run",
        build="bioptimus_hf.blurb.blurb_config:blurb_arguments",
    ),
    "blurb": Command(
        "The BLURB benchmark of one model: every dataset present, one table, the score. See docs/blurb.md.",
        "bioptimus blurb --model_name_or_path outputs/demo_minilm/releases/v0.4 --seeds 1 2 3 "
        "--blurb_dir ../shared/data/blurb --ner_dir ../shared/data/ner --output_dir blurb/v0.4",
        "bioptimus_hf.blurb.benchmark_config:BenchmarkArguments",
        "bioptimus_hf.blurb.benchmark:run_benchmark",
        errors=(*BAD_INPUT_ERRORS, JobsFailed),  # JobsFailed: a fine-tune failed in a worker, named in one line
        log="run",
    ),
    "blurb-compare": Command(
        "Compare the BLURB tables of several models, paired by seed. See docs/blurb.md.",
        "bioptimus blurb-compare --runs v0.1=blurb/v0.1 v0.4=blurb/v0.4 --output_dir blurb/comparison",
        "bioptimus_hf.blurb.compare_config:BlurbCompareArguments",
        "bioptimus_hf.blurb.compare:compare_and_print",
    ),
    "distill": Command(
        "Distil a compact student from a release (DistilBioBERT, TinyBioBERT...). See docs/distillation.md.",
        "bioptimus distill --teacher_model_name_or_path outputs/demo_minilm/releases/v0.4 --student_layers 0 2 4 "
        "--train_file ../shared/data/corpus/pubmed_sentences.txt --output_dir outputs/student --max_steps 200",
        "bioptimus_hf.distillation.distillation_config:DISTILLATION_ARGUMENT_TYPES",
        "bioptimus_hf.distillation.run:run_distillation",
        errors=(BadInput,),
        log="training",
    ),
    "remove-layers": Command(
        "Write a model with its top layers removed, the cheap alternative to distillation. See docs/distillation.md.",
        "bioptimus remove-layers --model_name_or_path outputs/demo_minilm/releases/v0.4 --num_layers_to_remove 3 "
        "--output_dir out/v0.4-top3-removed",
        "bioptimus_hf.distillation.layer_removal_config:RemoveLayersArguments",
        "bioptimus_hf.distillation.layer_removal:remove_top_layers",
        errors=(ValueError, OSError),
    ),
    "task-difficulty": Command(
        "Measure a model's MLM loss under each curriculum phase's masking. See docs/study.md.",
        "bioptimus task-difficulty --model_name_or_path outputs/demo_minilm/releases/v0.4 "
        "--corpus_files ../shared/data/corpus/pubmed_abstracts.txt --output_file difficulty.json",
        "bioptimus_hf.analysis.task_difficulty_config:TaskDifficultyArguments "
        "bioptimus_hf.pretraining.bioptimus_config:CurriculumArguments",
        "bioptimus_hf.analysis.task_difficulty:run_task_difficulty",
    ),
    "study": Command(
        "Run the paper's study: arms under one token budget, NER of each, tables, figures. See docs/study.md.",
        "bioptimus study study_cpu --model_name_or_path sentence-transformers/all-MiniLM-L6-v2",
        "bioptimus_hf.study.study_config:StudyArguments",
        "bioptimus_hf.study.run:run_study_command",
        errors=(BadInput,),
        log="run",
        line=True,
    ),
    "plot": Command(
        "Draw a finished run's figures again (its loss plot with the phases). See docs/pretraining.md.",
        "bioptimus plot outputs/demo_minilm --output_dir figures",
        "bioptimus_hf.pretraining.run_figures_config:PlotArguments",
        "bioptimus_hf.pretraining.run_figures:plot_run",
        positional="run_dir",
    ),
}


def ner(model_args, data_args, stab_args, training_args) -> dict:
    """Fine-tune every seed; ``--push_to_hub`` pushes the best seed's model once every rank is done."""
    from ..ner.hub_push import push_best_seed, take_ner_hub_settings
    from ..ner.run import fine_tune_ner, load_ner_run_data

    with exit_on_bad_input():
        hub = take_ner_hub_settings(training_args, model_args.save_model)  # the Trainer never pushes
        data = load_ner_run_data(model_args, data_args)
    results = fine_tune_ner(model_args, data_args, stab_args, training_args, data)
    if pushes(hub, training_args):
        name, base = model_args.model_name_or_path, model_args.base_model_hub_id
        push_best_seed(hub, training_args.output_dir, results, name, data_args.dataset_name, base_model_hub_id=base)
    return results


def blurb_task(model_args, data_args, stab_args, training_args) -> dict:
    """Fine-tune every seed; ``--push_to_hub`` pushes the seed of the best dev score."""
    from ..blurb.run import run_blurb_task
    from ..finetuning.results import seed_dir
    from ..releases.seed_push import best_seed, push_seed_folder, take_seed_hub_settings

    hub = take_seed_hub_settings(training_args, model_args.save_model)  # the Trainer never pushes
    results = run_blurb_task(model_args, data_args, stab_args, training_args)
    if pushes(hub, training_args):
        seed = best_seed(results["per_seed"], "eval_score")
        message = f"{results['model_name']} on {results['dataset']}: seed {seed}, the best dev score"
        push_seed_folder(hub, seed_dir(training_args.output_dir, seed), seed, message)
    return results


def pushes(hub, training_args) -> bool:
    """Whether this process pushes (``--push_to_hub``, the main process), once every rank is done."""
    from ..utils.distributed import close_process_group

    close_process_group()
    return hub is not None and training_args.process_index == 0


def compare(args, argv: list[str]) -> str | None:
    """Each job through the Python that listed it (``--list_jobs``): the same installation runs every job."""
    from ..ner.compare import run_comparison

    return run_comparison(args, argv, [sys.executable, "-m", __package__, "ner"])
