"""Byte-level BPE tokenizers for qik-find's tests, trained here with ``tokenizers`` on real corpus lines (nothing
is downloaded), in the configurations GPT-2, RoBERTa and ``transformers`` give them:

* ``gpt2``: ``ByteLevelBPETokenizer()`` as ``tokenizers`` saves it: no prefix space, a ByteLevel post-processor
  that does not trim offsets, merges as ``["a", "b"]`` pairs, special tokens ``<s> <pad> </s> <unk> <mask>``;
* ``roberta``: as roberta-base's tokenizer.json: ``RobertaProcessing`` that trims offsets, ``<mask>`` with
  ``lstrip`` (it takes the spaces before it);
* ``roberta_wrapped``: what ``RobertaTokenizerFast(tokenizer_object=...)`` makes of a tokenizer trained with
  ``add_prefix_space=True``: the pre-tokenizer prepends a space, the post-processor (``add_prefix_space`` false)
  trims the first word's;
* ``prefix_space``: ``ByteLevelBPETokenizer(add_prefix_space=True, trim_offsets=True)``;
* ``legacy_merges``: ``gpt2`` with merges as ``"a b"`` strings after a ``#version`` line (merges.txt style);
* ``added_words``: ``gpt2`` plus added words matched after the (absent) normaliser, with ``lstrip`` / ``rstrip``;
* ``ignore_merges``: ``gpt2`` with ``ignore_merges`` (a pre-token in the vocabulary is one token).
"""

from __future__ import annotations

import json


BPE_CONFIGS = ["gpt2", "roberta", "roberta_wrapped", "prefix_space", "legacy_merges", "added_words", "ignore_merges"]
SPECIAL_TOKENS = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]

# Trained on too, so that merges join the bytes of non-ASCII characters.
UNICODE_LINES = [
    "Café au lait, naïve façade, résumé: ÉCOLE Normale Über-expression İstanbul ﬁnal Ⅻ ½ ²",
    "中文字符 漢字 日本語のテキスト カタカナ 한국어 텍스트 Ελληνικά κείμενο Русский текст Σ-factor",
    "emoji 😀🧬🔬 👨‍👩‍👧 e\u0301 a\u0308 control\x01\x7f tabs\tand\u3000spaces “quoted” — dash… ٣٤ ۵",
] * 20


def train_byte_level_bpe(lines: list[str], config: str = "gpt2", vocab_size: int = 1200) -> str:
    """The tokenizer.json of a byte-level BPE tokenizer trained on ``lines`` in configuration ``config``."""
    from tokenizers import AddedToken, ByteLevelBPETokenizer, Tokenizer

    if config not in BPE_CONFIGS:
        raise ValueError(config)
    prefix = config in ("roberta_wrapped", "prefix_space")
    trainer = ByteLevelBPETokenizer(add_prefix_space=prefix, trim_offsets=config == "prefix_space")
    trainer.train_from_iterator(
        lines + UNICODE_LINES,
        vocab_size=vocab_size,
        min_frequency=2,
        special_tokens=SPECIAL_TOKENS,
        show_progress=False,
    )
    if config == "roberta_wrapped":
        from transformers import RobertaTokenizerFast

        wrapped = RobertaTokenizerFast(
            tokenizer_object=Tokenizer.from_str(trainer.to_str()),
            bos_token="<s>",
            eos_token="</s>",
            sep_token="</s>",
            cls_token="<s>",
            unk_token="<unk>",
            pad_token="<pad>",
            mask_token="<mask>",
        )
        return wrapped.backend_tokenizer.to_str()
    config_json = json.loads(trainer.to_str())
    model = config_json["model"]
    if config == "roberta":
        config_json["post_processor"] = {
            "type": "RobertaProcessing",
            "sep": ["</s>", 2],
            "cls": ["<s>", 0],
            "trim_offsets": True,
            "add_prefix_space": False,
        }
        for token in config_json["added_tokens"]:
            if token["content"] == "<mask>":
                token["lstrip"] = True
    elif config == "legacy_merges":
        model["merges"] = ["#version: 0.2"] + [f"{a} {b}" for a, b in model["merges"]]
    elif config == "ignore_merges":
        model["ignore_merges"] = True
    elif config == "added_words":
        tokenizer = Tokenizer.from_str(json.dumps(config_json))
        tokenizer.add_tokens(
            [
                AddedToken("protein", normalized=True, lstrip=True, rstrip=True),
                AddedToken("cell line", normalized=True),
                AddedToken("IL-2", normalized=False, rstrip=True),
            ]
        )
        return tokenizer.to_str()
    return json.dumps(config_json)
