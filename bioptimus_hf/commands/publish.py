"""``bioptimus-publish``: publish a run's curriculum releases to the Hugging Face Hub.

    bioptimus-publish --run_dir outputs/demo_minilm --hub_model_id acme/bioptimus --dry_run   # plan, no network
    bioptimus-publish --run_dir outputs/demo_minilm --hub_model_id acme/bioptimus             # token: HF_TOKEN

See :mod:`bioptimus_hf.releases.hub` for what publishing does.
"""

from __future__ import annotations

import logging
import shlex
import sys
from collections.abc import Sequence

from ..releases.hub import VersionReport, publish_releases
from ..releases.publish_config import PublishArguments
from ..utils.cli import exit_on_bad_input, exit_on_hub_error
from ..utils.secrets import redact_argv
from .config_parser import parse_args


def publish_from_cli(argv: Sequence[str] | None = None) -> list[VersionReport]:
    """Parse CLI arguments (or one .json/.yaml file of them), publish, print one line per version."""
    (args,) = parse_args((PublishArguments,), None if argv is None else list(argv))
    logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s", level=logging.INFO)
    reports = publish_releases(args)
    for report in reports:
        print(
            f"v{report.version}: {report.status} -> {report.repo_id} (branch {report.branch}, tag {report.tag})"
            + (f"; uploaded {report.uploaded}" if report.uploaded else "")
        )
    return reports


def main(argv: Sequence[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    resume = (
        "Nothing published is lost and publishing is idempotent: re-run the same command (token: --hub_token or "
        f"HF_TOKEN) to upload only what is missing:\n  bioptimus-publish {shlex.join(redact_argv(argv, drop=True))}"
    )
    # the Hub unreachable, the token refused, a 5xx mid-way: one line with the command that resumes
    with exit_on_hub_error("the Hub request", resume):
        with exit_on_bad_input(ValueError, FileNotFoundError, RuntimeError):  # VersionConflictError: a RuntimeError
            publish_from_cli(argv)


if __name__ == "__main__":  # through the dispatcher: Ctrl-C ends it in one line
    from bioptimus_hf.commands.dispatch import run_module

    run_module(__spec__.name)
