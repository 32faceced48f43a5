"""Arguments about a run's releases (replacing an existing run's; the Hub layout) and how a training script's Hub
flags become release publishing.

Publishing is asked with TrainingArguments' own flags, ``--push_to_hub --hub_model_id ORG/NAME
[--hub_private_repo] [--hub_token T] [--hub_strategy every_save|end]``: :func:`resolve_release_hub` reads them
(through :func:`~bioptimus_hf.utils.hub_settings.take_hub_settings`, which turns the Trainer's own push off) and
says where the releases go. ``--push_releases_to_hub``, ``--releases_repo_id`` and ``--releases_private`` are
deprecated aliases of ``--push_to_hub``, ``--hub_model_id`` and ``--hub_private_repo``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, fields
from typing import Any

from ..utils.hub_settings import HubSettings, take_hub_settings
from .publish_config import MODES


logger = logging.getLogger(__name__)

# (deprecated flag, ReleaseArguments field, the TrainingArguments field it stands for)
DEPRECATED_ALIASES = (
    ("--push_releases_to_hub", "push_releases_to_hub", "push_to_hub"),
    ("--releases_repo_id", "releases_repo_id", "hub_model_id"),
    ("--releases_private", "releases_private", "hub_private_repo"),
)


@dataclass
class ReleaseArguments:
    overwrite_output_dir: bool = field(
        default=False,
        metadata={"help": "Write into an output_dir that holds a run without checkpoints, replacing its releases."},
    )
    releases_hub_mode: str = field(
        default="branches",
        metadata={
            "help": "With --push_to_hub: 'branches' (one repository, a branch and tag v0.k per version, main = "
            "the latest) or 'repos' (a repository <hub_model_id>-v0.k per version).",
            "choices": list(MODES),
        },
    )
    push_releases_to_hub: bool = field(default=False, metadata={"help": "Deprecated: use --push_to_hub."})
    releases_repo_id: str | None = field(default=None, metadata={"help": "Deprecated: use --hub_model_id."})
    releases_private: bool = field(default=False, metadata={"help": "Deprecated: use --hub_private_repo true."})


@dataclass(frozen=True)
class ReleaseHub:
    """Where a run's releases are published: the Trainer's Hub settings and the layout."""

    settings: HubSettings
    mode: str = "branches"


def apply_deprecated_aliases(release_args: ReleaseArguments, training_args: Any) -> None:
    """Move the deprecated release flags onto TrainingArguments' own (one warning); refuse contradictions."""
    given = [
        (flag, getattr(release_args, name), target)
        for flag, name, target in DEPRECATED_ALIASES
        if getattr(release_args, name) not in (None, False)
    ]
    if not given:
        return
    logger.warning(
        "%s deprecated: use %s (TrainingArguments' own Hub flags)",
        ", ".join(f for f, _, _ in given) + (" is" if len(given) == 1 else " are"),
        " ".join("--" + target for _, _, target in given),
    )
    defaults = {f.name: f.default for f in fields(training_args)}
    for flag, value, target in given:
        current = getattr(training_args, target)
        if current not in (defaults[target], value):
            raise ValueError(
                f"--{target} {current} and {flag} {value} contradict each other: give --{target} only "
                f"({flag} is its deprecated alias)"
            )
        setattr(training_args, target, value)


def resolve_release_hub(
    args: Any, training_args: Any | None = None, what: str = "the curriculum releases"
) -> ReleaseHub | None:
    """Where the releases are published (None: not published). ``args``: the release flags
    (:class:`ReleaseArguments`) with ``training_args`` the Trainer's, or one object holding both
    (``BioptimusConfig``), alone. Call it before training: it refuses bad or contradictory flags with a ValueError
    naming them, and turns the Trainer's own push off (see :func:`~bioptimus_hf.utils.hub_settings.take_hub_settings`)."""
    training_args = args if training_args is None else training_args
    apply_deprecated_aliases(args, training_args)
    settings = take_hub_settings(training_args, what=what, allow_revision=False)
    return None if settings is None else ReleaseHub(settings, args.releases_hub_mode)
