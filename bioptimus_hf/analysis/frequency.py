"""Token frequencies of a corpus under a tokenizer (its own ids, no special tokens added: what the model sees in
training), frequency buckets on a log scale (``[1, 10)``, ``[10, 100)`` ...; bucket 0 the ids never seen), and the
rare and frequent token sets.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np

from ..utils.corpus_reader import iter_text_lines


DEFAULT_BUCKET_EDGES = (1, 10, 100, 1000, 10000)


def token_frequencies(corpus_files: Sequence[str], tokenizer, batch_size: int = 1000) -> np.ndarray:
    """How often each id of ``tokenizer`` occurs in the corpus lines (an array of ``len(tokenizer)`` counts)."""
    counts = np.zeros(len(tokenizer), dtype=np.int64)
    batch: list[str] = []

    def flush():
        ids = tokenizer(batch, add_special_tokens=False)["input_ids"]
        flat = np.fromiter((i for row in ids for i in row), dtype=np.int64)
        counts[:] += np.bincount(flat, minlength=len(counts))[: len(counts)]
        batch.clear()

    for line in iter_text_lines(corpus_files):
        batch.append(line)
        if len(batch) == batch_size:
            flush()
    if batch:
        flush()
    return counts


@dataclass(frozen=True)
class FrequencyBucket:
    low: int  # smallest count in the bucket
    high: int | None  # first count past it (None: unbounded)
    token_ids: tuple[int, ...]

    @property
    def label(self) -> str:
        if self.high is not None and self.low == 0 and self.high == 1:
            return "unseen"
        return f"[{self.low}, {self.high})" if self.high is not None else f">= {self.low}"


def frequency_buckets(
    counts: np.ndarray, edges: Sequence[int] = DEFAULT_BUCKET_EDGES, exclude: Iterable[int] = ()
) -> list[FrequencyBucket]:
    """Ids grouped by count: ``[0, e0)``, ``[e0, e1)`` ... ``[e_last, inf)``; ``exclude`` (special ids) left out."""
    edges = list(edges)
    if edges != sorted(set(edges)) or (edges and edges[0] < 1):
        raise ValueError(f"bucket edges must be increasing counts >= 1, got {edges}")
    excluded = {int(i) for i in exclude}
    bounds, buckets = [0] + edges, []
    for low, high in zip(bounds, bounds[1:] + [None]):
        in_bucket = (counts >= low) & (counts < high) if high is not None else counts >= low
        buckets.append(
            FrequencyBucket(low, high, tuple(int(i) for i in np.nonzero(in_bucket)[0] if i not in excluded))
        )
    return buckets


def rare_and_frequent(
    counts: np.ndarray, exclude: Iterable[int] = (), fraction: float = 0.2, candidates: Iterable[int] | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(rare ids, frequent ids): the ``fraction`` least and most frequent of the seen ids (count >= 1), ties broken
    by id; ``candidates`` restricts the ranking (e.g. to ids that occur in an encoded sample)."""
    if not 0 < fraction <= 0.5:
        raise ValueError(f"fraction must be in (0, 0.5], got {fraction}")
    excluded = {int(i) for i in exclude}
    pool = np.arange(len(counts)) if candidates is None else np.fromiter(candidates, dtype=np.int64)
    seen = np.array([i for i in pool if counts[i] > 0 and int(i) not in excluded], dtype=np.int64)
    if len(seen) < 2:
        raise ValueError(f"need at least 2 seen tokens to split rare from frequent, got {len(seen)}")
    order = seen[np.lexsort((seen, counts[seen]))]  # by count, then id
    size = max(1, int(len(order) * fraction))
    return order[:size], order[-size:]
