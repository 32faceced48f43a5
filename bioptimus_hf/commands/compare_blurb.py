"""``bioptimus blurb-compare`` / ``bioptimus-blurb-compare``: models compared on their whole BLURB tables.

    bioptimus blurb-compare --runs v0.1=blurb/v0.1 v0.4=blurb/v0.4 [--output_dir blurb/comparison]

Each run is a ``bioptimus blurb`` output directory (its ``blurb_results.json``); the first is the reference.
Per dataset, per task type and for the BLURB score: mean ± std of the per-seed differences (docs/blurb.md).
"""

from __future__ import annotations

from ..blurb.compare import compare_runs, parse_runs
from ..blurb.compare_config import BlurbCompareArguments
from ..utils.cli import exit_on_bad_input
from .config_parser import parse_args


def run(argv: list[str] | None = None) -> dict:
    (args,) = parse_args((BlurbCompareArguments,), argv, description=__doc__)
    comparison = compare_runs(parse_runs(args.runs), args.output_dir)
    print(comparison["markdown"])
    return comparison


@exit_on_bad_input()
def main(argv: list[str] | None = None) -> None:
    """Console entry point (returns None so that the exit status is 0)."""
    run(argv)


if __name__ == "__main__":  # through the dispatcher: Ctrl-C ends it in one line
    from bioptimus_hf.commands.dispatch import run_module

    run_module(__spec__.name)
