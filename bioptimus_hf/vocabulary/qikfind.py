"""qik-find: sample, for each token of a new vocabulary, a few corpus sentences in which the new tokenizer produces
it, with the token's span (:func:`find_contexts`). Two backends with identical output (docs/qikfind.md): ``"rust"``
(``bioptimus_hf._qikfind``; BERT WordPiece and byte-level BPE only, else ``UnsupportedTokenizerError``) and
``"python"``, this module; ``backend="auto"`` takes Rust where it can, else Python with one log line saying why."""

from __future__ import annotations

import gc
import heapq
import logging
import os
import re
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator, NamedTuple, Sequence

from ..utils.corpus_reader import CorpusReadStats, iter_lines, plain_text_files
from ..utils.prepared_corpus import expand_corpus_paths
from ..utils.progress import progress_bar, progress_enabled
from ..utils.tokenizer_loader import load_backend_tokenizer, resolve_backend_tokenizer
from . import _sentence_classes


logger = logging.getLogger(__name__)

_MASK64 = (1 << 64) - 1


class UnsupportedTokenizerError(ValueError):
    """A valid tokenizer that the Rust backend cannot reproduce exactly (a family it does not implement, or a part
    or option of a served family: docs/qikfind.md lists them); ``family`` names the family, ``reason`` what is not
    reproduced. The extension raises this class (``rust/bindings/python/src/error.rs``); ``backend="auto"`` then
    falls back to the Python backend, ``backend="rust"`` lets it propagate."""

    def __init__(self, message: str, family: str | None = None, reason: str | None = None):
        super().__init__(message)
        self.family = family
        self.reason = reason


def _characters(runs) -> str:
    return "".join(chr(c) for first, last, step in runs for c in range(first, last + 1, step))


# The splitter's character classes come from the generated table that the Rust backend compiles in too, so that
# neither backend depends on its own Unicode version (Python's str.isspace() also accepts U+001C..U+001F).
WHITESPACE = _characters(_sentence_classes.WHITE_SPACE)
# What may start a sentence: Unicode Uppercase (of the table's pinned version) or an ASCII digit.
_SENTENCE_STARTS = frozenset(_characters(_sentence_classes.UPPERCASE) + "0123456789")
_SENTENCE_END = re.compile(r"[.!?][" + re.escape(WHITESPACE) + "]+")


class Context(NamedTuple):
    """One sampled context: ``sentence[start:end]`` is the surface of the token (code point offsets)."""

    sentence: str
    start: int
    end: int
    sentence_index: int


@dataclass
class QikFindStats:
    """What a scan read; ``find_contexts(..., return_stats=True)`` returns it with the contexts."""

    backend: str = "python"
    files: int = 0
    lines: int = 0
    bytes: int = 0  # decompressed bytes of text read
    sentences: int = 0  # (chunk-)sentences scanned, i.e. the next sentence_index
    replacement_chars: int = 0  # U+FFFD inserted for undecodable byte sequences
    chunked_sentences: int = 0  # sentences longer than max_context_chars that were cut
    candidate_sentences: int = 0  # sentences fully tokenized (rust: those passing the prefilter)
    seconds: float = 0.0


@dataclass(frozen=True)
class FindOptions:
    """What a search samples (the fields of the extension's ``FindOptions``): up to ``max_per_token`` sentences per
    token, by the priorities of ``seed``, sentences longer than ``max_context_chars`` code points cut into chunks,
    on ``num_threads`` threads of the Rust backend (None: all)."""

    max_per_token: int = 20
    seed: int = 0
    max_context_chars: int = 1000
    num_threads: int | None = None

    def __post_init__(self):
        if self.max_per_token < 0:
            raise ValueError(f"max_per_token must be >= 0, got {self.max_per_token}")
        if self.max_context_chars < 1:
            raise ValueError(f"max_context_chars must be >= 1, got {self.max_context_chars}")
        if not 0 <= self.seed < 2**64:
            raise ValueError(f"seed must be in [0, 2**64), got {self.seed}")


# --------------------------------------------------------------------------------------------------
# Sampling


