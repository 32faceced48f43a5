"""Vocabulary training on a corpus for any tokenizer family, with a coverage report (``bioptimus train-tokenizer``).
:func:`train_tokenizer` keeps everything of the base tokenizer but its vocabulary (``train_new_from_iterator``);
:func:`extend_tokenizer` keeps the base vocabulary and appends the domain's tokens (:mod:`.vocabulary_extension`);
``vocab_size="auto"`` grows it in steps until the corpus's tokens per word stop improving."""

from __future__ import annotations

import bisect
import json
import logging
import os
import random
import re
import statistics
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from transformers import PreTrainedTokenizerBase

from ..utils.corpus_reader import CorpusReadStats, check_corpus_files, iter_text_lines
from ..utils.progress import progress_bar
from ..utils.tokenizer_families import (
    TokenizerFamily,
    check_trainer_options,
    tokenizer_family,
)
from ..utils.tokenizer_loader import load_fast_tokenizer
from .tokenizer_config import TokenizerTrainingArguments
from .vocabulary_extension import VocabularyExtension, changed_base_ids


logger = logging.getLogger(__name__)

COVERAGE_REPORT_NAME = "coverage_report.json"
# What a "word" of the coverage report is, the same for every family (written into the report).
COVERAGE_WORDS = (
    "whitespace-separated words of the sampled lines; a token counts for the word its character span "
    "starts in (a leading space or \u2581 counts for the word it marks)"
)
_WORD = re.compile(r"\S+")


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


def _check_vocab_size(vocab_size: int, base: PreTrainedTokenizerBase, family: TokenizerFamily) -> None:
    specials = len(base.all_special_tokens)
    always_kept = specials + family.fixed_alphabet_size
    if vocab_size > always_kept:
        return
    alphabet = (
        f"the {family.fixed_alphabet_size} byte symbols of {family.name} and " if family.fixed_alphabet_size else ""
    )
    raise ValueError(
        f"--vocab_size {vocab_size} leaves no room for a vocabulary: {alphabet}the base tokenizer's {specials} special "
        f"tokens ({', '.join(base.all_special_tokens)}) are always kept. Use --vocab_size {always_kept + 1} or more"
    )


def not_carried_over(base: PreTrainedTokenizerBase, family: TokenizerFamily) -> list[str]:
    """What of the base tokenizer a new vocabulary of its family does not get (said before training starts)."""
    pipeline = json.loads(base.backend_tokenizer.to_str())
    lost = []
    plain_added = [t["content"] for t in pipeline.get("added_tokens", []) if not t.get("special")]
    if plain_added and family.model_type != "Unigram":
        lost.append(
            f"{len(plain_added)} non-special added tokens of the base ({', '.join(map(repr, plain_added[:5]))}"
            f"{', ...' if len(plain_added) > 5 else ''}): transformers' train_new_from_iterator keeps only special "
            "added tokens for WordPiece and BPE bases; the new vocabulary learns such strings or not from the corpus"
        )
    if pipeline["model"].get("byte_fallback"):
        lost.append(
            "byte fallback: the base spells unknown characters with <0x..> byte pieces, which the trainer does not "
            "learn, so characters outside the new vocabulary's alphabet become the unknown token; bring a vocabulary "
            "with byte pieces made elsewhere (--tokenizer_name of bioptimus pretrain) if that matters"
        )
    return lost


def train_tokenizer(
    files: Iterable[str] | str,
    base_tokenizer: str | PreTrainedTokenizerBase,
    vocab_size: int = 30522,
    *,
    min_frequency: int | None = None,
    limit_alphabet: int | None = None,
    output_dir: str | None = None,
    show_progress: bool = True,
    stats: CorpusReadStats | None = None,
) -> PreTrainedTokenizerBase:
    """Train a vocabulary of `vocab_size` entries on `files` with the base tokenizer's pipeline and trainer.

    `min_frequency` and `limit_alphabet` are `tokenizers` trainer options (`None`: the family's default); one the
    family's trainer lacks is refused before the corpus is read. With `output_dir`, the tokenizer is saved there."""
    base = _load_base_tokenizer(base_tokenizer)
    for what in not_carried_over(base, tokenizer_family(base)):
        logger.warning("vocabulary training from %s: not carried over: %s", base.name_or_path, what)
    options = {"min_frequency": min_frequency, "limit_alphabet": limit_alphabet}
    new = _train(base, files, vocab_size, options, show_progress, stats)
    if output_dir is not None:
        save_tokenizer(new, output_dir)
    return new


