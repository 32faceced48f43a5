"""``bioptimus``: one command for every stage, like ``trl`` and ``hf``.

    bioptimus pretrain demo_minilm --max_steps 400        # a packaged config, by name, with overrides
    bioptimus ner my_ner.yaml --model_name_or_path outputs/demo_minilm/releases/v0.4
    bioptimus --help                                      # the commands, one line each
    bioptimus pretrain --help                             # a command's description, example and flags

``bioptimus <command> ARGS`` is ``main(ARGS)`` of the command's module under :mod:`bioptimus_hf.commands`; so is
the console script ``bioptimus-<command> ARGS`` (every one points here and is told apart by its name), the
command's script where it has one (``python run_pretraining.py ARGS``), and ``python -m bioptimus_hf.commands
<command> ARGS`` without installing. Ctrl-C (or SIGTERM) ends every one of them with one line, ``interrupted``, and
exit status 130 (143), from the first import on. This module imports neither torch nor transformers:
``bioptimus --help`` answers at once.
"""

from __future__ import annotations

import difflib
import importlib
import os
import sys
import textwrap
from dataclasses import dataclass

from ..utils.cli import USAGE_ERROR_STATUS, exit_on_interrupt, exit_on_usage_error


@dataclass(frozen=True)
class Command:
    module: str  # under bioptimus_hf.commands, with a main(argv) that parses ARGS
    summary: str  # the one line of ``bioptimus --help``
    description: str = ""  # the paragraph heading ``bioptimus <command> --help`` (plain text, no markup)
    example: str = ""  # a runnable command line, shown under it
    script: str | None = None  # the same command as a script in the repository (for torchrun), if any


