"""``bioptimus plot RUN_DIR``: draw a finished run's figures again.

    bioptimus plot outputs/demo_minilm                          # -> outputs/demo_minilm/training_loss.png
    bioptimus plot outputs/demo_minilm --output_dir figures/

The loss plot of the whole run (training and held-out loss per step, the learning rate, where each phase ends),
from its trainer_state.json and its releases' records: the picture the release writer puts in every release.
A study's figures are drawn again by bioptimus study CONFIG --report_only true.
"""

from __future__ import annotations

import sys

from ..pretraining.run_figures_config import PlotArguments
from ..utils.cli import exit_on_bad_input
from ..utils.config_files import CONFIG_SUFFIXES
from .config_parser import parse_args


def run(argv: list[str] | None = None) -> list[str]:
    """``RUN_DIR [--output_dir DIR]``: draw the run's figures; returns the files written."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and not argv[0].startswith("-") and not argv[0].endswith(CONFIG_SUFFIXES):
        argv = ["--run_dir", *argv]  # the positional RUN_DIR
    (args,) = parse_args((PlotArguments,), argv, description=__doc__)
    from ..pretraining.run_figures import draw_run_figures  # matplotlib loads only to draw

    with exit_on_bad_input():
        written = [str(path) for path in draw_run_figures(args.run_dir, args.output_dir)]
    print("\n".join(written))
    return written


def main(argv: list[str] | None = None) -> None:
    """Console entry point (returns None so that the exit status is 0)."""
    run(argv)


if __name__ == "__main__":  # through the dispatcher: Ctrl-C ends it in one line
    from bioptimus_hf.commands.dispatch import run_module

    run_module(__spec__.name)
