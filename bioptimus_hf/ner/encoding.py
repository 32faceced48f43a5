"""NER sentences tokenized into model windows (:mod:`.windows`) with word-aligned labels: each word's label (in the
training scheme) goes on its first sub-token, the others get -100, ignored by the loss; with ``label_all_tokens`` they
get the word's label too, a ``B-X`` word continuing with ``I-X`` (as in transformers' token-classification example).
Evaluation reads first sub-tokens only either way.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Dict, List, Sequence

from datasets import Dataset

from .conll import Sentence
from .schemes import spans_to_tags
from .windows import Window, WindowStats, plan_windows


IGNORE_INDEX = -100


@dataclass
class EncodedSplit:
    """Tokenized windows as plain lists (``columns``: input_ids, attention_mask, ... [, labels]; as a
    ``datasets.Dataset``: ``dataset``), one row per window, and the sentences they came from."""

    columns: Dict[str, List[List[int]]]
    windows: List[Window]
    stats: WindowStats
    sentence_lengths: List[int]

    @cached_property
    def dataset(self) -> Dataset:
        return Dataset.from_dict(self.columns)


def word_lengths(tokenizer, sentences: Sequence[Sequence[str]]) -> List[List[int]]:
    """Number of sub-tokens of every word of every sentence (no special tokens)."""
    if not sentences:  # the tokenizer would read an empty batch as one empty sentence
        return []
    encoded = tokenizer([list(words) for words in sentences], is_split_into_words=True, add_special_tokens=False)
    lengths = []
    for index, words in enumerate(sentences):
        counts = [0] * len(words)
        for word_id in encoded.word_ids(index):
            if word_id is not None:
                counts[word_id] += 1
        lengths.append(counts)
    return lengths


def tokenize_windows(
    tokenizer,
    token_lists: Sequence[Sequence[str]],
    max_seq_length: int,
    stride: int,
    label_lists: Sequence[Sequence[str]] | None = None,
    label2id: Dict[str, int] | None = None,
    label_all_tokens: bool = False,
) -> EncodedSplit:
    """Sentences windowed and tokenized, with their labels where ``label_lists`` are given."""
    if not getattr(tokenizer, "is_fast", True):
        raise ValueError("NER windowing needs a fast tokenizer (word_ids); load it with use_fast=True")
    budget = max_seq_length - tokenizer.num_special_tokens_to_add(pair=False)
    stats = WindowStats(sentences=len(token_lists))
    windows: List[Window] = []
    window_words: List[List[str]] = []
    for index, lengths in enumerate(word_lengths(tokenizer, token_lists)):
        plan = plan_windows(lengths, budget, stride)
        stats.sentences_split += len(plan) > 1
        stats.words_cut += sum(length > budget for length in lengths)
        for start, end in plan:
            windows.append(Window(index, start, end, []))
            window_words.append(list(token_lists[index][start:end]))
    stats.windows = len(windows)
    sentence_lengths = [len(t) for t in token_lists]

    if not windows:  # nothing to tokenize (only empty sentences); an empty list would read as one sentence
        columns = {"input_ids": [], "attention_mask": []} | ({"labels": []} if label_lists is not None else {})
        return EncodedSplit(columns, windows, stats, sentence_lengths)
    encoded = tokenizer(window_words, is_split_into_words=True, truncation=True, max_length=max_seq_length)
    all_labels = []
    for row, window in enumerate(windows):
        word_ids = encoded.word_ids(row)
        first_token = [-1] * (window.end - window.start)
        for position, word_id in enumerate(word_ids):
            if word_id is not None and first_token[word_id] < 0:
                first_token[word_id] = position
        window.first_token = first_token
        if label_lists is None:
            continue
        tags = label_lists[window.sentence][window.start : window.end]
        labels = []
        previous = None
        for word_id in word_ids:
            if word_id is None:
                labels.append(IGNORE_INDEX)
            elif word_id != previous:
                labels.append(label2id[tags[word_id]])
            elif label_all_tokens:
                tag = tags[word_id]
                labels.append(
                    label2id["I-" + tag[2:]] if tag.startswith("B-") and "I-" + tag[2:] in label2id else label2id[tag]
                )
            else:
                labels.append(IGNORE_INDEX)
            previous = word_id
        all_labels.append(labels)
    columns = {key: encoded[key] for key in encoded.keys()}
    if label_lists is not None:
        columns["labels"] = all_labels
    return EncodedSplit(columns, windows, stats, sentence_lengths)


def length_order(lengths: Sequence[int]) -> List[int]:
    """Row order longest first (stable), so that consecutive rows batch with little padding."""
    return sorted(range(len(lengths)), key=lambda row: -lengths[row])


def encode_split(
    tokenizer,
    sentences: Sequence[Sentence],
    scheme: str,
    label2id: Dict[str, int],
    max_seq_length: int,
    stride: int,
    label_all_tokens: bool = False,
    sort_by_length: bool = False,
) -> EncodedSplit:
    """Gold sentences encoded with labels re-encoded from their gold spans into the training ``scheme``. With
    ``sort_by_length`` the rows (and ``windows``, in the same order) go longest first, so that sequential prediction
    batches are padded little; the merge does not depend on row order."""
    tags = [spans_to_tags(s.spans, len(s.tokens), scheme) for s in sentences]
    tokens = [s.tokens for s in sentences]
    encoded = tokenize_windows(tokenizer, tokens, max_seq_length, stride, tags, label2id, label_all_tokens)
    if sort_by_length and encoded.windows:
        order = length_order([len(ids) for ids in encoded.columns["input_ids"]])
        encoded.columns = {key: [values[row] for row in order] for key, values in encoded.columns.items()}
        encoded.windows = [encoded.windows[row] for row in order]
    return encoded
