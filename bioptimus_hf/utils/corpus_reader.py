"""The one reader of text corpora: plain or gzip-compressed UTF-8, one document or sentence a line, or a prepared
corpus (:mod:`bioptimus_hf.utils.prepared_corpus`, one line a row). Undecodable bytes become U+FFFD, counted and
located as Rust's ``String::from_utf8_lossy`` does (qik-find's two backends count alike); :func:`check_corpus_files`
refuses a file with too many; a truncated or corrupt gzip raises :class:`CorpusFileError` naming the file."""

from __future__ import annotations

import contextlib
import gzip
import os
import tempfile
import zlib
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Iterator

from .prepared_corpus import TEXT_COLUMN, expand_corpus_paths, is_shard_file


# Share of undecodable lines above which a corpus is refused (a binary file, a wrong encoding).
DEFAULT_MAX_UNDECODABLE_FRACTION = 0.05


class CorpusFileError(ValueError):
    """A corpus file that cannot be used: missing, empty, corrupt or not text. The message names the file."""


@dataclass
class CorpusReadStats:
    """What reading one or more corpus files saw (one stats class for every reader)."""

    files: list[str] = field(default_factory=list)
    lines: int = 0
    bytes: int = 0  # decompressed bytes, newlines included
    nonempty_lines: int = 0
    undecodable_lines: int = 0
    replacement_chars: int = 0  # U+FFFD inserted for undecodable byte sequences
    undecodable_examples: list[str] = field(default_factory=list)  # "file:line (byte n)"

    @property
    def undecodable_fraction(self) -> float:
        return self.undecodable_lines / self.lines if self.lines else 0.0

    def summary(self) -> str:
        text = f"{self.nonempty_lines} non-empty lines in {len(self.files)} file(s)"
        if self.undecodable_lines:
            text += (
                f"; {self.undecodable_lines} line(s) ({100 * self.undecodable_fraction:.2f}%) with undecodable "
                f"UTF-8 bytes were kept with U+FFFD replacements (first: {', '.join(self.undecodable_examples)})"
            )
        return text

    def to_dict(self) -> dict:
        data = asdict(self)
        data["undecodable_fraction"] = self.undecodable_fraction
        return data


def decode_lossy(raw: bytes) -> tuple[str, int, int | None]:
    """``(text, replacement count, byte offset of the first bad byte or None)``."""
    try:
        return raw.decode("utf-8"), 0, None
    except UnicodeDecodeError as error:  # CPython's "replace" is the maximal-subpart practice
        text = raw.decode("utf-8", errors="replace")
        return text, text.count("\ufffd") - raw.count("\ufffd".encode()), error.start


def _require_file(path: Path) -> None:
    if not path.is_file():
        raise FileNotFoundError(
            f"corpus file {path} does not exist" if not path.exists() else f"corpus file {path} is not a file"
        )


def iter_lines(
    paths: Iterable[str | os.PathLike],
    stats: CorpusReadStats | None = None,
    *,
    on_bytes: Callable[[int], None] | None = None,
    max_examples: int = 5,
) -> Iterator[str]:
    """Every line of the files in order, decoded, without its line ending (empty lines included). ``stats`` is
    updated as lines are read; ``on_bytes(n)`` is called now and then with the further bytes consumed from disk
    (compressed bytes for ``.gz``), for progress bars."""
    stats = stats if stats is not None else CorpusReadStats()
    for path in expand_corpus_paths(paths):
        _require_file(path)
        stats.files.append(str(path))
        if is_shard_file(path):
            yield from _iter_shard_lines(path, stats, on_bytes)
        else:
            yield from _iter_file_lines(path, stats, on_bytes, max_examples)


def _iter_file_lines(path: Path, stats: CorpusReadStats, on_bytes, max_examples: int) -> Iterator[str]:
    with open(path, "rb") as raw:
        stream = gzip.GzipFile(fileobj=raw, mode="rb") if path.name.endswith(".gz") else raw
        reported = number = 0
        try:
            for number, line in enumerate(stream, start=1):
                stats.lines += 1
                stats.bytes += len(line)
                text, replaced, bad_at = decode_lossy(line)
                if replaced:
                    stats.undecodable_lines += 1
                    stats.replacement_chars += replaced
                    if len(stats.undecodable_examples) < max_examples:
                        stats.undecodable_examples.append(f"{path}:{number} (byte {bad_at})")
                if text.endswith("\n"):
                    text = text[:-2] if text.endswith("\r\n") else text[:-1]
                stats.nonempty_lines += bool(text.strip())
                if on_bytes is not None and number % 256 == 0:
                    on_bytes(raw.tell() - reported)
                    reported = raw.tell()
                yield text
        except (EOFError, gzip.BadGzipFile, zlib.error) as error:
            raise CorpusFileError(
                f"corpus file {path}: corrupt or truncated gzip stream after line {number} ({error})"
            ) from None
        if on_bytes is not None:
            on_bytes(raw.tell() - reported)


