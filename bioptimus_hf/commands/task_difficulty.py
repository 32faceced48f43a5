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

from ..analysis.task_difficulty_config import TaskDifficultyArguments
from ..pretraining.bioptimus_config import CurriculumArguments, build_curriculum
from ..utils.cli import exit_on_bad_input
from .config_parser import parse_args


def run(argv: list[str] | None = None) -> dict:
    """Parse the command line and measure (:func:`bioptimus_hf.analysis.task_difficulty.measure_task_difficulty`)."""
    args, curriculum_args = parse_args((TaskDifficultyArguments, CurriculumArguments), argv, description=__doc__)
    from ..analysis.task_difficulty import measure_task_difficulty  # models load only to run

    return measure_task_difficulty(args, build_curriculum(curriculum_args))


@exit_on_bad_input()
def main(argv: list[str] | None = None) -> None:
    """Console entry point (returns None so that the exit status is 0)."""
    run(argv)


if __name__ == "__main__":  # through the dispatcher: Ctrl-C ends it in one line
    from bioptimus_hf.commands.dispatch import run_module

    run_module(__spec__.name)
