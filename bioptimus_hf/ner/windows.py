"""Splitting long sentences into overlapping windows of whole words, and merging window predictions.

Nothing is truncated silently. A sentence whose sub-tokens do not fit ``max_seq_length`` (minus the
special tokens) is cut into windows of whole words; consecutive windows overlap by at most ``stride``
sub-tokens. Every word is predicted once per window that holds it; the merge keeps, for each word,
the prediction from the window in which the word is **most central** (largest distance to the
nearer window edge, counted in words; ties go to the earlier window), because a word near a window
edge has lost context on that side.

The one thing that cannot be windowed is a single word with more sub-tokens than a window holds;
its trailing sub-tokens are dropped. Only a word's first sub-token carries its label, so its
prediction is still made; such words are counted in ``WindowStats.words_cut``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Dict, List, Sequence, Tuple


@dataclass
class Window:
    sentence: int  # index of the sentence in its split
    start: int  # first word (inclusive)
    end: int  # last word (exclusive)
    first_token: List[int]  # per word of the window: position of its first sub-token, -1 if it has none


@dataclass
class WindowStats:
    sentences: int = 0
    windows: int = 0
    sentences_split: int = 0  # sentences that needed more than one window
    words_cut: int = 0  # single words longer than a window (trailing sub-tokens dropped)

    def as_dict(self) -> Dict[str, int]:
        return asdict(self)


def plan_windows(word_lengths: Sequence[int], budget: int, stride: int) -> List[Tuple[int, int]]:
    """Word ranges ``[start, end)`` covering all words, each at most ``budget`` sub-tokens.

    A window always holds at least one word (a longer single word is cut later). Each next window
    starts at the earliest word such that the overlap with the previous window is at most ``stride``
    sub-tokens, but always after the previous start, so the plan always advances.
    """
    if budget < 1:
        raise ValueError(f"window budget must be at least 1 sub-token, got {budget}")
    if stride < 0 or stride >= budget:
        raise ValueError(f"stride must be in [0, {budget}) sub-tokens (the window size), got {stride}")
    count = len(word_lengths)
    if count == 0:
        return []
    windows = []
    start = 0
    while True:
        end, used = start, 0
        while end < count and (end == start or used + word_lengths[end] <= budget):
            used += word_lengths[end]
            end += 1
        windows.append((start, end))
        if end >= count:
            return windows
        next_start, overlap = end, 0
        while next_start - 1 > start and overlap + word_lengths[next_start - 1] <= stride:
            next_start -= 1
            overlap += word_lengths[next_start]
        start = next_start


def centrality(window: Tuple[int, int], word: int) -> int:
    """How far ``word`` is from the nearer edge of ``window`` (in words)."""
    start, end = window
    return min(word - start, end - 1 - word)


def best_token_positions(
    windows: Sequence[Window], sentence_lengths: Sequence[int]
) -> List[List[Tuple[int, int] | None]]:
    """For every word of every sentence, ``(window_row, token_position)`` of the sub-token whose
    prediction the merge keeps (the most central window; ties to the window starting earlier in the
    sentence), or None if the word has no sub-token at all. ``windows`` may come in any order (e.g.
    sorted by length): the choice depends only on the windows, not on their rows."""
    chosen: List[List[Tuple[int, int] | None]] = [[None] * length for length in sentence_lengths]
    best = [[(-1, 0)] * length for length in sentence_lengths]
    for row, window in enumerate(windows):
        for offset, token_position in enumerate(window.first_token):
            if token_position < 0:
                continue
            word = window.start + offset
            score = (centrality((window.start, window.end), word), -window.start)
            if score > best[window.sentence][word]:
                best[window.sentence][word] = score
                chosen[window.sentence][word] = (row, token_position)
    return chosen


def merge_window_predictions(
    windows: Sequence[Window],
    token_predictions: Sequence[Sequence[int]],
    sentence_lengths: Sequence[int],
    default: int,
) -> List[List[int]]:
    """Per-word predictions for each sentence from per-token window predictions.

    ``token_predictions[i][k]`` is the predicted label id of token ``k`` of window ``i``. Words that
    have no sub-token get ``default`` (the id of ``O``).
    """
    return [
        [default if where is None else int(token_predictions[where[0]][where[1]]) for where in sentence]
        for sentence in best_token_positions(windows, sentence_lengths)
    ]
