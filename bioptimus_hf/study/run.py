"""A whole study from its settings (``bioptimus study``), callable by anyone: ``run_study(StudyArguments(...))``.

The tokenizer and start models the arms share, the base row's NER runs, then each arm's pre-training and NER
(:class:`~.runner.StudyRunner`, skipping finished units), the representation analysis, and the report
(``results.json``, ``results.md``, figures) rewritten after every finished unit (docs/study.md).
"""

from __future__ import annotations

import logging
import shlex
from pathlib import Path
from typing import Any

from ..utils.files import write_text_atomic
from ..utils.public_paths import public_command
from ..utils.secrets import redact_text
from .study_config import StudyArguments


logger = logging.getLogger(__name__)


def run_study_command(args: StudyArguments, argv: list[str]) -> dict[str, Any] | None:
    """``bioptimus study ARGV``: :func:`run_study`, recording the command that reproduces it
    (``utils/public_paths.py``)."""
    return run_study(args, public_command(shlex.join(["bioptimus", "study", *argv])))


def run_study(args: StudyArguments, command: str | None = None) -> dict[str, Any] | None:
    """Run (or resume) the study; returns its results (None with ``prepare_only``). ``command``: the command line
    that reproduces it, written to ``<results_dir>/command.txt``."""
    from .figures import draw_figures
    from .results import write_results
    from .runner import StudyRunner

    results_dir = Path(args.results_dir)
    if command is not None:
        write_text_atomic(results_dir / "command.txt", redact_text(command) + "\n")

    # 1. The report, rewritten after each finished unit (a long study shows its progress as it goes).
    def report(analysis=None):
        results = write_results(args, analysis)
        draw_figures(results, args.output_dir, results_dir / "figures")
        return results

    if args.reference_results:  # an unusable reference study fails now, not after hours of training
        report()

    # 2. Tokenizer, start models, then the base row and every arm: pre-training, NER (skipping what is done).
    runner = StudyRunner(args, on_progress=report)
    if args.prepare_only:  # shared inputs only; the arms then run as separate jobs (docs/study.md)
        runner.prepare()
        logger.info("study: prepared %s; run the arms now", dict(runner.computed) or "nothing new")
        return None
    if not args.report_only:
        runner.run()

    # 3. Representation analysis of every release (rare vs frequent tokens), then the final report.
    analysis = None
    if not args.skip_analysis:
        from .analysis import analyse_study

        analysis = analyse_study(args, results_dir / "figures")
    results = report(analysis)
    logger.info("study: ran %s; results in %s", dict(runner.computed) or "nothing new", results_dir)
    return results