# In pipeline order: the one list of commands (help, dispatch, console scripts, README, tests).
COMMANDS: dict[str, Command] = {
    "prepare-corpus": Command(
        "prepare_corpus",
        "NLM's PubMed XML files (baseline, updates) to a sharded corpus",
        "Turn NLM's PubMed baseline and update files (pubmed<yy>n<NNNN>.xml.gz) into a corpus every stage reads: "
        "one record per citation (pmid, version, title then abstract as text, language, year), files applied in "
        "name order so later versions replace earlier ones and DeleteCitation removes them, filters, Parquet shards "
        "and manifest.json with counts that reconcile and checksums. A rerun skips finished shards. See "
        "docs/pubmed.md.",
        "bioptimus prepare-corpus --input_files pubmed/pubmed25n0001.xml.gz pubmed/pubmed25n0002.xml.gz "
        "--output_dir corpus/pubmed",
    ),
    "train-tokenizer": Command(
        "train_tokenizer",
        "train a vocabulary of the base's family, with a coverage report",
        "Train a vocabulary on a corpus with the base tokenizer's own pipeline and trainer (WordPiece, byte-level "
        "BPE or SentencePiece Unigram/BPE, as the base is), in place of the base's vocabulary or appended to it "
        "(--vocabulary_mode extend). Writes the tokenizer and coverage_report.json: how the corpus splits under "
        "the old and the new vocabulary. See docs/vocabulary_and_init.md.",
        "bioptimus train-tokenizer --train_files ../shared/data/corpus/pubmed_sentences.txt "
        "--base_tokenizer bert-base-uncased --vocab_size 30522 --output_dir out/biomed_tok",
    ),
    "init-embeddings": Command(
        "init_embeddings",
        "write a base model initialised for a new vocabulary",
        "Write a base masked LM resized to a new vocabulary, the new tokens' rows set by --init_strategy "
        "(contextualized: the base's last-layer states of a token's pieces, averaged over up to 20 corpus "
        "sentences found by qik-find), with init_report.json. The settings and defaults are bioptimus pretrain's, "
        "so the checkpoint is the model pretrain would build. See docs/vocabulary_and_init.md.",
        "bioptimus init-embeddings --model_name_or_path bert-base-uncased --tokenizer_name out/biomed_tok "
        "--init_strategy contextualized --init_corpus_files ../shared/data/corpus/pubmed_sentences.txt "
        "--output_dir out/init",
    ),
    "pretrain": Command(
        "pretrain",
        "continued masked-LM pre-training through the curriculum, a release per phase",
        "Continue masked-LM pre-training through the BIOptimus curriculum (tokens 15% with 80/10/10, whole words "
        "15%, 20%, then 20% all [MASK]) in one run under one decaying learning rate. Each phase's end writes "
        "<output_dir>/releases/v0.<k>/: the model, its tokenizer, bioptimus_phase.json with the held-out MLM loss, "
        "and a model card. Modelled on transformers' run_mlm.py; see docs/pretraining.md.",
        "bioptimus pretrain demo_minilm --model_name_or_path bert-base-uncased --max_steps 400",
        script="run_pretraining.py",
    ),
    "publish": Command(
        "publish",
        "publish a run's releases to the Hugging Face Hub",
        "Publish a run's curriculum releases to the Hugging Face Hub: one repository with a branch and a tag per "
        "version (or one repository per version with --mode repos), each with its model card. Publishing again "
        "uploads only what changed and refuses to replace a different model under the same version; --dry_run "
        "prints the plan without touching the network. See docs/hub.md.",
        "bioptimus publish --run_dir outputs/demo_minilm --hub_model_id acme/bioptimus --dry_run",
    ),
    "ner": Command(
        "ner",
        "fine-tune and evaluate on a NER dataset over several seeds (BLURB)",
        "Fine-tune and evaluate an encoder on a biomedical NER dataset (a folder of CoNLL train/devel/test.tsv, or a "
        "datasets Hub id or folder) over several seeds: windows instead of truncation, span-level F1 against the "
        "original gold spans, Tinn et al.'s stabilisation flags. all_results.json and results.md give the mean and "
        "standard deviation over the seeds. Modelled on transformers' run_ner.py; see docs/ner.md.",
        "bioptimus ner ner_blurb --model_name_or_path outputs/demo_minilm/releases/v0.4 "
        "--data_dir ../shared/data/ner/NCBI-disease-IOB --output_dir ner/v0.4/NCBI-disease --seeds 1 2 3",
        script="run_ner.py",
    ),
    "tag": Command(
        "tag_entities",
        "tag entities in raw text with a fine-tuned NER model",
        "Tag entities in raw text with a model fine-tuned by bioptimus ner: one JSON line per input line, each "
        "entity as transformers' token-classification pipeline gives it (entity_group, score, word, start, end). "
        "A file is read lazily and written as it is tagged, into <output_file>.partial until the last line is "
        "done. See docs/ner.md.",
        'bioptimus tag --model_name_or_path ner/v0.4/NCBI-disease/seed_1 --text "Mutations in BRCA1 cause breast '
        'cancer."',
    ),
    "compare": Command(
        "compare_ner",
        "fine-tune several models on several NER datasets, one table",
        "Fine-tune several models on several NER datasets with bioptimus ner and write one table of them (the "
        "paper's Table 5). Runs already finished are not repeated, so an interrupted comparison resumes; "
        "--list_jobs prints one bioptimus ner command per model, dataset and seed for parallel runs, and "
        "--results_only merges them. Flags after -- go to every bioptimus ner run. See docs/ner.md.",
        "bioptimus compare --ner_config ner_blurb --models v0.1=outputs/demo_minilm/releases/v0.1 "
        "v0.4=outputs/demo_minilm/releases/v0.4 --data_dirs ../shared/data/ner/NCBI-disease-IOB "
        "--output_dir ner_comparison -- --seeds 1 2 3",
    ),
    "blurb-task": Command(
        "blurb_task",
        "fine-tune and evaluate on one BLURB dataset beyond NER over several seeds",
        "Fine-tune and evaluate an encoder on one BLURB dataset beyond NER over several seeds: relation extraction "
        "(ChemProt, DDI, GAD), sentence similarity (BIOSSES), document classification (HoC) or question answering "
        "(PubMedQA, BioASQ). The task type is read from the data, and its default recipe applies unless a config "
        "file or a flag sets a value. Modelled on transformers' run_glue.py; see docs/blurb.md.",
        "bioptimus blurb-task --model_name_or_path outputs/demo_minilm/releases/v0.4 "
        "--data_dir ../shared/data/blurb/GAD --output_dir blurb/v0.4/GAD --seeds 1 2 3",
        script="run_blurb.py",
    ),
    "blurb": Command(
        "blurb",
        "the BLURB benchmark of one model: every dataset present, one table, the score",
        "The BLURB benchmark of one model in one command: every dataset present under --blurb_dir and --ner_dir is "
        "fine-tuned over the seeds, each with its recipe (NER with --ner_config, by default the packaged ner_blurb; "
        "a set of BLURB's with its own recipe over it), a finished seed is never trained again, and blurb_results.md and .json give each "
        "dataset's mean and standard deviation, each task type's average and the BLURB score. See docs/blurb.md.",
        "bioptimus blurb --model_name_or_path outputs/demo_minilm/releases/v0.4 --seeds 1 2 3 "
        "--blurb_dir ../shared/data/blurb --ner_dir ../shared/data/ner --output_dir blurb/v0.4",
    ),
    "blurb-compare": Command(
        "compare_blurb",
        "compare BLURB tables of several models, paired by seed",
        "Compare the BLURB tables of several models (bioptimus blurb output folders), the first one the reference: "
        "per dataset, per task type and for the BLURB score, the mean and standard deviation of the differences "
        "seed by seed. See docs/blurb.md.",
        "bioptimus blurb-compare --runs v0.1=blurb/v0.1 v0.4=blurb/v0.4 --output_dir blurb/comparison",
    ),
    "distill": Command(
        "distill",
        "distil a compact student from a release (DistilBioBERT, TinyBioBERT...)",
        "Distil a compact student from a BIOptimus release (or any BERT masked LM) with Rohanian et al.'s recipes "
        "(DistilBioBERT, CompactBioBERT, TinyBioBERT), on the corpus and through the curriculum of bioptimus "
        "pretrain. The student is written to <output_dir>/student/ as a release, with its distillation record and "
        "model card, and can be published with bioptimus publish. See docs/distillation.md.",
        "bioptimus distill --teacher_model_name_or_path outputs/demo_minilm/releases/v0.4 --student_layers 0 2 4 "
        "--train_file ../shared/data/corpus/pubmed_sentences.txt --output_dir outputs/student --max_steps 200",
        script="run_distillation.py",
    ),
    "remove-layers": Command(
        "remove_layers",
        "a model with its top layers removed",
        "Write a model with its top layers removed (Tinn et al., Table 7), the cheap alternative to distillation: "
        "the embeddings, the kept layers and the heads are copied bit for bit, the result loads with from_pretrained "
        "and is fine-tuned directly; layer_removal.json records what was kept. See docs/distillation.md.",
        "bioptimus remove-layers --model_name_or_path outputs/demo_minilm/releases/v0.4 --num_layers_to_remove 3 "
        "--output_dir out/v0.4-top3-removed",
    ),
    "task-difficulty": Command(
        "task_difficulty",
        "a model's MLM loss under each curriculum phase's masking",
        "A masked LM's loss and perplexity under each curriculum phase's masking, on the same corpus blocks (the "
        "paper's Figure 4), to order a curriculum's phases by difficulty. Several models, each with its own "
        "tokenizer, share one table and one plot; use text the models were not trained on. See docs/study.md.",
        "bioptimus task-difficulty --model_name_or_path outputs/demo_minilm/releases/v0.1 "
        "outputs/demo_minilm/releases/v0.4 --corpus_files ../shared/data/corpus/pubmed_abstracts.txt "
        "--output_file difficulty.json",
    ),
    "study": Command(
        "study",
        "the paper's study: arms under one token budget, NER of each, tables, figures",
        "The paper's study as one command: pre-training arms (initialisations, with or without the curriculum) under "
        "one token budget, NER of each arm and of the base model, task difficulty and representation analysis, then "
        "results.md (the paper's tables) and figures. Run it again after an interruption: finished units are "
        "skipped and an interrupted arm resumes. See docs/study.md.",
        "bioptimus study study_cpu --model_name_or_path sentence-transformers/all-MiniLM-L6-v2",
        script="run_study.py",
    ),
    "plot": Command(
        "plot",
        "draw a finished run's figures again (its loss plot with the phases)",
        "Draw a finished pre-training run's figures again from its trainer_state.json and its releases' records: "
        "training and held-out loss per step, the learning rate and where each curriculum phase ends, the picture "
        "the release writer puts in every release (training_loss.png). A study's figures are drawn again by "
        "bioptimus study CONFIG --report_only true. See docs/pretraining.md.",
        "bioptimus plot outputs/demo_minilm --output_dir figures",
    ),
}

