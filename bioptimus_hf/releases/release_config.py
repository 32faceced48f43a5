"""Arguments about a run's releases: replacing an existing run's, and publishing them while training."""

from __future__ import annotations

from dataclasses import dataclass, field

from .hub import MODES


@dataclass
class ReleaseArguments:
    overwrite_output_dir: bool = field(
        default=False,
        metadata={"help": "Write into an output_dir that holds a run without checkpoints, replacing its releases."},
    )
    push_releases_to_hub: bool = field(
        default=False,
        metadata={"help": "Publish each release as its phase ends (background; a Hub failure never stops training)."},
    )
    releases_repo_id: str | None = field(default=None, metadata={"help": "Hub repository (org/name) for the releases."})
    releases_private: bool = field(default=False, metadata={"help": "Create the repository as private."})
    releases_hub_mode: str = field(
        default="branches", metadata={"help": "'branches' (one repo, a branch and tag per version) or 'repos'.",
                                      "choices": list(MODES)}
    )

    def __post_init__(self):
        if self.push_releases_to_hub and not self.releases_repo_id:
            raise ValueError("--push_releases_to_hub needs --releases_repo_id ORG/NAME")