def splitmix64(x: int) -> int:
    """SplitMix64 finaliser (Steele et al.), all arithmetic mod 2**64."""
    z = (x + 0x9E3779B97F4A7C15) & _MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
    return z ^ (z >> 31)


def sample_priority(seed: int, token_id: int, sentence_index: int) -> int:
    """Random but reproducible rank of a sentence for a token; the smallest ``m`` are kept."""
    return splitmix64(splitmix64((seed + token_id) & _MASK64) ^ sentence_index)


class _BottomK:
    """Keeps the ``k`` items with the smallest (priority, sentence_index) in a bounded max-heap."""

    __slots__ = ("k", "heap")

    def __init__(self, k: int):
        self.k = k
        self.heap: list[tuple[int, int, Context]] = []  # (-priority, -sentence_index, context)

    def would_accept(self, priority: int, sentence_index: int) -> bool:
        if self.k == 0:
            return False
        if len(self.heap) < self.k:
            return True
        worst_priority, worst_index = -self.heap[0][0], -self.heap[0][1]
        return (priority, sentence_index) < (worst_priority, worst_index)

    def push(self, priority: int, context: Context) -> None:
        item = (-priority, -context.sentence_index, context)
        if len(self.heap) < self.k:
            heapq.heappush(self.heap, item)
        else:
            heapq.heapreplace(self.heap, item)

    def sorted_contexts(self) -> list[Context]:
        return sorted((item[2] for item in self.heap), key=lambda c: c.sentence_index)


# --------------------------------------------------------------------------------------------------
# Reading and sentence splitting


def _iter_lines(paths: list[Path], stats: QikFindStats, progress) -> Iterator[str]:
    """The shared corpus reader, its counts mirrored into the search's stats (as the Rust backend reports them)."""
    read = CorpusReadStats()
    on_bytes = progress.update if progress is not None else None
    try:
        yield from iter_lines(paths, read, on_bytes=on_bytes)
    finally:
        stats.files = len(read.files)
        stats.lines = read.lines
        stats.bytes = read.bytes
        stats.replacement_chars = read.replacement_chars


def _chunk(sentence: str, max_chars: int) -> list[str]:
    """Cut a stripped sentence into stripped chunks of at most ``max_chars`` code points at whitespace."""
    chunks = []
    rest = sentence
    while len(rest) > max_chars:
        # Longest prefix of <= max_chars code points that ends just before a whitespace character.
        cut = max_chars
        while cut > 0 and rest[cut] not in WHITESPACE:
            cut -= 1
        if cut == 0:
            cut = max_chars  # no whitespace: hard cut
        chunk = rest[:cut].strip(WHITESPACE)
        if chunk:
            chunks.append(chunk)
        rest = rest[cut:].lstrip(WHITESPACE)
    if rest:
        chunks.append(rest)
    return chunks


def split_sentences(line: str, max_context_chars: int = 1000) -> tuple[list[str], int]:
    """Sentences (and chunks of over-long sentences) of one line, and how many sentences were chunked."""
    if max_context_chars < 1:
        raise ValueError(f"max_context_chars must be >= 1, got {max_context_chars}")
    pieces = []
    start = 0
    for match in _SENTENCE_END.finditer(line):
        following = line[match.end() : match.end() + 1]
        if following in _SENTENCE_STARTS:
            pieces.append(line[start : match.start() + 1])
            start = match.end()
    pieces.append(line[start:])
    sentences = []
    chunked = 0
    for piece in pieces:
        piece = piece.strip(WHITESPACE)
        if not piece:
            continue
        if len(piece) > max_context_chars:
            chunked += 1
            sentences.extend(_chunk(piece, max_context_chars))
        else:
            sentences.append(piece)
    return sentences, chunked


# --------------------------------------------------------------------------------------------------
# Backends


# Above this corpus size the pure-Python backend's slowness is worth one log line (docs/qikfind.md).
PYTHON_BACKEND_NOTICE_BYTES = 4_000_000
PYTHON_BACKEND_NOTICE = (
    "qik-find: searching %.1f MB with the pure-Python backend because the Rust extension bioptimus_hf._qikfind "
    "is not built, or is an older build (pip installs without it when no Rust toolchain is found); the "
    "extension is about 14x faster on 1 thread and 21x on 2 (docs/qikfind.md). To build it: install Rust (https://rustup.rs), then "
    "`pip install --force-reinstall --no-deps .` in the bioptimus-hf checkout."
)