# Console scripts kept under their former names; they run their command after a deprecation line.
DEPRECATED_SCRIPTS: dict[str, str] = {"bioptimus-ner-tag": "tag", "bioptimus-ner-compare": "compare"}


def console_script(name: str) -> str:
    """The console script of command ``name``."""
    return f"bioptimus-{name}"


def command_for_program(program: str) -> str | None:
    """The command a program name runs (``bioptimus ner``, ``bioptimus-ner``, ``run_ner.py``, a path to one), or
    None for another program (``bioptimus`` itself, a test runner)."""
    name = os.path.basename(program)
    if name.startswith("bioptimus ") and name.split(" ", 1)[1] in COMMANDS:
        return name.split(" ", 1)[1]
    if name.startswith("bioptimus-"):
        name = DEPRECATED_SCRIPTS.get(name, name.removeprefix("bioptimus-"))
        return name if name in COMMANDS else None
    return next((command for command, entry in COMMANDS.items() if entry.script and entry.script == name), None)


def usage() -> str:
    from ..utils.config_files import packaged_config_names

    width = max(map(len, COMMANDS))
    lines = ["usage: bioptimus <command> [config.yaml] [--flag value ...]", "", "commands:"]
    lines += [f"  {name:<{width}}  {command.summary}" for name, command in COMMANDS.items()]
    lines += [
        "",
        "bioptimus <command> --help describes a command, with an example and its flags. Each command is also the",
        "console script bioptimus-<command>. The config is a json/yaml file of flags, or a packaged config's name:",
        textwrap.fill(", ".join(packaged_config_names()), 110, initial_indent="  ", subsequent_indent="  "),
    ]
    return "\n".join(lines)


