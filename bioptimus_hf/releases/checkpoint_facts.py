"""What a release's own files say about its model (``config.json`` and the tokenizer's mask token): the model
family, architecture and sizes a card names, never taken from a default."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from ..utils.files import read_json


# How cards name a model family (``config.json``'s ``model_type``): transformers has no display names. A type
# missing here is named after its class (``FooForMaskedLM`` -> ``Foo``), never as another family.
MODEL_FAMILY_NAMES = {
    "bert": "BERT",
    "roberta": "RoBERTa",
    "xlm-roberta": "XLM-RoBERTa",
    "camembert": "CamemBERT",
    "distilbert": "DistilBERT",
    "albert": "ALBERT",
    "electra": "ELECTRA",
    "deberta": "DeBERTa",
    "deberta-v2": "DeBERTa-v2",
    "modernbert": "ModernBERT",
    "mpnet": "MPNet",
}
TOKENIZER_FILES_WITH_SPECIAL_TOKENS = ("tokenizer_config.json", "special_tokens_map.json")
_SIZES = ("hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size")  # transformers' names, every family


@dataclass(frozen=True)
class CheckpointFacts:
    """What ``config.json`` and the tokenizer say; a card names the model from these: a RoBERTa with ``<mask>``."""

    model_type: str | None = None
    architectures: tuple[str, ...] = ()
    hidden_size: int | None = None
    num_hidden_layers: int | None = None
    num_attention_heads: int | None = None
    vocab_size: int | None = None
    mask_token: str | None = None

    @property
    def family_name(self) -> str | None:
        """``RoBERTa`` for ``roberta``; a type without a known name is named after its class or type."""
        if self.model_type in MODEL_FAMILY_NAMES:
            return MODEL_FAMILY_NAMES[self.model_type]
        if self.architectures:
            return re.sub(r"For\w+$", "", self.architectures[0]) or self.architectures[0]
        return self.model_type

    @classmethod
    def read(cls, release_dir: str | os.PathLike) -> "CheckpointFacts":
        """Facts of the checkpoint in ``release_dir``; fields stay None where its files do not say."""
        config = _read_config(Path(release_dir))
        sizes = {name: config.get(name) for name in _SIZES}
        architectures = tuple(config.get("architectures") or ())
        return cls(config.get("model_type"), architectures, **sizes, mask_token=_read_mask_token(Path(release_dir)))


def _read_config(release: Path) -> dict[str, Any]:
    """``config.json`` through transformers' config class, so that every family's own names resolve (DistilBERT's
    ``n_layers``/``dim``/``n_heads``); the raw JSON for a type this transformers does not know."""
    path = release / "config.json"
    if not path.is_file():
        return {}
    raw = read_json(path)
    try:
        from transformers import AutoConfig

        config = AutoConfig.from_pretrained(str(release))
    except (ValueError, KeyError, OSError):
        return raw
    return {**raw, **{name: getattr(config, name, raw.get(name)) for name in _SIZES}}


def _read_mask_token(release: Path) -> str | None:
    """The tokenizer's mask token as saved by ``save_pretrained`` (a string or an AddedToken's ``content``)."""
    for name in TOKENIZER_FILES_WITH_SPECIAL_TOKENS:
        path = release / name
        if not path.is_file():
            continue
        token = read_json(path).get("mask_token")
        if isinstance(token, Mapping):
            token = token.get("content")
        if isinstance(token, str) and token:
            return token
    return None
