"""TrainingArguments' Hub flags (``--push_to_hub``, ``--hub_model_id``, ``--hub_private_repo``, ``--hub_token``,
``--hub_strategy``, ``--hub_revision``), taken from the Trainer: its own push uploads ``output_dir`` (checkpoints,
``training_args.bin``) at every save, while each command publishes what it produces (the curriculum releases, the
distilled student, the best NER seed). :func:`take_hub_settings` is the one place that reads those flags, refuses
what a command cannot honour (before anything is trained) and turns the Trainer's push off.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .secrets import remember_secret


# Every script publishes what it produced; none uploads checkpoints.
PUBLISHING_STRATEGIES = ("every_save", "end")


@dataclass(frozen=True)
class HubSettings:
    """Where and how a command publishes, as the user asked the Trainer to push."""

    repo_id: str  # 'org/name', or 'name' in the token's user namespace (as the Trainer does)
    private: bool | None = None  # None: the Hub's default for the namespace; an existing repository keeps its own
    token: str | None = field(default=None, repr=False)  # None: huggingface_hub's (HF_TOKEN, `hf auth login`)
    strategy: str = "every_save"
    revision: str | None = None


def hub_request_errors() -> tuple[type[BaseException], ...]:
    """What a failed Hub request raises: the Hub's answer (``HfHubHTTPError``), the transport's (its base, the HTTP
    client's ``HTTPError``) and the system's (``OSError``)."""
    from huggingface_hub.errors import HfHubHTTPError

    return (HfHubHTTPError, *HfHubHTTPError.__bases__, OSError)


def trainer_repo_name(training_args: Any) -> str:
    """The repository the Trainer would push to: ``--hub_model_id``, else the name of ``--output_dir``."""
    return training_args.hub_model_id or Path(training_args.output_dir).absolute().name


def take_hub_settings(training_args: Any, *, what: str, allow_revision: bool = True) -> HubSettings | None:
    """The Hub settings of ``training_args`` (None without ``--push_to_hub``); ``what`` names what is published, for
    the refusals (a ValueError naming the flag). Afterwards ``push_to_hub`` is False and ``hub_token`` None (never
    pickled): the token is kept in the returned settings only, remembered by :mod:`~bioptimus_hf.utils.secrets`,
    which redacts it."""
    token = clear_hub_token(training_args)
    if not training_args.push_to_hub:
        return None
    settings = _read_hub_settings(training_args, token, what, allow_revision)
    training_args.push_to_hub = False
    return settings


def clear_hub_token(training_args: Any) -> str | None:
    """Take ``hub_token`` out of ``training_args`` (set to None) and return it, remembered as a secret."""
    token = getattr(training_args, "hub_token", None)
    remember_secret(token)
    if token is not None:
        training_args.hub_token = None
    return token


def _read_hub_settings(training_args: Any, token: str | None, what: str, allow_revision: bool) -> HubSettings:
    """The checks and settings of :func:`take_hub_settings` (``token``: the one taken out of the arguments)."""
    from huggingface_hub import get_token
    from huggingface_hub.errors import HFValidationError
    from huggingface_hub.utils import validate_repo_id

    repo_id = trainer_repo_name(training_args)
    try:
        validate_repo_id(repo_id)
    except HFValidationError:
        source = (
            f"--hub_model_id {repo_id!r}"
            if training_args.hub_model_id
            else f"the name of --output_dir ({repo_id!r}), which the repository is named after,"
        )
        raise ValueError(f"--push_to_hub: {source} is not a valid Hub repository id; give --hub_model_id ORG/NAME")
    strategy = str(getattr(training_args.hub_strategy, "value", training_args.hub_strategy))
    if strategy not in PUBLISHING_STRATEGIES:
        raise ValueError(
            f"--hub_strategy {strategy}: this script publishes {what}, never checkpoints; use "
            "every_save (the default) or end"
        )
    if training_args.hub_revision and not allow_revision:
        raise ValueError(
            f"--hub_revision {training_args.hub_revision}: this script publishes {what} on their "
            "own branches and tags v0.k (main holds the latest); drop --hub_revision"
        )
    if not (token or get_token()):
        raise ValueError(
            "--push_to_hub: no Hugging Face token found; give --hub_token, set HF_TOKEN or run `hf auth login`"
        )
    return HubSettings(repo_id, training_args.hub_private_repo, token, strategy, training_args.hub_revision)
