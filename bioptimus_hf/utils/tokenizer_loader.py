"""The one tokenizer loader: every stage needs a *fast* (Rust ``tokenizers``) tokenizer, for word ids (whole-word
masking), character offsets (contextualisation) and the ``tokenizer.json`` pipeline (vocabulary training, qik-find);
a slow one is refused here, once, saying why. :func:`load_backend_tokenizer` of a directory with a ``tokenizer.json``
needs only the ``tokenizers`` library (no transformers, no torch).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any


def load_fast_tokenizer(
    tokenizer: Any,
    *,
    cache_dir: str | None = None,
    revision: str | None = None,
    purpose: str = "word ids and character offsets",
):
    """A ``PreTrainedTokenizerFast`` from a name/path (``AutoTokenizer``) or a tokenizer object (checked)."""
    if isinstance(tokenizer, (str, os.PathLike)):
        from transformers import AutoTokenizer

        kwargs = {"cache_dir": cache_dir, "use_fast": True} | ({"revision": revision} if revision is not None else {})
        try:
            tokenizer = AutoTokenizer.from_pretrained(str(tokenizer), **kwargs)
        except (OSError, ValueError) as error:
            raise ValueError(f"cannot load tokenizer {str(tokenizer)!r}: {error}") from error
    if not getattr(tokenizer, "is_fast", False):
        raise ValueError(
            f"tokenizer {getattr(tokenizer, 'name_or_path', type(tokenizer).__name__)!r} is not a fast (Rust "
            f"`tokenizers`) tokenizer; {purpose} need one (load it with use_fast=True or convert it)"
        )
    return tokenizer


def resolve_backend_tokenizer(tokenizer: Any):
    """The ``tokenizers.Tokenizer`` behind a fast tokenizer, a ``Tokenizer`` or a path (not copied)."""
    from tokenizers import Tokenizer

    if isinstance(tokenizer, (str, os.PathLike)):
        path = Path(tokenizer)
        if path.is_file() and path.suffix == ".json":
            return Tokenizer.from_file(str(path))
        if (path / "tokenizer.json").is_file():
            return Tokenizer.from_file(str(path / "tokenizer.json"))
        if (path / "vocab.txt").is_file():  # a bare BERT vocabulary: build its standard pipeline
            from transformers import BertTokenizerFast

            return BertTokenizerFast.from_pretrained(str(path)).backend_tokenizer
        raise FileNotFoundError(f"{path}: no tokenizer.json or vocab.txt (expected a tokenizer directory)")
    if isinstance(tokenizer, Tokenizer):
        return tokenizer
    if hasattr(tokenizer, "backend_tokenizer"):
        return tokenizer.backend_tokenizer
    raise TypeError(
        f"tokenizer must be a fast (Rust-backed) transformers tokenizer, a tokenizers.Tokenizer or a "
        f"directory path, got {type(tokenizer).__name__}"
    )


def load_backend_tokenizer(tokenizer: Any):
    """A private copy of the ``tokenizers.Tokenizer`` (the caller's keeps its settings) with truncation and padding
    off: some ``tokenizer.json`` files (MiniLM's) truncate at 128 tokens."""
    from tokenizers import Tokenizer

    backend = Tokenizer.from_str(resolve_backend_tokenizer(tokenizer).to_str())
    backend.no_truncation()
    backend.no_padding()
    return backend


def normalize_text(tokenizer: Any, text: str) -> str:
    """``text`` after the tokenizer's normaliser (casing, accents), or unchanged if it has none."""
    normalizer = resolve_backend_tokenizer(tokenizer).normalizer
    return normalizer.normalize_str(text) if normalizer is not None else text