def rust_available() -> bool:
    """Whether the extension imports and is this version's (a stale build without ``Tokenizer`` counts as absent)."""
    try:
        from bioptimus_hf import _qikfind
    except ImportError:
        return False
    return hasattr(_qikfind, "Tokenizer")


def _python_backend(paths, backend_tokenizer, targets, options: FindOptions, progress, stats):
    backend_tokenizer = load_backend_tokenizer(backend_tokenizer)  # no truncation, caller's settings untouched
    samplers = {t: _BottomK(options.max_per_token) for t in targets}
    batch: list[tuple[int, str]] = []

    def flush():
        if not samplers:  # nothing to look for: only the counts matter
            batch.clear()
            return
        encodings = backend_tokenizer.encode_batch([s for _, s in batch], add_special_tokens=False)
        for (index, sentence), encoding in zip(batch, encodings):
            seen = set()
            for token_id, (start, end) in zip(encoding.ids, encoding.offsets):
                if token_id in samplers and token_id not in seen:
                    seen.add(token_id)
                    priority = sample_priority(options.seed, token_id, index)
                    sampler = samplers[token_id]
                    if sampler.would_accept(priority, index):
                        sampler.push(priority, Context(sentence, start, end, index))
        stats.candidate_sentences += len(batch)
        batch.clear()

    for line in _iter_lines(paths, stats, progress):
        sentences, chunked = split_sentences(line, options.max_context_chars)
        stats.chunked_sentences += chunked
        for sentence in sentences:
            batch.append((stats.sentences, sentence))
            stats.sentences += 1
        if len(batch) >= 4096:
            flush()
    if batch:
        flush()
    return {t: samplers[t].sorted_contexts() for t in targets}


# One line per search, at start: which family the Rust backend serves, or why the Python backend is used.
RUST_FAMILY_NOTICE = "qik-find: Rust backend, tokenizer family %s (%s)"
RUST_UNSUPPORTED_NOTICE = (
    "qik-find: using the Python backend: the Rust backend does not reproduce this tokenizer (family %s): %s"
)


def _rust_tokenizer(backend_tokenizer):
    """The extension's tokenizer for a ``tokenizers.Tokenizer``; UnsupportedTokenizerError if no family fits."""
    from bioptimus_hf import _qikfind

    return _qikfind.Tokenizer(backend_tokenizer.to_str())


def _rust_backend(paths, rust_tokenizer, targets, options: FindOptions, progress, stats):
    from bioptimus_hf import _qikfind

    callback = None
    if progress is not None:
        reported = 0

        def callback(total_bytes_done: int):
            nonlocal reported
            progress.update(total_bytes_done - reported)
            reported = total_bytes_done

    # The result is up to targets x max_per_token new tuples in one go: with the collector on, they trigger
    # collections of the whole process (a tenth of a second with torch loaded, every other call), for
    # objects that cannot form cycles. It runs again, as usual, once they exist.
    rust_options = _qikfind.FindOptions(**{**asdict(options), "num_threads": options.num_threads or 0})
    collecting = gc.isenabled()
    gc.disable()
    try:
        raw, raw_stats = _qikfind.find_contexts(
            [str(p) for p in paths], rust_tokenizer, list(targets), rust_options, progress=callback
        )
        contexts = {t: [Context(*c) for c in raw.get(t, [])] for t in targets}
    finally:
        if collecting:
            gc.enable()
    for key, value in raw_stats.items():
        setattr(stats, key, value)
    return contexts


