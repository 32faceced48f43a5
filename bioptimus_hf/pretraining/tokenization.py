"""Pre-training inputs: texts tokenized with the tokenizer's word ids (``BatchEncoding.word_ids()``, kept through
packing to the collator: whole-word masking with no "##" tests, for WordPiece, BPE and SentencePiece alike), and
packing into fixed-length blocks."""

from __future__ import annotations


# Two words: a tokenizer that splits words at spaces gives them two word ids.
WORD_BOUNDARY_PROBE = "alpha beta"


def check_word_boundaries(tokenizer, why: str = "whole-word masking") -> None:
    """Refuse a tokenizer whose word ids do not separate words at spaces (a Metaspace with ``split=False`` makes a
    whole text one word: whole-word masking would mask whole texts)."""
    encoded = tokenizer(WORD_BOUNDARY_PROBE, add_special_tokens=False)
    if len({w for w in encoded.word_ids() if w is not None}) >= 2:
        return
    pre_tokenizer = tokenizer.backend_tokenizer.pre_tokenizer
    raise ValueError(
        f"{why}, but tokenizer {getattr(tokenizer, 'name_or_path', '')!r} gives the whole text "
        f"{WORD_BOUNDARY_PROBE!r} one word id: its pre-tokeniser ({pre_tokenizer.__getstate__().decode() if pre_tokenizer else None}) "
        "does not split words at spaces. Use a curriculum whose phases mask tokens (--curriculum FILE with "
        "masking_unit: token), or a tokenizer whose pre-tokeniser splits at spaces (for SentencePiece: Metaspace "
        "with split=True)"
    )


def tokenize_with_word_ids(
    examples: dict,
    tokenizer,
    text_column: str = "text",
    max_length: int | None = None,
    line_by_line: bool = True,
) -> dict:
    """Tokenize a batch of texts, keeping the tokenizer's word ids (``-1`` on special tokens), for ``datasets.map``.

    Line by line, texts longer than ``max_length`` are chunked into several sequences, not truncated (a ``chunk``
    column counts continuation chunks, 0 for the first); for packing, texts are tokenized whole (:func:`group_texts`).
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
    """Pack tokenized texts into blocks of exactly ``block_size`` tokens (for ``datasets.map``), as ``run_mlm.py``
    does; word ids get a running offset, so two texts never share one inside a block."""
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
