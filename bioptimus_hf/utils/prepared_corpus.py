"""A prepared corpus on disk (what ``bioptimus prepare-corpus`` writes and every stage reads): a directory of Parquet
shards (``<input stem>.parquet``, columns :data:`TEXT_COLUMN`, ``pmid``...) and ``manifest.json``, written last: the
only list of shards, with their rows and checksums. A directory without one is an unfinished preparation and is
refused; files it does not list are not part of the corpus. Each row's ``text`` is one unit of text without line
breaks, so a shard reads as lines (:func:`bioptimus_hf.utils.corpus_reader.iter_lines`) and as a ``datasets``
``parquet`` corpus.
"""

from __future__ import annotations

import os
from pathlib import Path

from .files import read_json


MANIFEST_NAME = "manifest.json"
MANIFEST_FORMAT = 1
SHARD_SUFFIX = ".parquet"
TEXT_COLUMN = "text"


class PreparedCorpusError(ValueError):
    """A prepared corpus that cannot be read (no manifest, a listed shard missing). The message names the path."""


def is_prepared_corpus_dir(path: str | os.PathLike) -> bool:
    return Path(path).is_dir() and (Path(path) / MANIFEST_NAME).is_file()


def is_shard_file(path: str | os.PathLike) -> bool:
    return str(path).lower().endswith(SHARD_SUFFIX)


def read_manifest(directory: str | os.PathLike) -> dict:
    directory = Path(directory)
    manifest = directory / MANIFEST_NAME
    if not manifest.is_file():
        raise PreparedCorpusError(
            f"{directory} is a directory without {MANIFEST_NAME}: not a finished prepared corpus "
            "(run bioptimus prepare-corpus to the end, or give corpus files)"
        )
    data = read_json(manifest)
    if not isinstance(data, dict) or data.get("format") != MANIFEST_FORMAT or not isinstance(data.get("shards"), list):
        raise PreparedCorpusError(f"{manifest}: not a prepared corpus manifest of format {MANIFEST_FORMAT}")
    return data


def shard_paths(directory: str | os.PathLike) -> list[Path]:
    """The shards of a prepared corpus, in the manifest's order (each checked to exist)."""
    directory = Path(directory)
    paths = [directory / shard["file"] for shard in read_manifest(directory)["shards"] if shard.get("rows")]
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        raise PreparedCorpusError(f"{directory}: shard(s) listed in {MANIFEST_NAME} are missing: {missing[:5]}")
    return paths


def expand_corpus_paths(paths) -> list[Path]:
    """Corpus paths with each prepared-corpus directory replaced by its shards (files are kept as given)."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    expanded: list[Path] = []
    for path in map(Path, paths):
        expanded.extend(shard_paths(path) if path.is_dir() else [path])
    return expanded