def run(name: str, args: list[str], program: str | None = None) -> None:
    """Run command ``name`` on ``args``; its usage and errors name ``program`` (default ``bioptimus <name>``)."""
    command = COMMANDS.get(name)
    if command is None:
        nearest = difflib.get_close_matches(name, COMMANDS, n=1)
        hint = f"did you mean {nearest[0]}?" if nearest else "bioptimus --help lists them"
        exit_on_usage_error(f"unknown command {name!r}; {hint} (the commands: {', '.join(COMMANDS)})")
    saved = sys.argv[0]
    sys.argv[0] = program or f"bioptimus {name}"  # argparse names the program after argv[0]
    try:
        with exit_on_interrupt():  # the import too: torch and transformers take seconds to load
            importlib.import_module(f"{__package__}.{command.module}").main(args)
    finally:
        sys.argv[0] = saved


def run_module(module: str) -> None:
    """``python -m bioptimus_hf.commands.<module> ARGS``: the command that module holds, through :func:`run` (so that
    Ctrl-C ends it in one line, as under ``bioptimus``)."""
    short = module.rsplit(".", 1)[-1]
    name = next(name for name, command in COMMANDS.items() if command.module == short)
    run(name, sys.argv[1:])


def main(argv: list[str] | None = None) -> None:
    """``bioptimus <command> ARGS``, ``bioptimus-<command> ARGS`` or ``python run_<command>.py ARGS`` (returns None
    so that the exit status is 0)."""
    program = os.path.basename(sys.argv[0])
    args = list(sys.argv[1:] if argv is None else argv)
    script = command_for_program(program) if argv is None and program.endswith(".py") else None
    if script is not None:  # a command's script (run_ner.py): its name says the command
        return run(script, args, program)
    if argv is None and program.startswith("bioptimus-"):  # a console script: its name says the command
        name = DEPRECATED_SCRIPTS.get(program, program.removeprefix("bioptimus-"))
        if program in DEPRECATED_SCRIPTS:
            print(f"warning: {program} is deprecated: use {console_script(name)} or bioptimus {name}", file=sys.stderr)
        return run(name, args, program)
    if not args or args[0] in ("-h", "--help"):
        print(usage(), file=sys.stdout if args else sys.stderr)
        if not args:  # no command: a usage error, as argparse ends a missing subcommand
            raise SystemExit(USAGE_ERROR_STATUS)
        return
    run(args[0], args[1:])


if __name__ == "__main__":
    main()