def _train(base, files, vocab_size: int, options: dict, show_progress: bool, stats) -> PreTrainedTokenizerBase:
    """A vocabulary of the base's family trained on ``files`` (:func:`train_tokenizer` says how)."""
    family = tokenizer_family(base)
    trainer_options = check_trainer_options(family, options)
    _check_vocab_size(vocab_size, base, family)
    checked = check_corpus_files(files, what="tokenizer training corpus")
    stats = stats if stats is not None else CorpusReadStats()
    # The trainer's own bars (show_progress) start once it has read the whole corpus: this one shows the reading.
    reading = progress_bar(
        iter_text_lines(checked.files, stats),
        enabled=show_progress,
        total=checked.nonempty_lines,
        desc="vocabulary training: reading the corpus",
        unit=" lines",
    )
    try:
        new = base.train_new_from_iterator(
            _batched(reading), vocab_size=vocab_size, show_progress=show_progress, **trainer_options
        )
    except Exception as error:  # the Unigram trainer raises a bare Exception for this one
        reading.close()
        if "not large enough to contain all chars" not in str(error):
            raise
        raise ValueError(
            f"--vocab_size {vocab_size} is smaller than the corpus alphabet plus the special tokens: the Unigram "
            "trainer keeps every character it sees. Use a larger --vocab_size"
        ) from None
    if len(new) > vocab_size:
        # The WordPiece and BPE trainers keep every initial character (up to limit_alphabet) and the special
        # tokens, whatever the requested size: a vocabulary larger than asked for would be mislabelled.
        limit = (
            f", at most --limit_alphabet {trainer_options['limit_alphabet']}"
            if "limit_alphabet" in trainer_options
            else ""
        )
        raise ValueError(
            f"--vocab_size {vocab_size} is smaller than the corpus alphabet plus the special tokens: the trainer "
            f"returned {len(new)} entries (initial characters are always kept{limit}). Use --vocab_size {len(new)} or "
            "more" + (", or a smaller --limit_alphabet" if limit else "")
        )
    return new


@dataclass
class Extension:
    """What `extend_tokenizer` made: the extended tokenizer, the candidate vocabulary it drew from, how the
    candidates were ranked, and (``vocab_size="auto"``) each growth step."""

    tokenizer: PreTrainedTokenizerBase
    candidate: PreTrainedTokenizerBase
    added_tokens: int
    usefulness: str
    auto_steps: list[dict] = field(default_factory=list)


