"""WordPiece vocabulary training on a biomedical corpus, with a coverage report against the base vocabulary.

The new tokenizer keeps everything of the base tokenizer except its vocabulary: normaliser (casing, accent
handling), pre-tokeniser, special tokens and post-processor are inherited through
`PreTrainedTokenizerFast.train_new_from_iterator`, so the vocabulary can be swapped under a base model whose
embeddings are then re-initialised by `bioptimus_hf.embedding_init`.

Function: `train_wordpiece_tokenizer(files, base_tokenizer, vocab_size=30522, ...)`.
CLI: `bioptimus-train-tokenizer --train_files a.txt b.txt --base_tokenizer DIR --output_dir OUT`
(`bioptimus_hf.commands.train_tokenizer`).
"""

from __future__ import annotations

import json
import os
import random
from collections import Counter
from typing import Iterable, Iterator

from transformers import PreTrainedTokenizerBase

from ..utils.corpus_reader import CorpusReadStats, check_corpus_files, iter_text_lines
from ..utils.tokenizer_loader import load_fast_tokenizer

COVERAGE_REPORT_NAME = "coverage_report.json"


def _batched(lines: Iterator[str], batch_size: int = 1000) -> Iterator[list[str]]:
    batch: list[str] = []
    for line in lines:
        batch.append(line)
        if len(batch) == batch_size:
            yield batch
            batch = []
    if batch:
        yield batch


def _load_base_tokenizer(tokenizer: str | PreTrainedTokenizerBase) -> PreTrainedTokenizerBase:
    return load_fast_tokenizer(tokenizer, purpose="vocabulary training (the tokenizer.json pipeline)")


def train_wordpiece_tokenizer(
    files: Iterable[str] | str,
    base_tokenizer: str | PreTrainedTokenizerBase,
    vocab_size: int = 30522,
    min_frequency: int = 2,
    limit_alphabet: int = 1000,
    output_dir: str | None = None,
    show_progress: bool = True,
    stats: CorpusReadStats | None = None,
) -> PreTrainedTokenizerBase:
    """Train a WordPiece vocabulary of `vocab_size` entries on `files` with the base tokenizer's pipeline.

    `min_frequency` and `limit_alphabet` are the `tokenizers` WordPieceTrainer options (the values above
    are those of `tokenizers.BertWordPieceTokenizer`). With `output_dir`, the tokenizer is saved there
    (tokenizer.json, tokenizer_config.json and a vocab.txt in id order) and loads with
    `AutoTokenizer.from_pretrained(output_dir)` as a fast tokenizer.
    """
    base = _load_base_tokenizer(base_tokenizer)
    model_type = json.loads(base.backend_tokenizer.to_str())["model"]["type"]
    if model_type != "WordPiece":
        raise ValueError(f"The base tokenizer {base.name_or_path!r} is a {model_type} tokenizer, not WordPiece.")
    specials = len(base.all_special_tokens)
    if vocab_size <= specials:
        raise ValueError(
            f"--vocab_size {vocab_size} leaves no room for a vocabulary: the base tokenizer alone has {specials} "
            f"special tokens ({', '.join(base.all_special_tokens)})"
        )
    files = check_corpus_files(files, what="tokenizer training corpus").files
    stats = stats if stats is not None else CorpusReadStats()
    new = base.train_new_from_iterator(
        _batched(iter_text_lines(files, stats)),
        vocab_size=vocab_size,
        min_frequency=min_frequency,
        limit_alphabet=limit_alphabet,
        show_progress=show_progress,
    )
    if len(new) > vocab_size:
        # The WordPiece trainer keeps every initial character (up to limit_alphabet) and the special tokens,
        # whatever the requested size: a vocabulary larger than asked for would be mislabelled.
        raise ValueError(
            f"--vocab_size {vocab_size} is smaller than the corpus alphabet plus the {specials} special tokens: the "
            f"trainer returned {len(new)} entries (initial characters are always kept, at most --limit_alphabet "
            f"{limit_alphabet}). Use --vocab_size {len(new)} or more, or a smaller --limit_alphabet"
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
    for i, line in enumerate(iter_text_lines(files)):
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
    base = _load_base_tokenizer(base_tokenizer)
    base_vocab, new_vocab = set(base.get_vocab()), set(new_tokenizer.get_vocab())
    files = [files] if isinstance(files, (str, os.PathLike)) else list(files)
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
