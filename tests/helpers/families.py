"""Tiny bases of every tokenizer family, built in code from real corpus lines (nothing is downloaded).

Each base is a directory holding a tokenizer trained here the way its family's models were made, and a tiny
random masked LM of the architecture that family is used with:

==================  =====================================================================  ======================
base                tokenizer (as the released models' tokenizer.json)                      model
==================  =====================================================================  ======================
``bert``            WordPiece, uncased BERT pipeline (``BertTokenizer``)                    ``BertForMaskedLM``
``roberta``         byte-level BPE, RoBERTa pipeline (``RobertaTokenizer``: trimmed        ``RobertaForMaskedLM``
                    offsets, ``<s> … </s>``, positions from pad id + 1)
``modernbert``      byte-level BPE, NFC normaliser, ``[CLS] … [SEP]`` template, untrimmed   ``ModernBertForMaskedLM``
                    offsets (as ModernBERT's ``PreTrainedTokenizerFast``)
``deberta``         SentencePiece Unigram (``DebertaV2Tokenizer``: Metaspace, NFC/strip     ``DebertaV2ForMaskedLM``
                    normaliser, ``[CLS] … [SEP]``)
``sentencepiece_bpe``  BPE under Metaspace (``▁`` word starts), ``<s> … </s>``              ``XLMRobertaForMaskedLM``
==================  =====================================================================  ======================

Models: hidden size 32, 2 layers, vocabulary of a few hundred entries.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from tokenizers import (
    ByteLevelBPETokenizer,
    SentencePieceBPETokenizer,
    SentencePieceUnigramTokenizer,
    normalizers,
    processors,
)
from transformers import (
    AutoTokenizer,
    BertConfig,
    BertForMaskedLM,
    BertTokenizer,
    DebertaV2Config,
    DebertaV2ForMaskedLM,
    DebertaV2Tokenizer,
    ModernBertConfig,
    ModernBertForMaskedLM,
    PreTrainedTokenizerFast,
    RobertaConfig,
    RobertaForMaskedLM,
    RobertaTokenizer,
    XLMRobertaConfig,
    XLMRobertaForMaskedLM,
)

from helpers import corpus_lines
from helpers import write_corpus as write_corpus_lines


BASES = ("bert", "roberta", "modernbert", "deberta", "sentencepiece_bpe")
FAMILY_OF_BASE = {
    "bert": "wordpiece",
    "roberta": "byte_level_bpe",
    "modernbert": "byte_level_bpe",
    "deberta": "sentencepiece_unigram",
    "sentencepiece_bpe": "sentencepiece_bpe",
}
MAX_TOKENS = 64  # model_max_length; learnt positions hold it (RoBERTa-family: + pad id + 1, as released models)
BASE_VOCAB_SIZE = 420
BASE_LINES = 800  # the bases learn their vocabulary from the first lines; the tests' corpora come later


def _tiny(**extra):
    return dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64, **extra)


def _bert_tokenizer(lines):
    from tokenizers import BertWordPieceTokenizer

    trainer = BertWordPieceTokenizer(lowercase=True)
    trainer.train_from_iterator(lines, vocab_size=BASE_VOCAB_SIZE, min_frequency=2, show_progress=False)
    return BertTokenizer(vocab=trainer.get_vocab(), do_lower_case=True, model_max_length=MAX_TOKENS)


def _roberta_tokenizer(lines):
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(
        lines,
        vocab_size=BASE_VOCAB_SIZE,
        special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"],
        show_progress=False,
    )
    merges = [tuple(m) for m in json.loads(bpe._tokenizer.to_str())["model"]["merges"]]
    return RobertaTokenizer(vocab=bpe.get_vocab(), merges=merges, model_max_length=MAX_TOKENS)


def _modernbert_tokenizer(lines):
    bpe = ByteLevelBPETokenizer()
    specials = ["[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]"]
    bpe.train_from_iterator(lines, vocab_size=BASE_VOCAB_SIZE, special_tokens=specials, show_progress=False)
    backend = bpe._tokenizer
    backend.normalizer = normalizers.NFC()
    cls, sep = backend.token_to_id("[CLS]"), backend.token_to_id("[SEP]")
    backend.post_processor = processors.TemplateProcessing(
        single="[CLS]:0 $A:0 [SEP]:0",
        pair="[CLS]:0 $A:0 [SEP]:0 $B:0 [SEP]:0",
        special_tokens=[("[CLS]", cls), ("[SEP]", sep)],
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=backend,
        unk_token="[UNK]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        pad_token="[PAD]",
        mask_token="[MASK]",
        model_max_length=MAX_TOKENS,
    )


def _deberta_tokenizer(lines):
    unigram = SentencePieceUnigramTokenizer()
    unigram.train_from_iterator(
        lines,
        vocab_size=BASE_VOCAB_SIZE,
        unk_token="[UNK]",
        show_progress=False,
        special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"],
    )
    vocab = [tuple(entry) for entry in json.loads(unigram._tokenizer.to_str())["model"]["vocab"]]
    return DebertaV2Tokenizer(vocab=vocab, model_max_length=MAX_TOKENS)


def _sentencepiece_bpe_tokenizer(lines):
    bpe = SentencePieceBPETokenizer(unk_token="<unk>")
    specials = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
    bpe.train_from_iterator(
        lines, vocab_size=BASE_VOCAB_SIZE, special_tokens=specials, limit_alphabet=200, show_progress=False
    )
    backend = bpe._tokenizer
    backend.post_processor = processors.TemplateProcessing(
        single="<s>:0 $A:0 </s>:0",
        pair="<s>:0 $A:0 </s>:0 </s>:0 $B:0 </s>:0",
        special_tokens=[("<s>", backend.token_to_id("<s>")), ("</s>", backend.token_to_id("</s>"))],
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=backend,
        bos_token="<s>",
        eos_token="</s>",
        cls_token="<s>",
        sep_token="</s>",
        unk_token="<unk>",
        pad_token="<pad>",
        mask_token="<mask>",
        model_max_length=MAX_TOKENS,
    )


def _model(base: str, tokenizer):
    size, pad = len(tokenizer), tokenizer.pad_token_id
    if base == "bert":
        return BertForMaskedLM(
            BertConfig(vocab_size=size, max_position_embeddings=MAX_TOKENS, pad_token_id=pad, **_tiny())
        )
    if base == "roberta":
        return RobertaForMaskedLM(
            RobertaConfig(
                vocab_size=size,
                max_position_embeddings=MAX_TOKENS + pad + 1,
                pad_token_id=pad,
                bos_token_id=tokenizer.cls_token_id,
                eos_token_id=tokenizer.sep_token_id,
                **_tiny(),
            )
        )
    if base == "modernbert":
        return ModernBertForMaskedLM(
            ModernBertConfig(
                vocab_size=size,
                max_position_embeddings=MAX_TOKENS,
                pad_token_id=pad,
                cls_token_id=tokenizer.cls_token_id,
                sep_token_id=tokenizer.sep_token_id,
                bos_token_id=tokenizer.cls_token_id,
                eos_token_id=tokenizer.sep_token_id,
                global_attn_every_n_layers=2,
                local_attention=16,
                **_tiny(),
            )
        )
    if base == "deberta":
        return DebertaV2ForMaskedLM(
            DebertaV2Config(  # DeBERTa-v3's attention: relative positions, no absolute ones
                vocab_size=size,
                max_position_embeddings=MAX_TOKENS,
                pad_token_id=pad,
                relative_attention=True,
                position_buckets=16,
                pos_att_type=["p2c", "c2p"],
                position_biased_input=False,
                norm_rel_ebd="layer_norm",
                share_att_key=True,
                **_tiny(),
            )
        )
    if base == "sentencepiece_bpe":
        return XLMRobertaForMaskedLM(
            XLMRobertaConfig(
                vocab_size=size, max_position_embeddings=MAX_TOKENS + pad + 1, pad_token_id=pad, **_tiny()
            )
        )
    raise ValueError(base)


_TOKENIZERS = {
    "bert": _bert_tokenizer,
    "roberta": _roberta_tokenizer,
    "modernbert": _modernbert_tokenizer,
    "deberta": _deberta_tokenizer,
    "sentencepiece_bpe": _sentencepiece_bpe_tokenizer,
}


def build_base(base: str, directory: Path) -> Path:
    """Save a tiny base (tokenizer + random masked LM, seeded) of kind ``base`` to ``directory``."""
    tokenizer = _TOKENIZERS[base](corpus_lines(BASE_LINES))
    tokenizer.save_pretrained(directory)
    tokenizer = AutoTokenizer.from_pretrained(directory)  # the base as every stage will load it
    torch.manual_seed(0)
    model = _model(base, tokenizer)
    with torch.no_grad():  # a non-zero output bias, so that copying and averaging it are visible
        model.get_output_embeddings().bias.copy_(torch.randn(len(tokenizer)))
    model.save_pretrained(directory)
    return Path(directory)


def write_corpus(path: Path, lines: int = 600, start: int = BASE_LINES) -> Path:
    """Corpus lines the bases never saw (the new vocabulary's and the contexts' corpus)."""
    return write_corpus_lines(path, lines, start)
