"""Text corpora for pre-training: validation, tokenization with word ids, packing into blocks.

Undecodable bytes are **replaced and counted** (U+FFFD), not fatal: biomedical dumps often hold a
few bad bytes and losing a whole run to one of them helps nobody. :func:`check_text_files` reports
how many lines were affected and where the first ones are (file and line), before training starts.
"""

from __future__ import annotations

import gzip
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

logger = logging.getLogger(__name__)


@dataclass
class CorpusCheck:
    """What :func:`check_text_files` found."""

    files: list[str]
    lines: int = 0
    nonempty_lines: int = 0
    undecodable_lines: int = 0
    undecodable_examples: list[str] = field(default_factory=list)

    def summary(self) -> str:
        text = f"{self.nonempty_lines} non-empty lines in {len(self.files)} file(s)"
        if self.undecodable_lines:
            text += (
                f"; {self.undecodable_lines} line(s) with undecodable UTF-8 bytes were kept with U+FFFD replacements "
                f"(first: {', '.join(self.undecodable_examples)})"
            )
        return text


def _open_binary(path: str):
    return gzip.open(path, "rb") if str(path).endswith(".gz") else open(path, "rb")


def check_text_files(paths: Iterable[str | os.PathLike], max_examples: int = 5) -> CorpusCheck:
    """Fail early on missing or empty corpora; count lines with undecodable bytes."""
    paths = [str(p) for p in paths]
    if not paths:
        raise ValueError("no corpus files given (--train_file)")
    report = CorpusCheck(files=paths)
    for path in paths:
        if not Path(path).is_file():
            raise FileNotFoundError(f"corpus file {path} does not exist")
        nonempty_before = report.nonempty_lines
        with _open_binary(path) as handle:
            for number, raw in enumerate(handle, start=1):
                report.lines += 1
                try:
                    text = raw.decode("utf-8")
                except UnicodeDecodeError as error:
                    report.undecodable_lines += 1
                    if len(report.undecodable_examples) < max_examples:
                        report.undecodable_examples.append(f"{path}:{number} (byte {error.start})")
                    text = raw.decode("utf-8", errors="replace")
                if text.strip():
                    report.nonempty_lines += 1
        if report.nonempty_lines == nonempty_before:
            raise ValueError(f"corpus file {path} is empty (no non-blank lines)")
    return report


def tokenize_with_word_ids(
    examples: dict,
    tokenizer,
    text_column: str = "text",
    max_length: int | None = None,
    line_by_line: bool = True,
) -> dict:
    """Tokenize a batch of texts, keeping word ids from the tokenizer (for ``datasets.map``).

    Line by line, texts longer than ``max_length`` are **chunked** into several sequences rather
    than truncated (a ``chunk`` column counts continuation chunks, 0 for the first). For packing
    (``line_by_line=False``) texts are tokenized whole and :func:`group_texts` cuts the blocks.
    Word ids are ``-1`` on special tokens.
    """
    if not getattr(tokenizer, "is_fast", False):
        raise ValueError(
            f"tokenizer {getattr(tokenizer, 'name_or_path', '')} is not a fast tokenizer; word ids (needed for "
            "whole-word masking) come from fast tokenizers (use_fast=True)"
        )
    texts = [t for t in examples[text_column] if t is not None and t.strip()]
    if line_by_line:
        encoded = tokenizer(
            texts,
            truncation=True,
            max_length=max_length,
            return_overflowing_tokens=True,
            return_special_tokens_mask=True,
        )
        origins = encoded["overflow_to_sample_mapping"]
        chunks, previous, count = [], None, 0
        for origin in origins:
            count = count + 1 if origin == previous else 0
            chunks.append(count)
            previous = origin
    else:
        encoded = tokenizer(texts, return_special_tokens_mask=True, verbose=False)
        chunks = [0] * len(encoded["input_ids"])
    word_ids = [[-1 if w is None else w for w in encoded.word_ids(i)] for i in range(len(encoded["input_ids"]))]
    return {
        "input_ids": encoded["input_ids"],
        "special_tokens_mask": encoded["special_tokens_mask"],
        "word_ids": word_ids,
        "chunk": chunks,
    }


def group_texts(examples: dict, block_size: int) -> dict:
    """Pack tokenized texts into blocks of exactly ``block_size`` tokens (for ``datasets.map``).

    Texts are concatenated in order, each keeping its own [CLS] ... [SEP] (so sequence boundaries
    stay visible to the model as [SEP] tokens) and blocks are cut every ``block_size`` tokens; the
    remainder of a map batch shorter than a block is dropped, as in ``run_mlm.py``. Word ids are
    renumbered with a running offset so that two texts never share a word id inside a block, which
    keeps whole-word masking exact after packing. A block may start inside a word; that word piece
    is then masked as a unit of its own.
    """
    input_ids, special, word_ids = [], [], []
    offset = 0
    for ids, mask, words in zip(examples["input_ids"], examples["special_tokens_mask"], examples["word_ids"]):
        input_ids.extend(ids)
        special.extend(mask)
        top = -1
        for w in words:
            if w >= 0:
                word_ids.append(w + offset)
                top = max(top, w)
            else:
                word_ids.append(-1)
        offset += top + 1
    total = (len(input_ids) // block_size) * block_size
    return {
        "input_ids": [input_ids[i : i + block_size] for i in range(0, total, block_size)],
        "special_tokens_mask": [special[i : i + block_size] for i in range(0, total, block_size)],
        "word_ids": [word_ids[i : i + block_size] for i in range(0, total, block_size)],
    }
