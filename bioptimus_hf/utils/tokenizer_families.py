"""The tokenizer families the pipeline supports (WordPiece, byte-level BPE, SentencePiece Unigram and BPE), told
apart by their ``tokenizer.json`` pipeline: the one owner of the list (:data:`TOKENIZER_FAMILIES`), of how a
tokenizer is assigned to a family (:func:`tokenizer_family`, which refuses anything else with the reason), of each
family's trainer options, and of how pre-split words are fed to a tokenizer (:func:`tokenizer_for_words`).
docs/vocabulary_and_init.md ("Tokenizer families") says what differs per family. Needs neither torch nor
transformers to import.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from .tokenizer_loader import resolve_backend_tokenizer


class UnsupportedTokenizerFamily(ValueError):
    """A fast tokenizer of none of the supported families (the message says what it is and what to do)."""


@dataclass(frozen=True)
class TokenizerFamily:
    name: str
    model_type: str  # the tokenizers model: WordPiece, BPE, Unigram
    word_start: str  # how a vocabulary entry marks a word start (for messages, reports and docs)
    examples: str
    # tokenizers trainer options this family's trainer has, with the defaults used when none is given
    trainer_defaults: dict[str, Any] = field(default_factory=dict)
    # options the trainer lacks or ignores for this family, and why (a given value is refused with the reason)
    trainer_options_not_applicable: dict[str, str] = field(default_factory=dict)
    # symbols always in the vocabulary whatever the corpus (byte-level BPE's 256 bytes)
    fixed_alphabet_size: int = 0

    @property
    def marks_continuations(self) -> bool:
        """Whether continuation pieces carry the marker (WordPiece's "##") rather than word starts."""
        return self.model_type == "WordPiece"


_NO_CHARACTER_LIMIT = (
    "the Unigram trainer keeps every character of the corpus (a vocabulary smaller than the "
    "alphabet plus the special tokens is refused)"
)
TOKENIZER_FAMILIES: dict[str, TokenizerFamily] = {
    family.name: family
    for family in (
        TokenizerFamily(
            "wordpiece",
            "WordPiece",
            'word-initial pieces plain, continuation pieces "##"',
            "BERT, PubMedBERT, BioBERT, MiniLM",
            # tokenizers.BertWordPieceTokenizer's defaults
            trainer_defaults={"min_frequency": 2, "limit_alphabet": 1000},
        ),
        TokenizerFamily(
            "byte_level_bpe",
            "BPE",
            '"Ġ" (the space byte) starts a word that follows a space; no marker is a '
            "continuation or the first word of a text",
            "RoBERTa, BioMed-RoBERTa, ModernBERT, GPT-2",
            trainer_defaults={"min_frequency": 2},  # tokenizers.ByteLevelBPETokenizer's default
            trainer_options_not_applicable={
                "limit_alphabet": "the alphabet of byte-level BPE is the 256 byte symbols, all always kept",
            },
            fixed_alphabet_size=256,
        ),
        TokenizerFamily(
            "sentencepiece_unigram",
            "Unigram",
            '"▁" starts a word; no marker is a continuation',
            "XLM-R, DeBERTa-v3, ALBERT",
            trainer_options_not_applicable={
                "min_frequency": "the Unigram trainer prunes a seed vocabulary by corpus likelihood; it has no "
                "pair-frequency threshold",
                "limit_alphabet": _NO_CHARACTER_LIMIT,
            },
        ),
        TokenizerFamily(
            "sentencepiece_bpe",
            "BPE",
            '"▁" starts a word; no marker is a continuation',
            "SentencePiece BPE models",
            trainer_defaults={"min_frequency": 2, "limit_alphabet": 1000},
        ),
    )
}


def _pre_tokenizer_types(pre_tokenizer: dict | None) -> list[str]:
    if pre_tokenizer is None:
        return []
    if pre_tokenizer.get("type") == "Sequence":
        return [t for inner in pre_tokenizer.get("pretokenizers", []) for t in _pre_tokenizer_types(inner)]
    return [pre_tokenizer.get("type")]


def _describe(tokenizer: Any) -> str:
    return repr(getattr(tokenizer, "name_or_path", None) or type(tokenizer).__name__)


def tokenizer_family(tokenizer: Any) -> TokenizerFamily:
    """The family of a fast tokenizer (or ``tokenizers.Tokenizer`` or directory); UnsupportedTokenizerFamily
    with the reason for anything else."""
    pipeline = json.loads(resolve_backend_tokenizer(tokenizer).to_str())
    model = pipeline["model"]
    model_type = model.get("type")
    pre_tokenizers = _pre_tokenizer_types(pipeline.get("pre_tokenizer"))
    name = None
    if model_type == "WordPiece":
        name = "wordpiece"
    elif model_type == "BPE" and "ByteLevel" in pre_tokenizers:
        name = "byte_level_bpe"
    elif model_type in ("BPE", "Unigram") and "Metaspace" in pre_tokenizers:
        name = "sentencepiece_bpe" if model_type == "BPE" else "sentencepiece_unigram"
    markers = {k: model.get(k) for k in ("continuing_subword_prefix", "end_of_word_suffix") if model.get(k)}
    if name in ("byte_level_bpe", "sentencepiece_bpe") and markers:
        name = None  # a BPE that marks continuations or word ends as well: no base of ours does this
    if name is None:
        supported = "; ".join(f"{f.name} ({f.model_type}: {f.word_start})" for f in TOKENIZER_FAMILIES.values())
        raise UnsupportedTokenizerFamily(
            f"tokenizer {_describe(tokenizer)} is a {model_type} model with pre-tokenizer {pre_tokenizers or 'none'}"
            f"{' and ' + str(markers) if markers else ''}: none of the tokenizer families the recipe knows how to "
            f"train and to decompose into word-initial and continuation pieces ({supported})"
        )
    return TOKENIZER_FAMILIES[name]


def check_trainer_options(family: TokenizerFamily, options: dict[str, Any]) -> dict[str, Any]:
    """The trainer options for ``family``: the given ones (``None`` = not given) over the family's defaults.

    An option the family's trainer lacks is refused with the reason (``--min_frequency`` with a Unigram base)."""
    for option, value in options.items():
        if value is not None and option in family.trainer_options_not_applicable:
            raise ValueError(
                f"--{option} does not apply to a {family.name} base: {family.trainer_options_not_applicable[option]}. "
                f"Leave --{option} out"
            )
    chosen = dict(family.trainer_defaults)
    chosen.update({k: v for k, v in options.items() if v is not None})
    return chosen


def tokenizer_for_words(tokenizer):
    """``tokenizer`` set up for pre-split words (``is_split_into_words=True``, as NER data comes), in place: each
    word tokenized as a word of running text. Byte-level BPE marks a word after a space with "Ġ": without a prefix
    space every word would read as a text's first word. ``add_prefix_space=True`` is honoured by some tokenizer
    classes only, so the ByteLevel pre-tokenizer's own flag is set; WordPiece and SentencePiece (which prepends "▁"
    to every word) are returned unchanged."""
    backend = resolve_backend_tokenizer(tokenizer)
    if "ByteLevel" not in _pre_tokenizer_types(json.loads(backend.to_str()).get("pre_tokenizer")):
        return tokenizer
    from tokenizers import pre_tokenizers

    def set_prefix_space(pre_tokenizer):
        if isinstance(pre_tokenizer, pre_tokenizers.ByteLevel):
            pre_tokenizer.add_prefix_space = True
        elif isinstance(pre_tokenizer, pre_tokenizers.Sequence):
            for index in range(len(json.loads(pre_tokenizer.__getstate__())["pretokenizers"])):
                set_prefix_space(pre_tokenizer[index])

    set_prefix_space(backend.pre_tokenizer)
    if hasattr(tokenizer, "add_prefix_space"):
        tokenizer.add_prefix_space = True
    return tokenizer
