"""WordPiece vocabulary training on a biomedical corpus, with a coverage report against the base vocabulary.

The new tokenizer keeps everything of the base tokenizer except its vocabulary: normaliser (casing, accent
handling), pre-tokeniser, special tokens and post-processor are inherited through
`PreTrainedTokenizerFast.train_new_from_iterator`, so the vocabulary can be swapped under a base model whose
embeddings are then re-initialised by `bioptimus_hf.embedding_init`.

Function: `train_wordpiece_tokenizer(files, base_tokenizer, vocab_size=30522, ...)`.
CLI: `python -m bioptimus_hf.tokenizer_training --train_files a.txt b.txt --base_tokenizer DIR --output_dir OUT`.
"""

from __future__ import annotations

import gzip
import json
import os
import random
from collections import Counter
from dataclasses import dataclass, field
from typing import Iterable, Iterator

from transformers import AutoTokenizer, PreTrainedTokenizerBase

from .cli import parse_args

COVERAGE_REPORT_NAME = "coverage_report.json"


@dataclass
class CorpusStats:
    """What reading a corpus saw: bad bytes are replaced (U+FFFD) and counted, never fatal."""

    files: list[str] = field(default_factory=list)
    lines: int = 0
    text_lines: int = 0
    empty_lines: int = 0
    undecodable_lines: int = 0

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def _open_binary(path: str):
    return gzip.open(path, "rb") if path.endswith(".gz") else open(path, "rb")


def check_corpus_files(files: Iterable[str] | str) -> list[str]:
    """Return the files as a list; raise if one is missing or if none holds a non-blank line."""
    files = [files] if isinstance(files, (str, os.PathLike)) else list(files)
    if not files:
        raise ValueError("No corpus files given.")
    for path in files:
        if not os.path.isfile(path):
            raise FileNotFoundError(f"Corpus file not found: {path}")
    for path in files:
        with _open_binary(path) as handle:
            for raw in handle:
                if raw.strip():
                    return [str(f) for f in files]
    raise ValueError(f"Empty corpus: no non-blank line in {', '.join(map(str, files))}")


def iter_corpus_lines(files: Iterable[str] | str, stats: CorpusStats | None = None) -> Iterator[str]:
    """Yield the stripped non-blank lines of plain or gzipped UTF-8 text files.

    A line with undecodable bytes is decoded with replacement characters and counted in
    `stats.undecodable_lines`, so one bad byte does not stop a long run.
    """
    files = [files] if isinstance(files, (str, os.PathLike)) else list(files)
    stats = stats if stats is not None else CorpusStats()
    for path in files:
        stats.files.append(str(path))
        with _open_binary(path) as handle:
            for raw in handle:
                stats.lines += 1
                try:
                    line = raw.decode("utf-8")
                except UnicodeDecodeError:
                    line = raw.decode("utf-8", errors="replace")
                    stats.undecodable_lines += 1
                line = line.strip()
                if not line:
                    stats.empty_lines += 1
                    continue
                stats.text_lines += 1
                yield line


def _batched(lines: Iterator[str], batch_size: int = 1000) -> Iterator[list[str]]:
    batch: list[str] = []
    for line in lines:
        batch.append(line)
        if len(batch) == batch_size:
            yield batch
            batch = []
    if batch:
        yield batch


def _load_tokenizer(tokenizer: str | PreTrainedTokenizerBase) -> PreTrainedTokenizerBase:
    if isinstance(tokenizer, (str, os.PathLike)):
        tokenizer = AutoTokenizer.from_pretrained(tokenizer)
    if not getattr(tokenizer, "is_fast", False):
        raise ValueError(
            f"The base tokenizer {tokenizer.name_or_path!r} is not a fast (Rust `tokenizers`) tokenizer; "
            "vocabulary training needs its tokenizer.json pipeline."
        )
    return tokenizer


def train_wordpiece_tokenizer(
    files: Iterable[str] | str,
    base_tokenizer: str | PreTrainedTokenizerBase,
    vocab_size: int = 30522,
    min_frequency: int = 2,
    limit_alphabet: int = 1000,
    output_dir: str | None = None,
    show_progress: bool = True,
    stats: CorpusStats | None = None,
) -> PreTrainedTokenizerBase:
    """Train a WordPiece vocabulary of `vocab_size` entries on `files` with the base tokenizer's pipeline.

    `min_frequency` and `limit_alphabet` are the `tokenizers` WordPieceTrainer options (the values above
    are those of `tokenizers.BertWordPieceTokenizer`). With `output_dir`, the tokenizer is saved there
    (tokenizer.json, tokenizer_config.json and a vocab.txt in id order) and loads with
    `AutoTokenizer.from_pretrained(output_dir)` as a fast tokenizer.
    """
    base = _load_tokenizer(base_tokenizer)
    model_type = json.loads(base.backend_tokenizer.to_str())["model"]["type"]
    if model_type != "WordPiece":
        raise ValueError(f"The base tokenizer {base.name_or_path!r} is a {model_type} tokenizer, not WordPiece.")
    files = check_corpus_files(files)
    stats = stats if stats is not None else CorpusStats()
    new = base.train_new_from_iterator(
        _batched(iter_corpus_lines(files, stats)),
        vocab_size=vocab_size,
        min_frequency=min_frequency,
        limit_alphabet=limit_alphabet,
        show_progress=show_progress,
    )
    if output_dir is not None:
        save_tokenizer(new, output_dir)
    return new


