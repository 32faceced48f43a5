"""Tiny BERTs, vocabularies and contexts for the new-token initialisation tests, and the float64 reference of a
contextualised row (bioptimus_hf/testing/numerics.py)."""

import copy
from typing import NamedTuple

import torch
from transformers import AutoTokenizer, BertConfig, BertForMaskedLM, BertTokenizer

from bioptimus_hf.pretraining.bioptimus_config import EmbeddingInitArguments
from bioptimus_hf.testing.numerics import recorded_linear_outputs
from bioptimus_hf.vocabulary.embedding_init import ContextualizedEmbeddingInitializer


def init_args(strategy="contextualized", **kwargs):
    return EmbeddingInitArguments(init_strategy=strategy, **kwargs)


LETTERS = "abcdefghijklmnopqrstuvwxyz0123456789"
BASE_VOCAB = (
    ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    + list(LETTERS + "-.,()")
    + ["##" + c for c in LETTERS]
    + ["the", "of", "cell", "cells", "kin", "##ase", "receptor"]
)
# Specials in another order, shared tokens at other ids, and new biomedical tokens.
NEW_VOCAB = (
    ["[PAD]", "[CLS]", "[SEP]", "[MASK]", "[UNK]"]
    + list("abcdefghijklmnopqrstuvwxyz.")
    + ["##" + c for c in "abcdefghijklmnopqrstuvwxyz"]
    + ["the", "cells", "receptor", "kinase", "interleukin", "##kinase", "thymus", "##ase"]
)
NEW_TOKENS = ["kinase", "interleukin", "##kinase", "thymus"]


class Context(NamedTuple):  # the shape of bioptimus_hf.vocabulary.qikfind.Context
    sentence: str
    start: int
    end: int
    sentence_index: int


def ctx(sentence, word, index=0, occurrence=0):
    start = -1
    for _ in range(occurrence + 1):
        start = sentence.index(word, start + 1)
    return Context(sentence, start, start + len(word), index)


def make_tokenizer(vocab, path, **kwargs):
    tokenizer = BertTokenizer(vocab={w: i for i, w in enumerate(vocab)}, **kwargs)
    tokenizer.save_pretrained(str(path))
    return AutoTokenizer.from_pretrained(str(path))


def make_base(tmp_path, tie=True, max_positions=64):
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=len(BASE_VOCAB),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=max_positions,
        tie_word_embeddings=tie,
    )
    model = BertForMaskedLM(config).eval()
    with torch.no_grad():  # a non-zero bias, so copying it is visible
        model.get_output_embeddings().bias.copy_(torch.randn(len(BASE_VOCAB)))
    tokenizer = make_tokenizer(BASE_VOCAB, tmp_path / "base_tok", model_max_length=max_positions)
    return model, tokenizer


def run(model, base_tok, new_tok, strategy, contexts=None, norm_match=False, **kwargs):
    config = init_args(strategy, init_device="cpu", init_norm_match=norm_match, **kwargs)
    initializer = ContextualizedEmbeddingInitializer(model, base_tok, new_tok, config, progress=False)
    out, report = initializer.initialize(contexts=contexts)
    return initializer, out, report


def float64_copy(model):
    """The reference model: exact claims are checked against float64 (bioptimus_hf/testing/numerics.py)."""
    return copy.deepcopy(model).double().eval()


def hand_contextualized(reference, base_tok, context, linear_outputs=None, drop_last_piece=False):
    """Reference: encode [CLS] sentence [SEP] with ``reference`` (a float64 copy of the base), mean the
    last-layer states of the sub-tokens overlapping the span. The root-mean-square outputs of its linear
    layers are appended to ``linear_outputs`` (the bound's contribution scale). ``drop_last_piece``
    computes what the bug of forgetting the span's last sub-token would give."""
    enc = base_tok(context.sentence, return_offsets_mapping=True)
    positions = [
        i for i, (a, b) in enumerate(enc["offset_mapping"]) if b > a and a < context.end and b > context.start
    ]
    if drop_last_piece:
        assert len(positions) > 1, "a one-piece span has no piece to forget"
        positions = positions[:-1]
    with torch.no_grad(), recorded_linear_outputs(reference) as sizes:
        states = reference.bert(input_ids=torch.tensor([enc["input_ids"]])).last_hidden_state[0]
    if linear_outputs is not None:
        linear_outputs.extend(sizes)
    return states[positions].mean(0)


S1 = "the kinase of the thymus cells"
S2 = "interleukin receptor kinase"


def contexts_of(new_tok):
    ids = new_tok.get_vocab()
    return {
        ids["kinase"]: [ctx(S1, "kinase", 0), ctx(S2, "kinase", 1)],
        ids["thymus"]: [ctx(S1, "thymus", 0)],
        ids["interleukin"]: [ctx(S2, "interleukin", 1)],
        ids["##kinase"]: [],  # never found -> averaged fallback
    }
