"""The pre-training corpus as `datasets`: checked, split, tokenized with word ids and packed into blocks.

:func:`check_pretraining_data` runs before any model is loaded (bad input fails in seconds, naming the
file); :func:`load_pretraining_datasets` then builds the train and held-out datasets the way
``run_mlm.py`` does (``datasets.map`` with caching and workers, or streaming), keeping the columns the
curriculum collator needs (``word_ids``, ``special_tokens_mask``).
"""

from __future__ import annotations

import logging
import math
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from ..utils.corpus_reader import CorpusFileError, CorpusReadStats, check_corpus_files
from ..utils.prepared_corpus import expand_corpus_paths, is_prepared_corpus_dir, read_manifest
from .bioptimus_config import CORPUS_BUILDERS, DEFAULT_SHUFFLE_BUFFER_SIZE, PretrainingDataArguments
from .tokenization import group_texts, tokenize_with_word_ids


logger = logging.getLogger(__name__)

# With --streaming a corpus may be far larger than memory or patience: check the start of each file only.
STREAMING_CHECK_BYTES = 64 * 1024 * 1024


def corpus_builder(files: list[str], flag: str = "--train_file") -> str:
    """The one `datasets` builder (text, json or csv) that reads all ``files``; mixtures are refused."""
    kinds = {}
    for file in files:
        suffix = Path(file).suffix.lower()
        if suffix not in CORPUS_BUILDERS:
            raise CorpusFileError(
                f"{flag} {file}: unknown corpus file type {suffix or '(no suffix)'!r}; expected one of "
                f"{sorted(CORPUS_BUILDERS)}"
            )
        kinds.setdefault(CORPUS_BUILDERS[suffix], []).append(file)
    if len(kinds) > 1:
        listing = "; ".join(f"{kind}: {', '.join(names)}" for kind, names in kinds.items())
        raise CorpusFileError(f"{flag} mixes corpus kinds ({listing}); give files of one kind per run")
    return next(iter(kinds))


def corpus_files(files: list[str] | None) -> list[str]:
    """``--train_file``/``--validation_file`` values with each prepared corpus directory replaced by its shards."""
    return [str(path) for path in expand_corpus_paths(files or [])]


def text_corpus_files(data_args: PretrainingDataArguments) -> list[str]:
    """The training files read as lines (text or a prepared corpus's shards): what the context search of the
    initialisation reads by default."""
    files = corpus_files(data_args.train_file)
    return files if files and corpus_builder(files) in ("text", "parquet") else []


@contextmanager
def init_corpus(config: Any, train: Any) -> Iterator[None]:
    """``config.init_corpus_files`` while the start model is built: as given; else, with ``--max_train_samples N``
    and a map-style ``train`` split, its first N rows (the sentences the sample trains on; a packed block holds
    one or more of them) in a temporary file, removed after; else the training text files."""
    given = config.init_corpus_files
    if given or config.max_train_samples is None or not hasattr(train, "select"):
        config.init_corpus_files = given or text_corpus_files(config)
        yield
        return
    rows = train.select(range(min(len(train), config.max_train_samples)))[config.text_column_name]
    with tempfile.TemporaryDirectory(prefix="bioptimus-init-corpus-") as folder:
        sample = Path(folder) / "training_sample.txt"
        sample.write_text("".join(f"{row}\n" for row in rows if row), encoding="utf-8")
        config.init_corpus_files = [str(sample)]
        try:
            yield
        finally:
            config.init_corpus_files = given


def shuffle_buffer_size(data_args: PretrainingDataArguments) -> int:
    """The streaming shuffle buffer: ``--shuffle_buffer_size``, else 0 for a prepared corpus whose rows were written
    in a shuffled order (every training file is such a directory), else the default buffer."""
    if data_args.shuffle_buffer_size is not None:
        return data_args.shuffle_buffer_size
    files = list(data_args.train_file or [])
    prepared = bool(files) and all(is_prepared_corpus_dir(f) for f in files)
    if prepared and all(read_manifest(f)["settings"].get("shuffle_rows") for f in files):
        return 0
    return DEFAULT_SHUFFLE_BUFFER_SIZE


def check_pretraining_data(data_args: PretrainingDataArguments) -> CorpusReadStats | None:
    """Before any model is loaded: a corpus is given, files exist, are of one kind and hold text."""
    if data_args.dataset_name is None and not data_args.train_file:
        raise CorpusFileError("give a corpus: --train_file FILE [FILE ...] or --dataset_name NAME")
    if not data_args.train_file:
        return None
    files = corpus_files(
        list(data_args.train_file) + ([data_args.validation_file] if data_args.validation_file else [])
    )
    builder = corpus_builder(files, "--train_file/--validation_file")
    if builder != "text":
        for file in files:
            path = Path(file)
            if not path.is_file():
                raise FileNotFoundError(f"corpus file {file} does not exist")
            if path.stat().st_size == 0:
                raise CorpusFileError(f"corpus file {file} is empty")
            _check_text_column(path, builder, data_args.text_column_name)
        return None
    return check_corpus_files(
        files,
        max_undecodable_fraction=data_args.max_undecodable_fraction,
        max_check_bytes=STREAMING_CHECK_BYTES if data_args.streaming else None,
    )


