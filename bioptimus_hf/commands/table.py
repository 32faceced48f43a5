"""The commands of ``bioptimus``, in pipeline order: the one list (help, dispatch, scripts, README, tests)."""

from __future__ import annotations

from dataclasses import dataclass

from ..utils.cli import BadInput


@dataclass(frozen=True)
class Command:
    summary: str  # the one line of `bioptimus --help`
    description: str  # the paragraph heading `bioptimus <command> --help` (plain text)
    example: str  # a runnable command line, shown under it
    arguments: str | tuple[str, ...]  # "module:NAME" of the argument dataclasses (or a tuple of them) it parses
    run: str  # "module:function" called with the parsed dataclasses; imported only to run, not for --help
    errors: tuple[
        type[BaseException], ...
    ] = ()  # what the run raises for bad input (default: ValueError, FileNotFoundError)
    log: str | None = None  # "run" or "training": how the command logs (commands.configure_logging)
    build: str | None = None  # "module:function" building the dataclasses from what the line sets
    positional: str | None = None  # the flag a first value that is no config file is (plot's RUN_DIR)
    line: bool = False  # the run gets the command line too, the parser only what comes before a `--`
    script: str | None = None  # the same command as a script in the repository (for torchrun), if any


COMMANDS: dict[str, Command] = {
    "prepare-corpus": Command(
        "NLM's PubMed XML files (baseline, updates) to a sharded corpus",
        "Turn NLM's PubMed baseline and update files (pubmed<yy>n<NNNN>.xml.gz) into the corpus every stage reads: "
        "one record per citation (title then abstract as text), files applied in name order so later versions "
        "replace earlier ones and DeleteCitation removes them, filters, Parquet shards and manifest.json with counts "
        "that reconcile and checksums. A rerun skips finished shards. See docs/pubmed.md.",
        "bioptimus prepare-corpus --input_files pubmed/pubmed25n0001.xml.gz pubmed/pubmed25n0002.xml.gz "
        "--output_dir corpus/pubmed",
        "bioptimus_hf.corpus.prepare_config:PrepareCorpusArguments",
        "bioptimus_hf.commands.runs:prepare_corpus",
    ),
    "train-tokenizer": Command(
        "train a vocabulary of the base's family, with a coverage report",
        "Train a vocabulary on a corpus with the base tokenizer's own pipeline and trainer (WordPiece, byte-level "
        "BPE or SentencePiece), in place of the base's vocabulary or appended to it (--vocabulary_mode extend). "
        "Writes the tokenizer and coverage_report.json: how the corpus splits under the old and the new "
        "vocabulary. See docs/vocabulary_and_init.md.",
        "bioptimus train-tokenizer --train_files ../shared/data/corpus/pubmed_sentences.txt "
        "--base_tokenizer bert-base-uncased --vocab_size 30522 --output_dir out/biomed_tok",
        "bioptimus_hf.vocabulary.tokenizer_config:TokenizerTrainingArguments",
        "bioptimus_hf.vocabulary.run:train_and_report",
        errors=(BadInput,),
    ),
    "init-embeddings": Command(
        "write a base model initialised for a new vocabulary",
        "Write a base masked LM resized to a new vocabulary, the new tokens' rows set by --init_strategy "
        "(contextualized: the base's last-layer states of a token's pieces over up to 20 corpus sentences found "
        "by qik-find), with init_report.json. The settings and defaults are bioptimus pretrain's, so the "
        "checkpoint is the model pretrain would build. See docs/vocabulary_and_init.md.",
        "bioptimus init-embeddings --model_name_or_path bert-base-uncased --tokenizer_name out/biomed_tok "
        "--init_strategy contextualized --init_corpus_files ../shared/data/corpus/pubmed_sentences.txt "
        "--output_dir out/init",
        (
            "bioptimus_hf.vocabulary.init_config:StartModelArguments",
            "bioptimus_hf.vocabulary.init_config:EmbeddingInitArguments",
        ),
        "bioptimus_hf.vocabulary.run:write_initialized_model",
    ),
    "pretrain": Command(
        "continued masked-LM pre-training through the curriculum, a release per phase",
        "Continue masked-LM pre-training through the BIOptimus curriculum (tokens 15% with 80/10/10, whole words "
        "15%, 20%, then 20% all [MASK]) in one run under one decaying learning rate. Each phase's end writes "
        "<output_dir>/releases/v0.<k>/: the model, its tokenizer, bioptimus_phase.json with the held-out MLM loss, "
        "and a model card. Modelled on transformers' run_mlm.py; see docs/pretraining.md.",
        "bioptimus pretrain demo_minilm --model_name_or_path bert-base-uncased --max_steps 400",
        "bioptimus_hf.pretraining.bioptimus_config:PRETRAINING_ARGUMENT_TYPES",
        "bioptimus_hf.pretraining.run:run_pretraining",
        errors=(BadInput,),
        log="training",
        script="run_pretraining.py",
    ),
    "publish": Command(
        "publish a run's releases to the Hugging Face Hub",
        "Publish a run's curriculum releases to the Hugging Face Hub: one repository with a branch and a tag per "
        "version (or one repository per version with --mode repos), each with its model card. Publishing again "
        "uploads only what changed and refuses to replace a different model under the same version; --dry_run "
        "prints the plan without touching the network. See docs/hub.md.",
        "bioptimus publish --run_dir outputs/demo_minilm --hub_model_id acme/bioptimus --dry_run",
        "bioptimus_hf.releases.publish_config:PublishArguments",
        "bioptimus_hf.commands.runs:publish",
        log="run",
        line=True,
    ),
    "ner": Command(
        "fine-tune and evaluate on a NER dataset over several seeds (BLURB)",
        "Fine-tune and evaluate an encoder on a biomedical NER dataset (a folder of CoNLL train/devel/test.tsv, or a "
        "datasets Hub id or folder) over several seeds: windows instead of truncation, span-level F1 against the "
        "original gold spans, Tinn et al.'s stabilisation flags; all_results.json and results.md give the mean and "
        "standard deviation over the seeds. Modelled on transformers' run_ner.py; see docs/ner.md.",
        "bioptimus ner ner_blurb --model_name_or_path outputs/demo_minilm/releases/v0.4 "
        "--data_dir ../shared/data/ner/NCBI-disease-IOB --output_dir ner/v0.4/NCBI-disease --seeds 1 2 3",
        "bioptimus_hf.ner.fine_tuning_config:NER_ARGUMENT_TYPES",
        "bioptimus_hf.commands.runs:ner",
        errors=(BadInput,),
        log="run",
        script="run_ner.py",
    ),
    "tag": Command(
        "tag entities in raw text with a fine-tuned NER model",
        "Tag entities in raw text with a model fine-tuned by bioptimus ner: one JSON line per input line, each "
        "entity as transformers' token-classification pipeline gives it (entity_group, score, word, start, end). "
        "A file is read lazily and written as it is tagged, into <output_file>.partial until the last line is "
        "done. See docs/ner.md.",
        'bioptimus tag --model_name_or_path ner/v0.4/NCBI-disease/seed_1 --text "Mutations in BRCA1 cause breast '
        'cancer."',
        "bioptimus_hf.ner.tagger_config:TaggingArguments",
        "bioptimus_hf.ner.tagging_run:run_tagging",
        errors=(BadInput,),
    ),
    "compare": Command(
        "fine-tune several models on several NER datasets, one table",
        "Fine-tune several models on several NER datasets with bioptimus ner and write one table of them (the "
        "paper's Table 5). Finished runs are not repeated, so an interrupted comparison resumes; --list_jobs prints "
        "one bioptimus ner command per model, dataset and seed for parallel runs, and --results_only merges them. "
        "Flags after -- go to every bioptimus ner run. See docs/ner.md.",
        "bioptimus compare --ner_config ner_blurb --models v0.1=outputs/demo_minilm/releases/v0.1 "
        "v0.4=outputs/demo_minilm/releases/v0.4 --data_dirs ../shared/data/ner/NCBI-disease-IOB "
        "--output_dir ner_comparison -- --seeds 1 2 3",
        "bioptimus_hf.ner.compare_config:NerComparisonArguments",
        "bioptimus_hf.commands.runs:compare",
        line=True,
    ),
    "blurb-task": Command(
        "fine-tune and evaluate on one BLURB dataset beyond NER over several seeds",
        "Fine-tune and evaluate an encoder on one BLURB dataset beyond NER over several seeds: relation extraction "
        "(ChemProt, DDI, GAD), sentence similarity (BIOSSES), document classification (HoC) or question answering "
        "(PubMedQA, BioASQ). The task type is read from the data, and its recipe applies unless a config file or a "
        "flag sets a value. Modelled on transformers' run_glue.py; see docs/blurb.md.",
        "bioptimus blurb-task --model_name_or_path outputs/demo_minilm/releases/v0.4 "
        "--data_dir ../shared/data/blurb/GAD --output_dir blurb/v0.4/GAD --seeds 1 2 3",
        "bioptimus_hf.blurb.blurb_config:BLURB_ARGUMENT_TYPES",
        "bioptimus_hf.commands.runs:blurb_task",
        log="run",
        build="bioptimus_hf.blurb.blurb_config:blurb_arguments",
        script="run_blurb.py",
    ),
    "blurb": Command(
        "the BLURB benchmark of one model: every dataset present, one table, the score",
        "The BLURB benchmark of one model in one command: every dataset present under --blurb_dir and --ner_dir is "
        "fine-tuned over the seeds with its recipe (NER with --ner_config, by default the packaged ner_blurb), a "
        "finished seed is never trained again, and blurb_results.md and .json give each dataset's mean and "
        "standard deviation, each task type's average and the BLURB score. See docs/blurb.md.",
        "bioptimus blurb --model_name_or_path outputs/demo_minilm/releases/v0.4 --seeds 1 2 3 "
        "--blurb_dir ../shared/data/blurb --ner_dir ../shared/data/ner --output_dir blurb/v0.4",
        "bioptimus_hf.blurb.benchmark_config:BenchmarkArguments",
        "bioptimus_hf.commands.runs:blurb",
        log="run",
    ),
    "blurb-compare": Command(
        "compare BLURB tables of several models, paired by seed",
        "Compare the BLURB tables of several models (bioptimus blurb output folders), the first one the reference: "
        "per dataset, per task type and for the BLURB score, the mean and standard deviation of the differences "
        "seed by seed. See docs/blurb.md.",
        "bioptimus blurb-compare --runs v0.1=blurb/v0.1 v0.4=blurb/v0.4 --output_dir blurb/comparison",
        "bioptimus_hf.blurb.compare_config:BlurbCompareArguments",
        "bioptimus_hf.commands.runs:blurb_compare",
    ),
    "distill": Command(
        "distil a compact student from a release (DistilBioBERT, TinyBioBERT...)",
        "Distil a compact student from a BIOptimus release (or any BERT masked LM) with Rohanian et al.'s recipes "
        "(DistilBioBERT, CompactBioBERT, TinyBioBERT), on the corpus and through the curriculum of bioptimus "
        "pretrain. The student is written to <output_dir>/student/ as a release, with its distillation record and "
        "model card, and can be published with bioptimus publish. See docs/distillation.md.",
        "bioptimus distill --teacher_model_name_or_path outputs/demo_minilm/releases/v0.4 --student_layers 0 2 4 "
        "--train_file ../shared/data/corpus/pubmed_sentences.txt --output_dir outputs/student --max_steps 200",
        "bioptimus_hf.distillation.distillation_config:DISTILLATION_ARGUMENT_TYPES",
        "bioptimus_hf.distillation.run:run_distillation",
        errors=(BadInput,),
        log="training",
        script="run_distillation.py",
    ),
    "remove-layers": Command(
        "a model with its top layers removed",
        "Write a model with its top layers removed (Tinn et al., Table 7), the cheap alternative to distillation: "
        "the embeddings, the kept layers and the heads are copied bit for bit, the result loads with "
        "from_pretrained and is fine-tuned directly; layer_removal.json records what was kept. See "
        "docs/distillation.md.",
        "bioptimus remove-layers --model_name_or_path outputs/demo_minilm/releases/v0.4 --num_layers_to_remove 3 "
        "--output_dir out/v0.4-top3-removed",
        "bioptimus_hf.distillation.layer_removal_config:RemoveLayersArguments",
        "bioptimus_hf.distillation.layer_removal:remove_top_layers",
        errors=(ValueError, OSError),
    ),
    "task-difficulty": Command(
        "a model's MLM loss under each curriculum phase's masking",
        "A masked LM's loss and perplexity under each curriculum phase's masking, on the same corpus blocks (the "
        "paper's Figure 4), to order a curriculum's phases by difficulty. Several models, each with its own "
        "tokenizer, share one table and one plot; use text the models were not trained on. See docs/study.md.",
        "bioptimus task-difficulty --model_name_or_path outputs/demo_minilm/releases/v0.1 "
        "outputs/demo_minilm/releases/v0.4 --corpus_files ../shared/data/corpus/pubmed_abstracts.txt "
        "--output_file difficulty.json",
        (
            "bioptimus_hf.analysis.task_difficulty_config:TaskDifficultyArguments",
            "bioptimus_hf.pretraining.curriculum_config:CurriculumArguments",
        ),
        "bioptimus_hf.commands.runs:task_difficulty",
    ),
    "study": Command(
        "the paper's study: arms under one token budget, NER of each, tables, figures",
        "The paper's study as one command: pre-training arms (initialisations, with or without the curriculum) under "
        "one token budget, NER of each arm and of the base model, task difficulty and representation analysis, then "
        "results.md (the paper's tables) and figures. Run it again after an interruption: finished units are "
        "skipped and an interrupted arm resumes. See docs/study.md.",
        "bioptimus study study_cpu --model_name_or_path sentence-transformers/all-MiniLM-L6-v2",
        "bioptimus_hf.study.study_config:StudyArguments",
        "bioptimus_hf.commands.runs:study",
        errors=(BadInput,),
        log="run",
        line=True,
        script="run_study.py",
    ),
    "plot": Command(
        "draw a finished run's figures again (its loss plot with the phases)",
        "Draw a finished pre-training run's figures again from its trainer_state.json and its releases' records: "
        "training and held-out loss per step, the learning rate and where each curriculum phase ends, the picture "
        "every release holds (training_loss.png). A study's figures are drawn again by bioptimus study CONFIG "
        "--report_only true. See docs/pretraining.md.",
        "bioptimus plot outputs/demo_minilm --output_dir figures",
        "bioptimus_hf.pretraining.run_figures_config:PlotArguments",
        "bioptimus_hf.commands.runs:plot",
        positional="run_dir",
    ),
}
