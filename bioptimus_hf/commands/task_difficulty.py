"""``bioptimus-task-difficulty``: a model's MLM loss and perplexity under each curriculum phase's masking.

    bioptimus-task-difficulty --model_name_or_path out/releases/v0.1 out/releases/v0.4 \
        --corpus_files heldout.txt --curriculum bioptimus \
        --output_file difficulty.json --output_plot difficulty.png  # + a markdown table per model on stdout

Order your own curriculum's phases by difficulty (the paper's Figure 4) with a pre-trained model: the same
corpus blocks, each phase's masking, one loss per phase. Several models (each with its own tokenizer) go
on one plot, e.g. the releases of a run, to see how each task gets easier phase by phase. Use text the
models were not trained on. See docs/study.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..analysis.task_difficulty import corpus_blocks, difficulty_table, phase_losses, plot_difficulty
from ..pretraining.curriculum_config import CurriculumArguments
from ..utils.cli import exit_on_bad_input
from ..utils.corpus_reader import check_corpus_files
from ..utils.files import write_json_atomic
from ..utils.model_reference import check_model_reference
from ..utils.tokenizer_loader import load_fast_tokenizer
from .config_parser import parse_args


# The first bytes of each corpus file read to check it before a model loads (an empty or non-text file is refused).
CORPUS_CHECK_BYTES = 1 << 20


@dataclass
class TaskDifficultyArguments:
    model_name_or_path: list[str] = field(
        metadata={
            "help": "One or more masked LMs (directories or Hub ids), e.g. the releases of a run; "
            "LABEL=PATH names one in the table and plot."
        }
    )
    corpus_files: list[str] = field(metadata={"help": "Text files (one sentence or document a line; .gz ok)."})
    max_seq_length: int = field(default=128, metadata={"help": "Block size in tokens, as in pre-training."})
    max_blocks: int = field(default=256, metadata={"help": "Blocks evaluated (the first ones of the corpus)."})
    batch_size: int = field(default=16, metadata={"help": "Blocks per forward pass."})
    seed: int = field(default=0, metadata={"help": "Masking seed (the same for every phase)."})
    output_file: str | None = field(default=None, metadata={"help": "Where to write the results as JSON."})
    output_plot: str | None = field(default=None, metadata={"help": "Where to draw the losses as a PNG (matplotlib)."})


def run(argv: list[str] | None = None) -> dict:
    args, curriculum_args = parse_args((TaskDifficultyArguments, CurriculumArguments), argv, description=__doc__)
    from transformers import AutoModelForMaskedLM

    # Cheap checks first: the corpus and every model's name, before any model loads.
    check_corpus_files(args.corpus_files, max_check_bytes=CORPUS_CHECK_BYTES)
    curriculum = curriculum_args.build()
    named = [_split_label(entry, args.model_name_or_path) for entry in args.model_name_or_path]
    for _, name in named:
        check_model_reference(name, "model_name_or_path")
    models = []
    for label, name in named:
        tokenizer = load_fast_tokenizer(name)
        # Each model packs the corpus with its own tokenizer: the same text, its own blocks.
        blocks = corpus_blocks(args.corpus_files, tokenizer, args.max_seq_length, args.max_blocks)
        model = AutoModelForMaskedLM.from_pretrained(name)
        rows = phase_losses(model, tokenizer, blocks, curriculum.phases, args.batch_size, args.seed)
        models.append({"model": name, "label": label, "blocks": len(blocks), "phases": rows})
        print(difficulty_table(label, rows))
        del model
    result = {
        "corpus_files": list(args.corpus_files),
        "max_seq_length": args.max_seq_length,
        "seed": args.seed,
        "models": models,
    }
    if args.output_file:
        write_json_atomic(args.output_file, result)
    if args.output_plot:
        plot_difficulty(models, args.output_plot)
    return result


def _split_label(entry: str, entries: list[str]) -> tuple[str, str]:
    """``LABEL=PATH`` -> (LABEL, PATH); a bare path is labelled by the shortest tail that tells it from the
    other bare paths (``a/releases/v0.4`` and ``b/releases/v0.4`` -> ``a/releases/v0.4``, ``b/...``)."""
    if "=" in entry:
        label, path = entry.split("=", 1)
        return label, path
    paths = [e.rstrip("/").split("/") for e in entries if "=" not in e]
    parts = entry.rstrip("/").split("/")
    for depth in range(1, len(parts) + 1):
        if len({"/".join(p[-depth:]) for p in paths}) == len(paths):
            return "/".join(parts[-depth:]), entry
    return entry, entry


@exit_on_bad_input()
def main(argv: list[str] | None = None) -> None:
    """Console entry point (returns None so that the exit status is 0)."""
    run(argv)


if __name__ == "__main__":
    main()