def _check_text_column(path: Path, builder: str, column: str) -> None:
    """The first record of a JSON-lines or CSV file, or a Parquet file's schema, has the text column (read before
    any model is loaded)."""
    import csv
    import json

    if builder == "parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        try:
            columns = pq.read_schema(path).names
        except (pa.ArrowException, OSError) as error:
            raise CorpusFileError(f"corpus file {path}: not a readable Parquet file ({error})") from None
        if column not in columns:
            raise CorpusFileError(f"--text_column_name {column!r} not in the columns of {path}: {columns}")
        return
    with open(path, encoding="utf-8", errors="replace", newline="") as handle:
        if builder == "csv":
            columns = next(csv.reader(handle), [])
        else:
            first = next((line for line in handle if line.strip()), "")
            try:
                record = json.loads(first)
            except json.JSONDecodeError:
                return  # a JSON document rather than JSON lines: `datasets` will read (or refuse) it
            columns = list(record) if isinstance(record, dict) else []
    if columns and column not in columns:
        raise CorpusFileError(f"--text_column_name {column!r} not in the columns of {path}: {columns}")


@dataclass
class PretrainingDatasets:
    train: Any
    eval: Any | None
    max_seq_length: int
    streaming: bool = False  # ``IterableDataset``s, read lazily (``--streaming``)


def _column_names(split: Any, default: str) -> list[str]:
    # Streaming datasets may not know their columns until read.
    return split.column_names or list(split.features or {}) or [default]


def load_raw_corpus(data_args: PretrainingDataArguments, cache_dir: str | None, seed: int):
    """`datasets` splits ``train`` and (when held out) ``validation`` of the raw corpus."""
    from datasets import load_dataset

    if data_args.dataset_name is not None:
        raw = load_dataset(
            data_args.dataset_name, data_args.dataset_config_name, cache_dir=cache_dir, streaming=data_args.streaming
        )
    else:
        train_files = corpus_files(data_args.train_file)
        if data_args.streaming and shuffle_buffer_size(data_args) == 0:
            # No buffer: the files (a prepared corpus's shards) are read in an order drawn from the seed.
            train_files = [train_files[i] for i in np.random.default_rng(seed).permutation(len(train_files))]
        data_files = {"train": train_files}
        if data_args.validation_file:
            data_files["validation"] = corpus_files([data_args.validation_file])
        builder = corpus_builder(train_files + data_files.get("validation", []))
        kwargs = {"encoding_errors": "replace"} if builder == "text" else {}
        raw = load_dataset(
            builder, data_files=data_files, cache_dir=cache_dir, streaming=data_args.streaming, **kwargs
        )
    if "validation" not in raw and data_args.validation_split_percentage > 0:
        if data_args.streaming:
            held_out = data_args.max_eval_samples or 1000
            raw["validation"] = raw["train"].take(held_out)
            raw["train"] = raw["train"].skip(held_out)
        else:
            rows = len(raw["train"])
            # As datasets' train_test_split rounds a fractional test size: up.
            held_out = math.ceil(rows * data_args.validation_split_percentage / 100)
            if held_out < 1 or rows - held_out < 1:
                logger.warning(
                    "the corpus has %d row(s): too few to hold out %g%% for evaluation; training without a held-out "
                    "set (give --validation_file or a larger corpus)",
                    rows,
                    data_args.validation_split_percentage,
                )
            else:
                split = raw["train"].train_test_split(test_size=held_out, seed=seed)
                raw["train"], raw["validation"] = split["train"], split["test"]
    column = data_args.text_column_name
    if column not in _column_names(raw["train"], column):
        raise ValueError(
            f"--text_column_name {column!r} not in the dataset columns {_column_names(raw['train'], column)}"
        )
    return raw


def load_pretraining_datasets(
    data_args: PretrainingDataArguments,
    tokenizer,
    training_args,
    cache_dir: str | None = None,
    model_max_tokens: int | None = None,
) -> PretrainingDatasets:
    """Tokenized, packed (or line-by-line) train and held-out datasets of the corpus ``data_args`` name: the raw
    corpus (:func:`load_raw_corpus`), then :func:`prepare_pretraining_datasets`."""
    raw = load_raw_corpus(data_args, cache_dir, training_args.seed)
    return prepare_pretraining_datasets(
        raw["train"], raw.get("validation"), tokenizer, data_args, training_args, model_max_tokens=model_max_tokens
    )


