"""Shared fixtures: a tiny WordPiece tokenizer trained on real corpus lines and a tiny random BERT."""

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

DATA_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "data"
CORPUS = DATA_DIR / "corpus" / "pubmed_sentences.txt"


def corpus_lines(n: int, start: int = 0) -> list[str]:
    lines = []
    with open(CORPUS, encoding="utf-8") as handle:
        for i, line in enumerate(handle):
            if i >= start + n:
                break
            if i >= start:
                lines.append(line.rstrip("\n"))
    return lines


@pytest.fixture(scope="session")
def tiny_tokenizer_dir(tmp_path_factory):
    from tokenizers import BertWordPieceTokenizer
    from transformers import BertTokenizerFast

    out = tmp_path_factory.mktemp("tiny_tokenizer")
    trainer_tok = BertWordPieceTokenizer(lowercase=True)
    trainer_tok.train_from_iterator(corpus_lines(3000), vocab_size=600, min_frequency=2)
    trainer_tok.save_model(str(out))
    tokenizer = BertTokenizerFast(vocab=str(out / "vocab.txt"), do_lower_case=True, model_max_length=128)
    tokenizer.save_pretrained(out)
    return out


@pytest.fixture(scope="session")
def tiny_tokenizer(tiny_tokenizer_dir):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_tokenizer_dir)


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory, tiny_tokenizer):
    import torch
    from transformers import BertConfig, BertForMaskedLM

    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=len(tiny_tokenizer),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=128,
        pad_token_id=tiny_tokenizer.pad_token_id,
    )
    out = tmp_path_factory.mktemp("tiny_bert")
    BertForMaskedLM(config).save_pretrained(out)
    tiny_tokenizer.save_pretrained(out)
    return out
