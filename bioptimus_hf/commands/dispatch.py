"""``bioptimus``: one command for every stage, like ``trl`` and ``hf``.

    bioptimus pretrain configs/demo_minilm.yaml --max_steps 400
    bioptimus ner configs/ner_blurb.yaml --model_name_or_path outputs/demo_minilm/releases/v0.4
    bioptimus --help                      # the commands, one line each
    bioptimus pretrain --help             # a command's flags

``bioptimus <command> ARGS`` is ``main(ARGS)`` of the command's module under :mod:`bioptimus_hf.commands`: the
same config file and flags as its script (``python run_pretraining.py ARGS``) or hyphenated console script
(``bioptimus-train-tokenizer ARGS``), and ``python -m bioptimus_hf.commands <command> ARGS`` without installing.
"""

from __future__ import annotations

import importlib
import sys
from dataclasses import dataclass


@dataclass(frozen=True)
class Command:
    module: str  # under bioptimus_hf.commands, with a main(argv) that parses ARGS
    summary: str  # the one line of ``bioptimus --help``


# In pipeline order: the one list of commands (help, dispatch, tests).
COMMANDS: dict[str, Command] = {
    "train-tokenizer": Command("train_tokenizer", "train a vocabulary of the base's family, with a coverage report"),
    "init-embeddings": Command("init_embeddings", "write a base model initialised for a new vocabulary"),
    "pretrain": Command("pretrain", "continued masked-LM pre-training through the curriculum, a release per phase"),
    "publish": Command("publish", "publish a run's releases to the Hugging Face Hub"),
    "ner": Command("ner", "fine-tune and evaluate on a NER dataset over several seeds (BLURB)"),
    "tag": Command("tag_entities", "tag entities in raw text with a fine-tuned NER model"),
    "compare": Command("compare_ner", "fine-tune several models on several NER datasets, one table"),
    "blurb-task": Command("blurb_task", "fine-tune and evaluate on one BLURB dataset beyond NER over several seeds"),
    "blurb": Command("blurb", "the BLURB benchmark of one model: every dataset present, one table, the score"),
    "blurb-compare": Command("compare_blurb", "compare BLURB tables of several models, paired by seed"),
    "distill": Command("distill", "distil a compact student from a release (DistilBioBERT, TinyBioBERT...)"),
    "remove-layers": Command("remove_layers", "a model with its top layers removed"),
    "task-difficulty": Command("task_difficulty", "a model's MLM loss under each curriculum phase's masking"),
    "study": Command("study", "the paper's study: arms under one token budget, NER of each, tables, figures"),
    "plot": Command("plot", "draw a finished run's figures again (its loss plot with the phases)"),
}


def usage() -> str:
    width = max(map(len, COMMANDS))
    lines = ["usage: bioptimus <command> [config.{yaml,json}] [--flag value ...]", "", "commands:"]
    lines += [f"  {name:<{width}}  {command.summary}" for name, command in COMMANDS.items()]
    lines += ["", "bioptimus <command> --help lists the command's flags."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    """Run ``bioptimus <command> ARGS`` (returns None so that the exit status is 0)."""
    from_command_line = argv is None
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv:
        raise SystemExit(usage())
    name, args = argv[0], argv[1:]
    if name in ("-h", "--help"):
        print(usage())
        return
    command = COMMANDS.get(name)
    if command is None:
        raise SystemExit(f"error: unknown command {name!r}; the commands are {', '.join(COMMANDS)} (bioptimus --help)")
    if from_command_line:  # argparse names the program after argv[0]: usage and errors say "bioptimus <command>"
        sys.argv[0] = f"bioptimus {name}"
    importlib.import_module(f"{__package__}.{command.module}").main(args)


if __name__ == "__main__":
    main()
