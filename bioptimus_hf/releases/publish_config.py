"""The flags of ``bioptimus publish``: which releases go to which Hub repository, in which layout, with what card."""

from __future__ import annotations

from dataclasses import dataclass, field

from .naming import normalise_version


MODES = ("branches", "repos")  # a branch and tag per version in one repository, or a repository per version
DEFAULT_COMMIT_MESSAGE = "Release BIOptimus v{version}"


@dataclass
class PublishArguments:
    """Arguments of ``bioptimus publish``."""

    run_dir: str = field(
        metadata={"help": "A training output_dir (holding releases/v0.k/), its releases/ folder, or one release."}
    )
    hub_model_id: str = field(
        metadata={
            "help": "Hub repository, as the Trainer's --hub_model_id: 'org/name', or 'name' (with --organization, "
            "else your user's). With --mode repos, version 0.k goes to '<hub_model_id>-v0.k'."
        }
    )
    organization: str | None = field(default=None, metadata={"help": "Namespace when --hub_model_id has none."})
    versions: list[str] | None = field(
        default=None, metadata={"help": "Versions to publish (e.g. 0.3 or v0.3); default: all releases found."}
    )
    mode: str = field(
        default="branches",
        metadata={
            "help": "'branches': a branch and tag per version, main = latest; 'repos': a repository per version.",
            "choices": list(MODES),
        },
    )
    hub_private_repo: bool | None = field(
        default=None,
        metadata={
            "help": "Create new repositories private or not (default: the namespace's; an existing one keeps its own)."
        },
    )
    hub_token: str | None = field(
        default=None, repr=False, metadata={"help": "Hub token (default: HF_TOKEN, or `hf auth login`'s)."}
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
        metadata={
            "help": "Where to stage each version's files, kept (default: a temporary folder, removed at the end)."
        },
    )
    ner_results: list[str] | None = field(
        default=None,
        metadata={
            "help": "VERSION=PATH pairs: NER results (all_results.json or a directory) for that version's card."
        },
    )
    license: str = field(default="apache-2.0", metadata={"help": "License identifier in the card metadata."})
    datasets: list[str] | None = field(
        default=None,
        metadata={"help": "Hub dataset ids of the pre-training data, for the card (default: the run's, if any)."},
    )
    keep_release_readme: bool = field(
        default=False, metadata={"help": "Upload the release's own README.md instead of re-rendering the card."}
    )
    keep_edited_card: bool = field(
        default=False,
        metadata={
            "help": "Upload a README.md edited by hand (it differs from what its record renders) as it is; without "
            "it, such a card is replaced, in one line."
        },
    )
    endpoint: str | None = field(
        default=None, metadata={"help": "Hub endpoint (default: HF_ENDPOINT or https://huggingface.co)."}
    )

    def __post_init__(self):
        if self.mode not in MODES:
            raise ValueError(f"--mode must be one of {MODES}, got {self.mode!r}")

    def ner_result_paths(self) -> dict[str, list[str]]:
        """``--ner_results VERSION=PATH ...`` as version -> paths (ValueError naming a malformed pair)."""
        results: dict[str, list[str]] = {}
        for pair in self.ner_results or []:
            version, sep, path = pair.partition("=")
            if not sep or not version or not path:
                raise ValueError(f"--ner_results {pair!r}: expected VERSION=PATH, e.g. 0.4=runs/ner/bc5cdr")
            results.setdefault(normalise_version(version), []).append(path)
        return results