def _iter_shard_lines(path: Path, stats: CorpusReadStats, on_bytes: Callable[[int], None] | None) -> Iterator[str]:
    """The ``text`` of each row of a Parquet shard, one line each; ``on_bytes`` is told the file's bytes pro rata."""
    shard = _open_shard(path)
    size, rows, reported, done = path.stat().st_size, max(shard.metadata.num_rows, 1), 0, 0
    for batch in shard.iter_batches(columns=[TEXT_COLUMN], batch_size=4096):
        for text in batch.column(0).to_pylist():
            line = " ".join((text or "").splitlines())
            stats.lines += 1
            stats.bytes += len(line.encode("utf-8")) + 1
            stats.nonempty_lines += bool(line.strip())
            yield line
        done += batch.num_rows
        if on_bytes is not None:
            position = size * done // rows
            on_bytes(position - reported)
            reported = position


def _open_shard(path: Path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        shard = pq.ParquetFile(path)
    except (pa.ArrowException, OSError) as error:
        raise CorpusFileError(f"corpus file {path}: not a readable Parquet file ({error})") from None
    if TEXT_COLUMN not in shard.schema_arrow.names:
        raise CorpusFileError(f"corpus file {path}: no {TEXT_COLUMN!r} column (columns: {shard.schema_arrow.names})")
    return shard


def _shard_stats(path: Path) -> CorpusReadStats:
    rows = _open_shard(path).metadata.num_rows
    return CorpusReadStats(files=[str(path)], lines=rows, nonempty_lines=rows, bytes=path.stat().st_size)


@contextlib.contextmanager
def plain_text_files(paths: Iterable[str | os.PathLike]) -> Iterator[list[Path]]:
    """The corpus as files of plain lines, for a reader of text files only (qik-find's Rust backend): a prepared
    corpus's shards are written as their lines (:func:`iter_lines`, so both readers see the same lines) to temporary
    files under ``TMPDIR``, removed on exit; other files are given as they are."""
    paths = expand_corpus_paths(paths)
    if not any(is_shard_file(p) for p in paths):
        yield paths
        return
    with tempfile.TemporaryDirectory(prefix="bioptimus-corpus-") as directory:
        plain = []
        for number, path in enumerate(paths):
            if not is_shard_file(path):
                plain.append(path)
                continue
            copy = Path(directory) / f"{number:05d}-{path.stem}.txt"
            with open(copy, "w", encoding="utf-8") as out:
                for line in iter_lines([path]):
                    out.write(line + "\n")
            plain.append(copy)
        yield plain


def iter_text_lines(paths: Iterable[str | os.PathLike], stats: CorpusReadStats | None = None) -> Iterator[str]:
    """The stripped, non-blank lines of the files (tokenizer training, sampling)."""
    for line in iter_lines(paths, stats):
        line = line.strip()
        if line:
            yield line


def check_corpus_files(
    paths: Iterable[str | os.PathLike] | str | os.PathLike,
    *,
    max_undecodable_fraction: float = DEFAULT_MAX_UNDECODABLE_FRACTION,
    max_check_bytes: int | None = None,
    what: str = "corpus",
) -> CorpusReadStats:
    """The files read once before any work starts, their statistics returned; a missing or empty file is refused, and
    one whose share of undecodable lines exceeds ``max_undecodable_fraction`` (1.0: no check). ``max_check_bytes``
    reads only the first bytes of each file (corpora too large to read twice, e.g. when streaming)."""
    paths = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    if not paths:
        raise CorpusFileError(f"no {what} files given")
    total = CorpusReadStats()
    for path in expand_corpus_paths(paths):
        _require_file(path)
        if is_shard_file(path):  # Parquet strings are UTF-8 by construction: its schema and row count suffice
            stats = _shard_stats(path)
        else:
            stats = CorpusReadStats()
            for _ in iter_lines([path], stats):
                if max_check_bytes is not None and stats.bytes >= max_check_bytes:
                    break
        if stats.nonempty_lines == 0:
            raise CorpusFileError(f"{what} file {path} is empty (no non-blank line)")
        if stats.undecodable_fraction > max_undecodable_fraction:
            raise CorpusFileError(
                f"{what} file {path}: {stats.undecodable_lines} of {stats.lines} lines read "
                f"({100 * stats.undecodable_fraction:.1f}%) hold bytes that are not UTF-8 (first: "
                f"{', '.join(stats.undecodable_examples)}); it does not look like UTF-8 text. Convert it "
                f"(e.g. iconv -f latin1 -t utf-8) or raise the threshold (now {max_undecodable_fraction:g})"
            )
        total.files += stats.files
        for name in ("lines", "bytes", "nonempty_lines", "undecodable_lines", "replacement_chars"):
            setattr(total, name, getattr(total, name) + getattr(stats, name))
        total.undecodable_examples += stats.undecodable_examples[: 5 - len(total.undecodable_examples)]
    return total