def find_contexts(
    corpus_paths: Iterable[str | os.PathLike] | str | os.PathLike,
    tokenizer,
    target_ids: Iterable[int],
    options: FindOptions | None = None,
    *,
    backend: str = "auto",
    progress: bool = True,
    return_stats: bool = False,
):
    """Sample up to ``options.max_per_token`` sentences per target token id (:class:`FindOptions`).

    Returns ``{token_id: [Context, ...]}`` sorted by sentence index, or ``(contexts, QikFindStats)`` when
    ``return_stats`` (also kept in ``find_contexts.last_stats``). ``progress``: a bar of the bytes read."""
    options = options or FindOptions()
    paths = _corpus_files(corpus_paths)
    targets = list(dict.fromkeys(int(t) for t in target_ids))
    # Not copied: the Rust side only reads its JSON (and never truncates); the python backend copies it.
    backend_tokenizer = resolve_backend_tokenizer(tokenizer)
    vocab_size = backend_tokenizer.get_vocab_size(with_added_tokens=True)
    bad = [t for t in targets if not 0 <= t < vocab_size]
    if bad:
        raise ValueError(f"target ids outside the tokenizer's vocabulary (size {vocab_size}): {bad[:10]}")
    backend, rust_tokenizer = _choose_backend(backend, paths, backend_tokenizer)

    bar = None  # None: the Rust backend is given no callback to report to
    if progress_enabled(progress):
        bar = progress_bar(
            total=sum(p.stat().st_size for p in paths), unit="B", unit_scale=True, desc=f"qik-find ({backend})"
        )
    stats = QikFindStats(backend=backend)
    started = time.perf_counter()
    try:
        if backend == "rust":
            with plain_text_files(paths) as text_paths:  # the extension reads text files: shards as their lines
                contexts = _rust_backend(text_paths, rust_tokenizer, targets, options, bar, stats)
        else:
            contexts = _python_backend(paths, backend_tokenizer, targets, options, bar, stats)
    finally:
        if bar is not None:
            bar.close()
    stats.seconds = time.perf_counter() - started
    find_contexts.last_stats = stats
    return (contexts, stats) if return_stats else contexts


find_contexts.last_stats = None


def _corpus_files(corpus_paths: Iterable[str | os.PathLike] | str | os.PathLike) -> list[Path]:
    """The files to read: one file given bare, a list, or a prepared corpus's directory (its shards); each must
    exist."""
    if isinstance(corpus_paths, (str, os.PathLike)):
        corpus_paths = [corpus_paths]  # one file given bare
    paths = expand_corpus_paths(corpus_paths)  # a prepared corpus's directory: its shards
    for path in paths:
        if not path.is_file():
            raise FileNotFoundError(f"corpus file not found: {path}")
    return paths


def _choose_backend(backend: str, paths: Sequence[Path], backend_tokenizer) -> tuple[str, Any]:
    """The backend that runs (``auto``: Rust when built and its families reproduce the tokenizer, else Python) and
    the Rust side's tokenizer (None for Python); an explicit ``rust`` that cannot run is refused."""
    if backend not in ("auto", "rust", "python"):
        raise ValueError(f"backend must be 'auto', 'rust' or 'python', got {backend!r}")
    requested = backend
    if backend == "auto":
        backend = "rust" if rust_available() else "python"
        corpus_bytes = sum(p.stat().st_size for p in paths)
        if backend == "python" and corpus_bytes > PYTHON_BACKEND_NOTICE_BYTES:
            logger.warning(PYTHON_BACKEND_NOTICE, corpus_bytes / 1e6)
    elif backend == "rust" and not rust_available():
        raise ImportError(
            "backend='rust' but the bioptimus_hf._qikfind extension is not built (or is an older build): install "
            "cargo and run `pip install -e .` (see docs/qikfind.md), or use backend='python'"
        )
    if backend != "rust":
        return backend, None
    # Loading the tokenizer says whether a family of the Rust backend reproduces it, before any reading.
    try:
        rust_tokenizer = _rust_tokenizer(backend_tokenizer)
    except UnsupportedTokenizerError as error:
        if requested != "auto":
            raise
        logger.warning(RUST_UNSUPPORTED_NOTICE, error.family or "unknown", error.reason or error)
        return "python", None
    logger.info(RUST_FAMILY_NOTICE, rust_tokenizer.family, rust_tokenizer.family_description)
    return backend, rust_tokenizer
