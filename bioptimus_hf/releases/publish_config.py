"""The flags of ``bioptimus publish``: which releases go to which Hub repository, in which layout, with what card."""

from __future__ import annotations

from dataclasses import dataclass, field

from .hub import DEFAULT_COMMIT_MESSAGE, MODES
from .naming import normalise_version


@dataclass
class PublishArguments:
    """Arguments of ``bioptimus publish``."""

    run_dir: str = field(
        metadata={
            "help": "A training output_dir (holding releases/v0.k/), its releases/ folder, "
            "or a single release directory."
        }
    )
    hub_model_id: str = field(
        metadata={
            "help": "Hub repository, as the Trainer's --hub_model_id: 'org/name', or "
            "'name' (with --organization, else your user's). With --mode repos, "
            "version 0.k goes to '<hub_model_id>-v0.k'.",
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
            "help": "Create new repositories as private (an existing one keeps its visibility).",
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
    keep_edited_card: bool = field(
        default=False,
        metadata={
            "help": "Upload a release's README.md as it is when it was edited by hand (it differs from what the "
            "release's record renders); other cards are re-rendered. Without it, an edited card is replaced and "
            "publishing says so."
        },
    )
    endpoint: str | None = field(
        default=None, metadata={"help": "Hub endpoint (default: HF_ENDPOINT or https://huggingface.co)."}
    )

    def ner_result_paths(self) -> dict[str, list[str]]:
        """``--ner_results VERSION=PATH ...`` as version -> paths (ValueError naming a malformed pair)."""
        results: dict[str, list[str]] = {}
        for pair in self.ner_results or []:
            version, sep, path = pair.partition("=")
            if not sep or not version or not path:
                raise ValueError(f"--ner_results {pair!r}: expected VERSION=PATH, e.g. 0.4=runs/ner/bc5cdr")
            results.setdefault(normalise_version(version), []).append(path)
        return results
