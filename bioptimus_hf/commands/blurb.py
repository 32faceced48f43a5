"""``bioptimus blurb`` / ``bioptimus-blurb``: the BLURB benchmark of one model as one command, one table.

    bioptimus blurb --model_name_or_path out/releases/v0.4 --seeds 1 2 3 \\
        --blurb_dir ../shared/data/blurb --ner_dir ../shared/data/ner --output_dir blurb/v0.4

Every dataset present is fine-tuned over the seeds (NER with ``--ner_config``, a set of BLURB's with its recipe,
the others with their dataset's or task type's recipe; ``--num_train_epochs``, ``--max_steps``, ``--max_train_samples`` override both), a finished seed is never
trained again, and ``blurb_results.md``/``.json`` give each dataset's mean ± std, each task type's average and the
BLURB score over the task types present (docs/blurb.md). The dataset × seed fine-tunes run side by side on this
device as far as its cores and memory allow (``--jobs auto``; ``--jobs 1``: one after another in this process).
``--search true`` runs the paper's grid on dev instead of the recipe and reports each dataset at its dev-best point.
The run: :func:`bioptimus_hf.blurb.benchmark.run_benchmark`.
"""

from __future__ import annotations

import logging

from ..blurb.benchmark_config import BenchmarkArguments
from ..utils.cli import BAD_INPUT_ERRORS, exit_on_bad_input
from ..utils.job_pool import JobsFailed
from .config_parser import parse_args


def run(argv: list[str] | None = None) -> dict:
    (args,) = parse_args((BenchmarkArguments,), argv, description=__doc__)
    logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", level=logging.INFO)
    from ..blurb.benchmark import run_benchmark  # the fine-tuning wing loads only to run, not for --help

    return run_benchmark(args)


@exit_on_bad_input(*BAD_INPUT_ERRORS, JobsFailed)
def main(argv: list[str] | None = None) -> None:
    """Console entry point (returns None so that the exit status is 0)."""
    run(argv)


if __name__ == "__main__":  # through the dispatcher: Ctrl-C ends it in one line
    from bioptimus_hf.commands.dispatch import run_module

    run_module(__spec__.name)
