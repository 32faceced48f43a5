"""``bioptimus-publish``: publish a run's curriculum releases to the Hugging Face Hub.

    bioptimus-publish --run_dir outputs/demo_minilm --hub_model_id acme/bioptimus --dry_run   # plan, no network
    bioptimus-publish --run_dir outputs/demo_minilm --hub_model_id acme/bioptimus             # token: HF_TOKEN

See :mod:`bioptimus_hf.releases.hub` for what publishing does.
"""

from __future__ import annotations

import logging
import shlex
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from huggingface_hub.errors import HfHubHTTPError

from ..releases.hub import DEFAULT_COMMIT_MESSAGE, MODES, VersionReport, publish_releases
from ..releases.naming import normalise_version
from ..utils.cli import exit_on_bad_input
from .config_parser import parse_args


@dataclass
class PublishArguments:
    """Arguments of ``bioptimus-publish``."""

    run_dir: str = field(
        metadata={
            "help": "A training output_dir (holding releases/v0.k/), its releases/ folder, "
            "or a single release directory."
        }
    )
    hub_model_id: str = field(
        metadata={
            "aliases": ["--repo_id"],
            "help": "Hub repository, as the Trainer's --hub_model_id: 'org/name', or "
            "'name' (with --organization, else your user's). With --mode repos, "
            "version 0.k goes to '<hub_model_id>-v0.k'. --repo_id: an alias.",
        }
    )
    organization: str | None = field(default=None, metadata={"help": "Namespace when --hub_model_id has none."})
    versions: list[str] | None = field(
        default=None, metadata={"help": "Versions to publish (e.g. 0.3 or v0.3); default: all releases found."}
    )
    mode: str = field(
        default="branches",
        metadata={
            "help": "'branches': one repository, a branch and tag per "
            "version, main = latest; 'repos': one repository per "
            "version.",
            "choices": list(MODES),
        },
    )
    hub_private_repo: bool = field(
        default=False,
        metadata={
            "aliases": ["--private"],
            "help": "Create new repositories as private (an existing one keeps its visibility). --private: an alias.",
        },
    )
    hub_token: str | None = field(
        default=None, metadata={"help": "Hub token (default: HF_TOKEN, or the one saved by `hf auth login`)."}
    )
    commit_message: str = field(
        default=DEFAULT_COMMIT_MESSAGE, metadata={"help": "Commit message; '{version}' is replaced by the version."}
    )
    force: bool = field(
        default=False,
        metadata={"help": "Replace versions already published with different content (moves their tags)."},
    )
    dry_run: bool = field(
        default=False, metadata={"help": "Stage the files and print every operation, without network."}
    )
    staging_dir: str | None = field(
        default=None,
        metadata={"help": "Where to stage each version's files (default: a temporary directory; kept when given)."},
    )
    ner_results: list[str] | None = field(
        default=None,
        metadata={
            "help": "VERSION=PATH pairs: NER results "
            "(all_results.json file or directory) "
            "to put in that version's card."
        },
    )
    license: str = field(default="apache-2.0", metadata={"help": "License identifier in the card metadata."})
    datasets: list[str] | None = field(
        default=None,
        metadata={
            "help": "Hub dataset ids of the pre-training data, "
            "for the card's `datasets` metadata "
            "(default: the run's `datasets`, if any)."
        },
    )
    keep_release_readme: bool = field(
        default=False, metadata={"help": "Upload the release's own README.md instead of re-rendering the card."}
    )
    endpoint: str | None = field(
        default=None, metadata={"help": "Hub endpoint (default: HF_ENDPOINT or https://huggingface.co)."}
    )


def _parse_ner_results(pairs: Iterable[str] | None) -> dict[str, list[str]]:
    results: dict[str, list[str]] = {}
    for pair in pairs or []:
        version, sep, path = pair.partition("=")
        if not sep or not version or not path:
            raise ValueError(f"--ner_results {pair!r}: expected VERSION=PATH, e.g. 0.4=runs/ner/bc5cdr")
        results.setdefault(normalise_version(version), []).append(path)
    return results


def publish_from_cli(argv: Sequence[str] | None = None) -> list[VersionReport]:
    """Parse CLI arguments (or one .json/.yaml file of them), publish, print one line per version."""
    (args,) = parse_args((PublishArguments,), None if argv is None else list(argv))
    logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s", level=logging.INFO)
    reports = publish_releases(
        args.run_dir,
        args.hub_model_id,
        versions=args.versions,
        mode=args.mode,
        private=args.hub_private_repo,
        organization=args.organization,
        commit_message=args.commit_message,
        force=args.force,
        dry_run=args.dry_run,
        staging_dir=args.staging_dir,
        ner_results=_parse_ner_results(args.ner_results),
        license=args.license,
        datasets=args.datasets,
        rerender_card=not args.keep_release_readme,
        token=args.hub_token,
        endpoint=args.endpoint,
        print_fn=print if args.dry_run else None,
    )
    for report in reports:
        print(
            f"v{report.version}: {report.status} -> {report.repo_id} (branch {report.branch}, tag {report.tag})"
            + (f"; uploaded {report.uploaded}" if report.uploaded else "")
        )
    return reports


def main(argv: Sequence[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        with exit_on_bad_input(ValueError, FileNotFoundError, RuntimeError):  # VersionConflictError: a RuntimeError
            publish_from_cli(argv)
    except (HfHubHTTPError, OSError) as error:  # the Hub answered 5xx, or the network failed mid-way
        sys.exit(
            f"error: the Hub request failed: {_first_line(error)}\n"
            "Nothing published is lost and publishing is idempotent: re-run the same command (token: --hub_token or "
            "HF_TOKEN) to upload only what is "
            f"missing:\n  bioptimus-publish {shlex.join(_without_token(argv))}"
        )


def _without_token(argv: Sequence[str]) -> list[str]:
    """``argv`` without ``--hub_token`` and its value: the resume command is printed, the token never is."""
    shown, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg == "--hub_token":
            skip = True
        elif not arg.startswith("--hub_token="):
            shown.append(arg)
    return shown


def _first_line(error: BaseException) -> str:
    text = str(error).strip() or type(error).__name__
    return text.splitlines()[0]


if __name__ == "__main__":
    main()
