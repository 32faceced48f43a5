"""Where a model came from, as a record or a card may say it: Hub ids, public names of local paths, and the base
model's Hub id only when it is known: the id ``from_pretrained`` resolved through the Hub (:func:`loaded_hub_id`,
asked when the model is loaded) or the one given (``--base_model_hub_id``). Never a guess from a local path's shape
(``out/v0.4`` is a folder, present or not) nor from a local ``config.json``'s ``_name_or_path``, which names what
that checkpoint was loaded or fine-tuned from. A local start is named by its folder, never its path (docs/hub.md).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


def looks_like_hub_id(name: Any) -> bool:
    """Shaped like a Hub id (``bert-base-uncased``, ``org/name``) rather than a path (``/data/model``, ``./m``). The
    shape says nothing of where a model was loaded from (:func:`loaded_hub_id` does)."""
    if not isinstance(name, str) or not name or name.startswith(("/", ".", "~")) or "\\" in name:
        return False
    return not os.path.isabs(name) and re.fullmatch(r"[A-Za-z0-9][\w.\-]*(/[\w.\-]+)?", name) is not None


def public_name(name_or_path: str | None) -> str | None:
    """What a public card may say of a model or tokenizer location: a name shaped like a Hub id as is (unless it is
    a local path that exists), a local path as its folder name."""
    if not name_or_path:
        return None
    if looks_like_hub_id(name_or_path) and not os.path.exists(name_or_path):
        return name_or_path
    return Path(os.path.normpath(str(name_or_path))).name or None


def loaded_hub_id(
    name_or_path: str | os.PathLike | None, *, cache_dir: str | os.PathLike | None = None, revision: str | None = None
) -> str | None:
    """The Hub id ``from_pretrained(name_or_path, cache_dir=..., revision=...)`` resolved, asked when it loads: None
    for a local directory (read first by ``from_pretrained``, whatever its name), else ``name_or_path`` when the Hub
    cache holds its ``config.json`` at ``revision`` (default ``main``). Offline; never a guess from the shape."""
    if not isinstance(name_or_path, str) or not looks_like_hub_id(name_or_path) or os.path.isdir(name_or_path):
        return None
    from huggingface_hub import try_to_load_from_cache

    try:
        cached = try_to_load_from_cache(name_or_path, "config.json", cache_dir=cache_dir, revision=revision)
    except ValueError:  # huggingface_hub's HFValidationError: not a repository id after all
        return None
    return name_or_path if isinstance(cached, str) else None


def base_model_hub_id(
    model_name_or_path: str | None,
    explicit: str | None = None,
    *,
    cache_dir: str | os.PathLike | None = None,
    revision: str | None = None,
) -> str | None:
    """The base model's Hub id when it is known: ``explicit`` (the flag), else what :func:`loaded_hub_id` says."""
    return explicit or loaded_hub_id(model_name_or_path, cache_dir=cache_dir, revision=revision)


def base_model_hub_id_field(of: str = "the base model", path_flag: str = "--model_name_or_path", **metadata) -> Any:
    """The dataclass field of the flag that gives a model's Hub id when it is loaded from a local copy (the one
    definition of its help; ``metadata`` adds e.g. ``aliases``)."""
    text = (
        f"The Hub id of {of}, for model cards' base_model, when {path_flag} is a local copy. Never guessed: without "
        "it a local directory is named by its folder and cards name no base_model."
    )
    return field(default=None, metadata={"help": text, **metadata})


def local_checkpoint_text(name: str) -> str:
    """What a card says of a local start whose Hub id was not given (markdown)."""
    return f"a local checkpoint, `{name}`; its Hub id was not given, so the card's metadata names no `base_model`"


@dataclass(frozen=True)
class Lineage:
    """The model a card's model started from: its Hub id (only when known) and its public name."""

    hub_id: str | None = None
    name: str | None = None  # the Hub id when known, else the folder name

    @classmethod
    def of(cls, model_name_or_path: str | None, explicit_hub_id: str | None = None, **cache: Any) -> "Lineage":
        """The lineage of a model loaded from ``model_name_or_path`` (``cache``: :func:`loaded_hub_id`'s
        ``cache_dir`` and ``revision``), asked when it is loaded, or with the id given (``--base_model_hub_id``)."""
        hub_id = base_model_hub_id(model_name_or_path, explicit_hub_id, **cache)
        if hub_id is not None or not model_name_or_path:
            return cls(hub_id, hub_id)
        return cls(None, Path(os.path.normpath(str(model_name_or_path))).name or None)  # a local start: its folder

    @classmethod
    def of_loaded(cls, model: Any, explicit_hub_id: str | None = None, **cache: Any) -> "Lineage":
        """The lineage of a model (or config) ``from_pretrained`` just returned, from the name it was given
        (``config.name_or_path``): see :meth:`of`."""
        name = getattr(getattr(model, "config", model), "name_or_path", None) or None
        return cls.of(name, explicit_hub_id, **cache)

    @property
    def is_local(self) -> bool:
        """A local checkpoint whose Hub id is not known."""
        return self.hub_id is None and self.name is not None

    def text(self, local_prefix: str = "started from ") -> str | None:
        """Markdown naming it: the Hub id in backquotes, or the prose of a local checkpoint; None when unknown."""
        if self.hub_id is not None:
            return f"`{self.hub_id}`"
        return local_prefix + local_checkpoint_text(self.name) if self.name is not None else None
