"""``bioptimus-task-difficulty``: a model's MLM loss and perplexity under each curriculum phase's masking.

    bioptimus-task-difficulty --model_name_or_path out/releases/v0.4 --corpus_files corpus.txt \
        --curriculum bioptimus --output_file difficulty.json       # + a markdown table on stdout

Order your own curriculum's phases by difficulty (the paper's Figure 4) with a pre-trained model: the same
corpus blocks, each phase's masking, one loss per phase. See docs/study.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..analysis.task_difficulty import corpus_blocks, difficulty_table, phase_losses
from ..pretraining.curriculum_config import CurriculumArguments
from ..utils.files import write_json_atomic
from ..utils.tokenizer_loader import load_fast_tokenizer
from .config_parser import exit_on_bad_input, parse_args


@dataclass
class TaskDifficultyArguments:
    model_name_or_path: str = field(metadata={"help": "A masked-LM (directory or Hub id), e.g. a release."})
    corpus_files: list[str] = field(metadata={"help": "Text files (one sentence or document a line; .gz ok)."})
    max_seq_length: int = field(default=128, metadata={"help": "Block size in tokens, as in pre-training."})
    max_blocks: int = field(default=256, metadata={"help": "Blocks evaluated (the first ones of the corpus)."})
    batch_size: int = field(default=16, metadata={"help": "Blocks per forward pass."})
    seed: int = field(default=0, metadata={"help": "Masking seed (the same for every phase)."})
    output_file: str | None = field(default=None, metadata={"help": "Where to write the results as JSON."})


def run(argv: list[str] | None = None) -> dict:
    args, curriculum_args = parse_args((TaskDifficultyArguments, CurriculumArguments), argv, description=__doc__)
    from transformers import AutoModelForMaskedLM

    curriculum = curriculum_args.build()
    tokenizer = load_fast_tokenizer(args.model_name_or_path)
    model = AutoModelForMaskedLM.from_pretrained(args.model_name_or_path)
    blocks = corpus_blocks(args.corpus_files, tokenizer, args.max_seq_length, args.max_blocks)
    rows = phase_losses(model, tokenizer, blocks, curriculum.phases, args.batch_size, args.seed)
    result = {"model": args.model_name_or_path, "blocks": len(blocks), "max_seq_length": args.max_seq_length,
              "seed": args.seed, "phases": rows}
    if args.output_file:
        write_json_atomic(args.output_file, result)
    print(difficulty_table(args.model_name_or_path, rows))
    return result


def main(argv: list[str] | None = None) -> None:
    exit_on_bad_input(run, argv)


if __name__ == "__main__":
    main()
