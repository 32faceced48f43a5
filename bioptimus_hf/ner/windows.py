"""Long sentences split into overlapping windows of whole words, and the windows' predictions merged. Nothing is
truncated silently: a sentence whose sub-tokens do not fit ``max_seq_length`` (less the special tokens) is cut into
windows of whole words overlapping by at most ``stride`` sub-tokens. Each word keeps the prediction of the window in
which it is most central (the largest distance, in words, to the nearer edge; ties to the earlier window): a word
near an edge has lost context on that side. Only a single word with more sub-tokens than a window holds is cut (its
first sub-token, which carries its label, is still predicted): ``WindowStats.words_cut`` counts them.
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
    """Word ranges ``[start, end)`` covering all words, each at most ``budget`` sub-tokens but at least one word;
    each next window starts at the earliest word that keeps the overlap with the previous one at most ``stride``
    sub-tokens, and always after the previous start."""
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
    """For every word of every sentence, ``(window_row, token_position)`` of the sub-token whose prediction the
    merge keeps, or None if the word has no sub-token. ``windows`` may come in any order (e.g. sorted by length):
    the choice depends on the windows, not on their rows."""
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
    """Per-word label ids of each sentence from ``token_predictions[i][k]``, the label id of token ``k`` of window
    ``i``; a word without a sub-token gets ``default`` (the id of ``O``)."""
    return [
        [default if where is None else int(token_predictions[where[0]][where[1]]) for where in sentence]
        for sentence in best_token_positions(windows, sentence_lengths)
    ]