def save_tokenizer(tokenizer: PreTrainedTokenizerBase, output_dir: str) -> None:
    """save_pretrained plus a vocab.txt (one token a line, in id order) for tools that read BERT vocab files."""
    os.makedirs(output_dir, exist_ok=True)
    tokenizer.save_pretrained(output_dir)
    id_to_token = {i: t for t, i in tokenizer.get_vocab().items()}
    with open(os.path.join(output_dir, "vocab.txt"), "w", encoding="utf-8") as handle:
        for i in range(len(id_to_token)):
            handle.write(id_to_token[i] + "\n")


def _sample_lines(files: list[str], num_lines: int, seed: int) -> list[str]:
    """Uniform sample of `num_lines` corpus lines (reservoir sampling, so one pass and bounded memory)."""
    rng = random.Random(seed)
    sample: list[str] = []
    for i, line in enumerate(iter_corpus_lines(files)):
        if i < num_lines:
            sample.append(line)
        else:
            j = rng.randint(0, i)
            if j < num_lines:
                sample[j] = line
    return sample


def _pieces_per_word(tokenizer: PreTrainedTokenizerBase, lines: list[str]) -> list[int]:
    counts: list[int] = []
    encoded = tokenizer(lines, add_special_tokens=False, verbose=False)
    for i in range(len(lines)):
        per_word = Counter(w for w in encoded.word_ids(i) if w is not None)
        counts.extend(per_word[w] for w in sorted(per_word))
    return counts


def coverage_report(
    new_tokenizer: PreTrainedTokenizerBase,
    base_tokenizer: str | PreTrainedTokenizerBase,
    files: Iterable[str] | str,
    sample_lines: int = 2000,
    seed: int = 0,
) -> dict:
    """Compare the new vocabulary with the base one: shared and new entries, and on a sample of corpus
    lines how many words (pre-tokenised words, occurrences) the new tokenizer splits into fewer / as
    many / more pieces than the base tokenizer."""
    base = _load_tokenizer(base_tokenizer)
    base_vocab, new_vocab = set(base.get_vocab()), set(new_tokenizer.get_vocab())
    files = check_corpus_files(files)
    lines = _sample_lines(files, sample_lines, seed)
    base_pieces = _pieces_per_word(base, lines)
    new_pieces = _pieces_per_word(new_tokenizer, lines)
    if len(base_pieces) != len(new_pieces):
        raise ValueError(
            "The two tokenizers pre-tokenise the sample into different words "
            f"({len(base_pieces)} vs {len(new_pieces)}); they must share normalisation and pre-tokenisation."
        )
    fewer = sum(n < b for b, n in zip(base_pieces, new_pieces))
    more = sum(n > b for b, n in zip(base_pieces, new_pieces))
    words = len(base_pieces)
    return {
        "base_vocab_size": len(base_vocab),
        "new_vocab_size": len(new_vocab),
        "shared_tokens": len(base_vocab & new_vocab),
        "new_tokens": len(new_vocab - base_vocab),
        "sample": {
            "lines": len(lines),
            "words": words,
            "new_splits_fewer": fewer,
            "new_splits_equal": words - fewer - more,
            "new_splits_more": more,
            "base_pieces_per_word": sum(base_pieces) / max(words, 1),
            "new_pieces_per_word": sum(new_pieces) / max(words, 1),
            "base_words_split": sum(b > 1 for b in base_pieces),
            "new_words_split": sum(n > 1 for n in new_pieces),
        },
    }


@dataclass
class TokenizerTrainingArguments:
    train_files: list[str] = field(metadata={"help": "Corpus text files (one sentence or document a line; .gz ok)."})
    base_tokenizer: str = field(metadata={"help": "Base tokenizer (path or Hub id) whose pipeline is kept."})
    output_dir: str = field(metadata={"help": "Where the tokenizer and coverage_report.json are written."})
    vocab_size: int = field(default=30522, metadata={"help": "Vocabulary size, special tokens included."})
    min_frequency: int = field(default=2, metadata={"help": "Minimum pair frequency for a WordPiece merge."})
    limit_alphabet: int = field(default=1000, metadata={"help": "Maximum number of initial characters kept."})
    coverage_sample_lines: int = field(default=2000, metadata={"help": "Corpus lines sampled for the report."})
    seed: int = field(default=0, metadata={"help": "Seed of the coverage sample."})


def run(argv: list[str] | None = None) -> dict:
    """Parse the command line, do the work, return the report (what `main` runs)."""
    (args,) = parse_args((TokenizerTrainingArguments,), argv)
    stats = CorpusStats()
    tokenizer = train_wordpiece_tokenizer(
        args.train_files,
        args.base_tokenizer,
        vocab_size=args.vocab_size,
        min_frequency=args.min_frequency,
        limit_alphabet=args.limit_alphabet,
        output_dir=args.output_dir,
        stats=stats,
    )
    report = coverage_report(tokenizer, args.base_tokenizer, args.train_files, args.coverage_sample_lines, args.seed)
    report["corpus"] = stats.to_dict()
    report["requested_vocab_size"] = args.vocab_size
    with open(os.path.join(args.output_dir, COVERAGE_REPORT_NAME), "w", encoding="utf-8") as handle:
        json.dump(report, handle, indent=2)
    print(json.dumps(report, indent=2))
    return report


def main(argv: list[str] | None = None) -> None:
    """Console entry point (returns None so that the exit status is 0)."""
    run(argv)


if __name__ == "__main__":
    main()