def extend_tokenizer(
    args: TokenizerTrainingArguments, *, show_progress: bool = True, stats: CorpusReadStats | None = None
) -> Extension:
    """``args.base_tokenizer`` with domain tokens appended, up to ``args.vocab_size`` entries in all (``bioptimus
    train-tokenizer --vocabulary_mode extend``; the caller saves ``Extension.tokenizer``).

    The candidates come from a vocabulary trained on ``args.train_files``, ranked per family
    (:mod:`bioptimus_hf.vocabulary.vocabulary_extension`). ``vocab_size="auto"`` adds ``args.auto_vocab_step``
    tokens at a time while tokens per word fall by at least ``args.auto_vocab_threshold``, and keeps the last size that
    did."""
    base = _load_base_tokenizer(args.base_tokenizer)
    base_size = len(base)
    auto = args.vocab_size == "auto"
    vocab_size = None if auto else int(args.vocab_size)
    if not auto and vocab_size <= base_size:
        raise ValueError(
            f"--vocab_size {vocab_size} leaves nothing to add to the base's {base_size} entries with "
            f"--vocabulary_mode extend (the total, base included). Use --vocab_size {base_size + 1} or more, or auto"
        )
    candidate_size = args.candidate_vocab_size or (2 * base_size if auto else vocab_size)
    files = check_corpus_files(args.train_files, what="tokenizer training corpus").files
    options = {"min_frequency": args.min_frequency, "limit_alphabet": args.limit_alphabet}
    candidate = _train(base, files, candidate_size, options, show_progress, stats)
    lines = _sample_lines(files, args.coverage_sample_lines, args.seed)
    extension = VocabularyExtension(base, candidate, lines)
    if not len(extension):
        raise ValueError(
            f"the {candidate_size}-entry vocabulary trained on the corpus has nothing the base lacks: "
            "there is no domain token to add (a larger --candidate_vocab_size or corpus)"
        )
    steps: list[dict] = []
    if auto:
        step = args.auto_vocab_step or max(1, base_size // 10)
        added, steps = _grow_in_steps(extension, base, lines, step, args.auto_vocab_threshold)
    else:
        added = min(vocab_size - base_size, len(extension))
        if added < vocab_size - base_size:
            logger.warning(
                "--vocab_size %d: the candidate vocabulary has only %d tokens to add; the extended "
                "vocabulary has %d entries",
                vocab_size,
                added,
                base_size + added,
            )
    return Extension(extension.build(added), candidate, added, extension.usefulness, steps)


def _grow_in_steps(
    extension: VocabularyExtension, base: PreTrainedTokenizerBase, lines: list[str], step: int, threshold: float
) -> tuple[int, list[dict]]:
    """``vocab_size="auto"``: add ``step`` tokens at a time while the sampled lines' tokens per word fall by at
    least ``threshold`` (relative) per step; the tokens to add and every step measured."""
    base_size = len(base)
    added, previous = 0, _tokens_per_word(base, lines)
    steps = [{"added_tokens": 0, "vocab_size": base_size, "tokens_per_word": previous, "improvement": None}]
    while added < len(extension):
        trial = min(added + step, len(extension))
        current = _tokens_per_word(extension.build(trial), lines)
        improvement = (previous - current) / previous if previous else 0.0
        steps.append(
            {
                "added_tokens": trial,
                "vocab_size": base_size + trial,
                "tokens_per_word": current,
                "improvement": improvement,
            }
        )
        logger.info(
            "vocabulary growth: +%d tokens (%d in all): %.4f tokens per word, %.2f%% fewer than the step before",
            trial,
            base_size + trial,
            current,
            100 * improvement,
        )
        if improvement < threshold:
            break
        added, previous = trial, current
    added = added or steps[-1]["added_tokens"]  # even the first step fell short: keep it, said in the report
    return added, steps


def save_tokenizer(tokenizer: PreTrainedTokenizerBase, output_dir: str) -> None:
    """save_pretrained plus a vocab.txt (one token a line, in id order) for tools that read BERT vocab files."""
    os.makedirs(output_dir, exist_ok=True)
    tokenizer.save_pretrained(output_dir)
    id_to_token = {i: t for t, i in tokenizer.get_vocab().items()}
    with open(os.path.join(output_dir, "vocab.txt"), "w", encoding="utf-8") as handle:
        handle.writelines(id_to_token[i] + "\n" for i in range(len(id_to_token)))


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
    """Pieces of every whitespace-separated word of ``lines`` (see COVERAGE_WORDS), from character offsets, so
    that a word means the same for every family whatever its pre-tokeniser splits (punctuation, digits)."""
    counts: list[int] = []
    encoded = tokenizer(lines, add_special_tokens=False, return_offsets_mapping=True, verbose=False)
    for line, offsets in zip(lines, encoded["offset_mapping"]):
        word_ends = [match.end() for match in _WORD.finditer(line)]
        if not word_ends:
            continue
        per_word = [0] * len(word_ends)
        for start, _ in offsets:
            per_word[min(bisect.bisect_right(word_ends, start), len(word_ends) - 1)] += 1
        counts.extend(per_word)
    return counts


def _tokens_per_word(tokenizer: PreTrainedTokenizerBase, lines: list[str]) -> float:
    pieces = _pieces_per_word(tokenizer, lines)
    return sum(pieces) / max(len(pieces), 1)


def vocabulary_measures(tokenizer: PreTrainedTokenizerBase, base: PreTrainedTokenizerBase, lines: list[str]) -> dict:
    """One vocabulary on sampled lines: tokens per word, words split into 3 or more pieces, base entries whose
    string or id changed, and how much shorter a typical line (an abstract, in an abstracts corpus) becomes."""
    pieces = _pieces_per_word(tokenizer, lines)
    per_line = [len(ids) for ids in tokenizer(lines, add_special_tokens=False, verbose=False)["input_ids"]]
    base_per_line = [len(ids) for ids in base(lines, add_special_tokens=False, verbose=False)["input_ids"]]
    shortening = [1 - n / b for n, b in zip(per_line, base_per_line) if b]
    return {
        "vocab_size": len(tokenizer),
        "tokens_per_word": sum(pieces) / max(len(pieces), 1),
        "words_split_3_or_more": sum(n >= 3 for n in pieces),
        "words_split_3_or_more_fraction": sum(n >= 3 for n in pieces) / max(len(pieces), 1),
        "changed_base_ids": changed_base_ids(base, tokenizer),
        "median_line_tokens": statistics.median(per_line) if per_line else None,
        "median_line_shortening_vs_base": statistics.median(shortening) if shortening else None,
    }


def coverage_report(
    new_tokenizer: PreTrainedTokenizerBase,
    base_tokenizer: str | PreTrainedTokenizerBase,
    files: Iterable[str] | str,
    sample_lines: int = 2000,
    seed: int = 0,
    compared: dict[str, PreTrainedTokenizerBase] | None = None,
    heldout_files: Iterable[str] | None = None,
) -> dict:
    """Compare the new vocabulary with the base one: shared and new entries, and on a sample of corpus lines how many
    words the new tokenizer splits into fewer / as many / more pieces than the base, and the pieces per word of
    each (``vocabularies``: the base and each of ``compared``, default ``{"new": new_tokenizer}``; also on
    ``heldout_files``)."""
    base = _load_base_tokenizer(base_tokenizer)
    family, new_family = tokenizer_family(base), tokenizer_family(new_tokenizer)
    if family != new_family:
        raise ValueError(
            f"the new tokenizer is {new_family.name} but the base is {family.name}: shared and new entries compare "
            "vocabularies of one family (train the vocabulary with the base tokenizer's pipeline)"
        )
    base_vocab, new_vocab = set(base.get_vocab()), set(new_tokenizer.get_vocab())
    files = [files] if isinstance(files, (str, os.PathLike)) else list(files)
    lines = _sample_lines(files, sample_lines, seed)
    base_pieces = _pieces_per_word(base, lines)
    new_pieces = _pieces_per_word(new_tokenizer, lines)
    fewer = sum(n < b for b, n in zip(base_pieces, new_pieces))
    more = sum(n > b for b, n in zip(base_pieces, new_pieces))
    words = len(base_pieces)
    vocabularies = {"base": base, **(compared or {"new": new_tokenizer})}
    measured = {"corpus": {name: vocabulary_measures(t, base, lines) for name, t in vocabularies.items()}}
    if heldout_files:
        heldout = _sample_lines(
            check_corpus_files(heldout_files, what="held-out text (--heldout_files)").files, sample_lines, seed
        )
        measured["heldout"] = {name: vocabulary_measures(t, base, heldout) for name, t in vocabularies.items()}
    return {
        "family": family.name,
        "word_start": family.word_start,
        "base_vocab_size": len(base_vocab),
        "new_vocab_size": len(new_vocab),
        "shared_tokens": len(base_vocab & new_vocab),
        "new_tokens": len(new_vocab - base_vocab),
        "sample": {
            "words_are": COVERAGE_WORDS,
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
        "vocabularies": measured,
    }
