"""Where a run's releases are published, from a training command's Hub flags.

Publishing is asked with TrainingArguments' own flags, ``--push_to_hub --hub_model_id ORG/NAME
[--hub_private_repo] [--hub_token T] [--hub_strategy every_save|end]``, and laid out by ``--releases_hub_mode``
(``bioptimus_hf.pretraining.bioptimus_config``): :func:`resolve_release_hub` reads them (through
:func:`~bioptimus_hf.utils.hub_settings.take_hub_settings`, which turns the Trainer's own push off) and says where
the releases go.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..utils.hub_settings import HubSettings, take_hub_settings


@dataclass(frozen=True)
class ReleaseHub:
    """Where a run's releases are published: the Trainer's Hub settings and the layout."""

    settings: HubSettings
    mode: str = "branches"


def resolve_release_hub(
    args: Any, training_args: Any | None = None, what: str = "the curriculum releases"
) -> ReleaseHub | None:
    """Where the releases are published (None: not published). ``args``: the release settings
    (``releases_hub_mode``) with ``training_args`` the Trainer's, or one object holding both (``BioptimusConfig``),
    alone. Call it before training: it refuses bad flags with a ValueError naming them, and turns the Trainer's own
    push off (see :func:`~bioptimus_hf.utils.hub_settings.take_hub_settings`)."""
    training_args = args if training_args is None else training_args
    settings = take_hub_settings(training_args, what=what, allow_revision=False)
    return None if settings is None else ReleaseHub(settings, args.releases_hub_mode)