def is_tokenized(split: Any) -> bool:
    """Whether a split already holds what the curriculum collator reads (``input_ids`` with ``word_ids``)."""
    columns = _column_names(split, "")
    return "input_ids" in columns and "word_ids" in columns


def prepare_pretraining_datasets(
    train: Any,
    held_out: Any | None,
    tokenizer,
    data_args: Any,
    training_args: Any,
    model_max_tokens: int | None = None,
) -> PretrainingDatasets:
    """Raw text splits with a ``--text_column_name`` column tokenized with word ids and packed into blocks (or line
    by line), as ``run_mlm.py`` does: ``datasets.map`` with caching, or lazily for an ``IterableDataset``. A split
    already tokenized (:func:`is_tokenized`) is kept; ``model_max_tokens`` and the tokenizer cap
    ``--max_seq_length``."""
    from datasets import IterableDataset

    limits = [x for x in (tokenizer.model_max_length, model_max_tokens) if x]
    max_seq_length = min([data_args.max_seq_length or min(limits), *limits])
    streaming = isinstance(train, IterableDataset)
    text_column = data_args.text_column_name
    if not is_tokenized(train) and text_column not in _column_names(train, text_column):
        raise ValueError(
            f"--text_column_name {text_column!r} not in the dataset columns {_column_names(train, text_column)}"
        )
    tokenized = {}
    with training_args.main_process_first(desc="tokenizing the corpus"):
        for split_name, split in (("train", train), ("validation", held_out)):
            if split is not None:
                tokenized[split_name] = _tokenize_split(
                    split, split_name, tokenizer, data_args, max_seq_length, streaming
                )
    train, held_out = tokenized["train"], tokenized.get("validation")
    if streaming:
        buffer = shuffle_buffer_size(data_args)
        if buffer:
            train = train.shuffle(seed=training_args.seed, buffer_size=buffer)
        if data_args.max_eval_samples and held_out is not None:
            held_out = held_out.take(data_args.max_eval_samples)
    else:
        train, held_out = _limit_samples(train, held_out, data_args, max_seq_length)
    return PretrainingDatasets(train, held_out, max_seq_length, streaming)


def _tokenize_split(split: Any, split_name: str, tokenizer, data_args: Any, max_seq_length: int, streaming: bool):
    """One split tokenized with word ids, then packed into ``max_seq_length``-token blocks (or kept line by line,
    long lines chunked); a split already tokenized is returned as it is."""
    if is_tokenized(split):
        return split
    text_column, line_by_line = data_args.text_column_name, data_args.line_by_line

    def map_kwargs(desc: str) -> dict:  # an IterableDataset maps lazily, with none of these
        if streaming:
            return {}
        workers, cached = data_args.preprocessing_num_workers, not data_args.overwrite_cache
        return {"num_proc": workers, "load_from_cache_file": cached, "desc": desc}

    tokenize = partial(
        tokenize_with_word_ids,
        tokenizer=tokenizer,
        text_column=text_column,
        max_length=max_seq_length,
        line_by_line=line_by_line,
    )
    columns = _column_names(split, text_column)
    ds = split.map(tokenize, batched=True, remove_columns=columns, **map_kwargs(f"tokenizing {split_name}"))
    if not line_by_line:
        pack = partial(group_texts, block_size=max_seq_length)
        packing = map_kwargs(f"packing {split_name} into {max_seq_length}-token blocks")
        return ds.remove_columns(["chunk"]).map(pack, batched=True, **packing)
    if not streaming:
        chunks = ds["chunk"]
        extra = sum(1 for c in chunks if c > 0)
        if extra:
            logger.warning(
                "%s: %d line(s) longer than %d tokens were chunked into %d extra sequence(s) (not truncated)",
                split_name,
                sum(1 for c in chunks if c == 1),
                max_seq_length,
                extra,
            )
    return ds.remove_columns(["chunk"])


def _limit_samples(train: Any, held_out: Any | None, data_args: Any, max_seq_length: int) -> tuple[Any, Any | None]:
    """``--max_train_samples``/``--max_eval_samples`` applied to map-style splits; an empty training split refused,
    an empty held-out one dropped."""
    if len(train) == 0:
        raise ValueError(
            f"no training sequence: the corpus is shorter than one {max_seq_length}-token block "
            "(use --line_by_line or a smaller --max_seq_length)"
        )
    if data_args.max_train_samples is not None:
        train = train.select(range(min(len(train), data_args.max_train_samples)))
    if held_out is not None and data_args.max_eval_samples is not None:
        held_out = held_out.select(range(min(len(held_out), data_args.max_eval_samples)))
    if held_out is not None and len(held_out) == 0:
        held_out = None
    return train, held_out
